import type { Clock } from '../../lib/ports/Clock';
import { pause } from '../local/waitFor';

const DAY_MS = 86_400_000;

/** Hours passing in a moment: `atMs` of wall time after the scenario's start, the clock moves `byMs` forward. */
export interface ClockLeap {
  readonly atMs: number;
  readonly byMs: number;
}

/** What a {@link ScenarioClock} does to the time the service and the API read. */
export interface ClockPlan {
  /** Midnight in `timeZone` comes this long after the start, on this clock (leaps count). @default no shift */
  readonly midnightAfterMs?: number;
  readonly timeZone: string;
  readonly leaps?: readonly ClockLeap[];
}

/** The wall clock the scenario clock is built on. */
const wallClock: Clock = { now: () => Date.now(), sleep: (ms) => pause(Math.max(0, ms)) };

/** Milliseconds since the last midnight in `timeZone` at `at` (on a day of 24 hours). */
function sinceMidnight(at: number, timeZone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-GB', {
      timeZone,
      hourCycle: 'h23',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(at)
      .map((p) => [p.type, Number(p.value)]),
  ) as Record<string, number>;
  return (((parts.hour ?? 0) * 60 + (parts.minute ?? 0)) * 60 + (parts.second ?? 0)) * 1000 + (at % 1000);
}

/**
 * The clock of a fault scenario, shared by the service and the quota referee: the wall clock shifted so that
 * midnight in a zone comes when the scenario wants it, and moved forward in leaps so that hours pass in a moment (a
 * `Retry-After` of hours runs out, a day tier renews). Sleeps wake at a leap, as they would have ended in the hours
 * it skipped. The SQS emulator and the Lambda host keep the wall clock: a leap is time passing for what reads this
 * clock only.
 *
 * The plan is anchored at construction and anchored again by {@link start}, once, before the first run: the clock
 * steps back by the time the set-up took, which only the set-up has read.
 */
export class ScenarioClock implements Clock {
  private startedAt = 0;
  private offset = 0;

  constructor(
    private readonly plan: ClockPlan,
    private readonly wall: Clock = wallClock,
  ) {
    this.start();
  }

  /** Anchors the plan: its midnight and its leaps count from now. */
  start(): void {
    this.startedAt = this.wall.now();
    const { midnightAfterMs, timeZone } = this.plan;
    if (midnightAfterMs === undefined) return;
    if (!(midnightAfterMs > 0 && midnightAfterMs < DAY_MS))
      throw new RangeError(`midnightAfterMs must be within a day (0 < ms < ${DAY_MS}), got ${midnightAfterMs}`);
    // Shifted so that the time of day at the start is midnightAfterMs before midnight (modulo whole days).
    this.offset = DAY_MS - sinceMidnight(this.startedAt, timeZone) - midnightAfterMs;
  }

  now(): number {
    const wall = this.wall.now();
    const leapt = (this.plan.leaps ?? []).filter((leap) => this.startedAt + leap.atMs <= wall);
    return wall + this.offset + leapt.reduce((sum, leap) => sum + leap.byMs, 0);
  }

  async sleep(ms: number): Promise<void> {
    const until = this.now() + ms;
    for (let left = ms; left > 0; left = until - this.now()) {
      const wall = this.wall.now();
      const toNextLeap = Math.min(
        ...(this.plan.leaps ?? []).map((leap) => this.startedAt + leap.atMs - wall).filter((ms) => ms > 0),
      );
      await this.wall.sleep(Math.min(left, toNextLeap));
    }
  }
}
