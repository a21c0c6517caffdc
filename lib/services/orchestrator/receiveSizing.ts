import type { RunContext } from './runContext';

/** The most messages SQS returns from one receive. */
export const MAX_RECEIVE = 10;
/** The most receives a refill of a standard queue makes at once. */
export const MAX_PARALLEL_RECEIVES = 20;
/**
 * How much of the tightest tier's rate a refill of a standard queue takes: several batches and the lead, so that
 * batches come out whole and a refill's receives (and its look into the queues read before) serve a second of work.
 * Not more: a message received counts one receive more each time a sudden wait (a 429's pause, a spent calendar
 * tier) hands it back, and a queue redrives it to its DLQ after `maxReceiveCount`.
 */
export const PREFETCH_MS = 1_000;

/**
 * How many messages the intake receives at a time. SQS counts every receive, and a message held longer than its
 * visibility comes back: so a receive takes no more than the quota lets go while the message is held, and a refill
 * no more than {@link PREFETCH_MS} of the tightest tier's rate.
 */
export class ReceiveSizing {
  constructor(
    private readonly run: RunContext,
    /** How many messages one receive may take at an instant (see `QuotaGate.room`). */
    private readonly room: (now: number) => number,
  ) {}

  /**
   * As many messages as one receive takes: as the tightest sliding tier lets through while a message's visibility
   * still covers a worker run and the run goes on, and as the quota has room for; at most {@link MAX_RECEIVE}.
   */
  batchSize(): number {
    return this.sendable(MAX_RECEIVE);
  }

  /**
   * How many messages a refill of a standard queue takes: {@link PREFETCH_MS} of the tightest tier's rate, at least
   * one receive's {@link ReceiveSizing.batchSize}, and never more than could be sent while they are held (see there).
   */
  prefetchSize(): number {
    const rate = this.tightestRate();
    const prefetch = rate === undefined ? MAX_RECEIVE : Math.ceil(rate * PREFETCH_MS);
    return Math.max(this.batchSize(), Math.min(prefetch, this.sendable(MAX_RECEIVE * MAX_PARALLEL_RECEIVES)));
  }

  /** How many calls the tightest sliding tier's rate sends within `ms` (unbounded without one). */
  sentWithin(ms: number): number {
    const rate = this.tightestRate();
    return rate === undefined ? Number.POSITIVE_INFINITY : Math.floor(rate * ms);
  }

  /**
   * Of `most` messages received now, how many could be sent while held (at least one), at `share` of the tightest
   * tier's rate: a bulk job that waits for the main class's goes at its share of the rate (see `BulkTurns`).
   */
  sendable(most: number, share = 1): number {
    const { settings, options } = this.run;
    const now = this.run.clock.now();
    const window = Math.min(settings.visibilityTimeoutMs - settings.workerTimeoutMs, options.deadline - now);
    const rate = this.tightestRate();
    const perWindow = rate === undefined ? most : Math.floor(share * rate * window);
    return Math.max(1, Math.min(most, perWindow, this.room(now)));
  }

  /** The tightest sliding tier's rate in units per ms, or `undefined` when no tier sets a pace. */
  private tightestRate(): number | undefined {
    const rates = this.run.config.quotas.flatMap((t) => t.steadyRate() ?? []).map((rate) => rate.units / rate.perMs);
    return rates.length === 0 ? undefined : Math.min(...rates);
  }
}
