import type { LimitReading } from '../../domain/limits/rateLimitHeaders';

/**
 * The share of a limit below which a `remaining` is worth recording again: above it, the service's own count explains
 * what is left or soon will, and nothing is learnt that the lane's next low reading would not say.
 */
export const LOW_REMAINING_SHARE = 0.5;

/** The least time between two recordings of a low `remaining` of one family by one container. */
export const LOW_REMAINING_INTERVAL_MS = 1_000;

/** What one container last recorded of one family: its limit, whether its remaining was low, and when. */
interface Recorded {
  readonly limit: number | undefined;
  readonly low: boolean;
  readonly at: number;
}

/**
 * What a worker container last recorded of each lane's limit headers, so that it records only news: one lives as long
 * as the container (see `workerDepsFromEnv`). A reading is news when the container has recorded none of its family,
 * when its `limit` differs from the last one recorded, when its `remaining` crosses {@link LOW_REMAINING_SHARE} of the
 * limit either way, or when it is low and {@link LOW_REMAINING_INTERVAL_MS} has passed since the last. So a lane whose
 * API's limits match the configuration costs one write per new container, and a lane near its limit at most one a
 * second per container.
 */
export class LimitReportMemory {
  private readonly last = new Map<string, Recorded>();

  /** Whether `reading` of `lane`, low or not by `low`, is news at `now`. */
  news(lane: string, reading: LimitReading, low: boolean, now: number): boolean {
    const last = this.last.get(keyOf(lane, reading));
    return (
      last === undefined ||
      (reading.limit !== undefined && reading.limit !== last.limit) ||
      low !== last.low ||
      (low && now - last.at >= LOW_REMAINING_INTERVAL_MS)
    );
  }

  /** Remembers that `reading` of `lane`, low or not by `low`, was recorded at `now`. */
  recorded(lane: string, reading: LimitReading, low: boolean, now: number): void {
    const key = keyOf(lane, reading);
    this.last.set(key, { limit: reading.limit ?? this.last.get(key)?.limit, low, at: now });
  }
}

/** The key of `lane`'s family of `reading` in a {@link LimitReportMemory}. */
function keyOf(lane: string, reading: LimitReading): string {
  return `${lane}\u001f${reading.family}`;
}
