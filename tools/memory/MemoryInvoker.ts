import { InvokeFailedError, InvokeThrottledError } from '../../lib/errors';
import type { Clock } from '../../lib/ports/Clock';
import type { Invoker, WorkerEvent } from '../../lib/ports/Invoker';
import type { DeliveryPlan, InvokeTiming } from '../simulation/startDelays';

/** A fault that {@link MemoryInvoker.failNext} injects: `throttled` → InvokeThrottledError, `failed` → InvokeFailedError. */
export type InjectedInvokeFault = 'throttled' | 'failed';

/** Options of {@link MemoryInvoker}. */
export interface MemoryInvokerOptions {
  /** Latency runs on this clock. */
  readonly clock: Clock;
  /** The worker; runs once per accepted invoke, never awaited by the caller. */
  readonly handler: (event: WorkerEvent) => Promise<unknown>;
  /** Time between an accepted invoke and the start of its handler, when no `timing` is given. @default 0 */
  readonly latencyMs?: number;
  /**
   * Draws each accepted invoke's start delay and whether its event is delivered twice (Lambda's at-least-once
   * delivery); replaces `latencyMs`. @default a fixed `latencyMs` and a single delivery
   */
  readonly timing?: InvokeTiming;
}

/**
 * Lambda's asynchronous invoke (`InvocationType: 'Event'`) in memory: `invoke` resolves as soon as the invocation
 * is accepted and the handler starts `latencyMs` later on the clock. A handler that rejects counts as a crash and
 * is never an unhandled rejection. With a `timing`, a planned second delivery runs the handler again with the same
 * event, while the first runs or after it ended. Lambda's own async retries of crashed invocations are not modelled.
 */
export class MemoryInvoker implements Invoker {
  private readonly clock: Clock;
  private readonly handler: (event: WorkerEvent) => Promise<unknown>;
  private readonly latencyMs: number;
  private readonly timing: InvokeTiming | undefined;
  private readonly faults: InjectedInvokeFault[] = [];
  /** Handlers scheduled or running. */
  private active = 0;
  private accepted = 0;
  private crashed = 0;
  private duplicated = 0;
  private lastError: unknown = undefined;

  /** @throws RangeError if `latencyMs` is negative or not finite. */
  constructor({ clock, handler, latencyMs = 0, timing }: MemoryInvokerOptions) {
    if (!Number.isFinite(latencyMs) || latencyMs < 0) throw new RangeError(`latencyMs must be >= 0, got ${latencyMs}`);
    this.clock = clock;
    this.handler = handler;
    this.latencyMs = latencyMs;
    this.timing = timing;
  }

  /** Accepted invocations (injected faults excluded). */
  get invocations(): number {
    return this.accepted;
  }

  /** Second deliveries started (each also runs the handler). */
  get duplicateDeliveries(): number {
    return this.duplicated;
  }

  /** Handlers that rejected. */
  get crashes(): number {
    return this.crashed;
  }

  /** The reason of the latest crash, for test diagnostics; `undefined` if none. */
  get lastCrash(): unknown {
    return this.lastError;
  }

  /**
   * Accepts the invocation and schedules the handler without waiting for it.
   * @throws InvokeThrottledError or InvokeFailedError when a fault was injected with {@link failNext};
   *   the handler then does not run.
   */
  async invoke(event: WorkerEvent): Promise<void> {
    const fault = this.faults.shift();
    if (fault === 'throttled') throw new InvokeThrottledError('injected fault: invoke throttled');
    if (fault === 'failed') throw new InvokeFailedError('injected fault: invoke failed', false);
    this.accepted++;
    const plan: Pick<DeliveryPlan, 'startDelayMs' | 'duplicate'> = this.timing?.plan(this.clock.now()) ?? {
      startDelayMs: this.latencyMs,
    };
    this.active++;
    const duplicate = plan.duplicate;
    if (duplicate?.when === 'while-running') {
      this.active++;
      this.duplicated++;
      void this.run(event, plan.startDelayMs + duplicate.afterStartMs);
    }
    void this.run(event, plan.startDelayMs, duplicate?.when === 'after-end' ? duplicate.afterEndMs : undefined);
  }

  /**
   * Makes the next `n` invokes fail with `fault` without running the handler; adds to faults already queued.
   * @throws RangeError if `n` is not a non-negative integer.
   */
  failNext(n: number, fault: InjectedInvokeFault): void {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`n must be a non-negative integer, got ${n}`);
    for (let i = 0; i < n; i++) this.faults.push(fault);
  }

  /** True when no handler is running or waiting out its start delay, and no second delivery is still to come. */
  idle(): boolean {
    return this.active === 0;
  }

  /** Runs one delivery `delayMs` from now; then, if `againAfterMs` is set, hands its place in `active` to a second one. */
  private async run(event: WorkerEvent, delayMs: number, againAfterMs?: number): Promise<void> {
    try {
      // Even with no delay, start after the caller's turn so invoke never runs handler code itself.
      if (delayMs > 0) await this.clock.sleep(delayMs);
      else await Promise.resolve();
      await this.handler(event);
    } catch (error) {
      this.crashed++;
      this.lastError = error;
    } finally {
      if (againAfterMs === undefined) {
        this.active--;
      } else {
        this.duplicated++;
        void this.run(event, againAfterMs);
      }
    }
  }
}
