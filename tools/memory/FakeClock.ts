import type { Clock } from '../../lib/ports/Clock';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/** Lets every promise chain that is ready run to completion before virtual time moves on. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock on virtual time. `sleep` parks the caller until the clock is advanced past its deadline; timers due
 * at the same instant wake in the order they were set, so runs are deterministic.
 *
 * Advancing first lets all ready promise chains finish (one macrotask turn drains the microtask queue), then
 * fires due timers one by one, settling after each, so code woken by a timer may set new timers that also
 * fire within the same advance.
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: Timer[] = [];
  private seq = 0;

  /** @param start initial instant, epoch ms. @default 0 */
  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timers.push({ at: this.current + Math.max(0, ms), seq: this.seq++, resolve });
    });
  }

  /** Advances by `ms`, firing every timer due on the way. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.current + ms);
  }

  /** Advances to instant `target` (never backwards), firing every timer due on the way. */
  async advanceTo(target: number): Promise<void> {
    await settle();
    for (let timer = this.earliest(); timer !== undefined && timer.at <= target; timer = this.earliest()) {
      this.timers.splice(this.timers.indexOf(timer), 1);
      this.current = Math.max(this.current, timer.at);
      timer.resolve();
      await settle();
    }
    this.current = Math.max(this.current, target);
  }

  /**
   * Fires timers in order until `done()` holds after a settle, or no timer is left, or time would pass `limit`.
   * @returns whether `done()` held.
   */
  async runUntil(done: () => boolean, limit = Number.POSITIVE_INFINITY): Promise<boolean> {
    await settle();
    while (!done()) {
      const timer = this.earliest();
      if (timer === undefined || timer.at > limit) return false;
      await this.advanceTo(timer.at);
    }
    return true;
  }

  private earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.timers) {
      if (best === undefined || timer.at < best.at || (timer.at === best.at && timer.seq < best.seq)) best = timer;
    }
    return best;
  }
}
