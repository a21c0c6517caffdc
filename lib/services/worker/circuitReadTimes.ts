/**
 * The least time before a job's slot its worker reads the circuit: the strongly consistent read sent then has this long
 * to answer before the slot. A read serves the calls whose slots are at most its lead after it was sent.
 */
export const CIRCUIT_CHECK_AHEAD_MS = 50;

/** The most time before a job's slot its worker reads the circuit, however slow the last reads were. */
export const MAX_CIRCUIT_CHECK_AHEAD_MS = 1_000;

/** How many of the container's latest circuit reads set the read's lead. */
const RECENT_READS = 8;

/** What the lead keeps beyond the slowest of those reads. */
const READ_SLACK_MS = 20;

/**
 * How long one worker container's reads of the circuit have taken lately, and so how long before a job's slot its next
 * read is sent: {@link CIRCUIT_CHECK_AHEAD_MS}, or longer by as much as the slowest of its last 8 reads took beyond
 * it, plus 20 ms, up to {@link MAX_CIRCUIT_CHECK_AHEAD_MS}. A read sent a fixed 50 ms ahead could never answer in time
 * while DynamoDB takes longer (throttled and retried, say): every job would be given back and dispatched again, and
 * none would call. The lead is as short as the reads allow, since a pause written after a read is sent binds only the
 * calls of later reads.
 *
 * One lives as long as the worker's container (see `workerDepsFromEnv`); a new container's first read goes by the
 * time its job's claim took.
 */
export class CircuitReadTimes {
  private readonly recent: number[] = [];

  /**
   * Notes that a read of the circuit took `ms`, answered or failed, or another single-item request to the same table:
   * a job's claim of its key, which tells a new container how slow the table is before its first read.
   */
  record(ms: number): void {
    this.recent.push(Math.max(0, ms));
    if (this.recent.length > RECENT_READS) this.recent.shift();
  }

  /** How long before a job's slot the next read of the circuit is sent. */
  aheadMs(): number {
    const slowest = Math.max(0, ...this.recent);
    return Math.min(MAX_CIRCUIT_CHECK_AHEAD_MS, Math.max(CIRCUIT_CHECK_AHEAD_MS, slowest + READ_SLACK_MS));
  }
}
