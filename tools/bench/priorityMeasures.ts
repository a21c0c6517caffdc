import type { JobSpec } from '../simulation/jobs';
import { jobIdOf } from '../simulation/jobs';
import type { VirtualApiCall } from '../simulation/virtualApi';

/** A job's class: the queue it was sent to, the FIFO queue counting with the main class. */
export type JobClass = 'main' | 'bulk';

/** The waits of one class's jobs: from each job's sending to its first call's arrival at the API. */
export interface ClassWaits {
  readonly class: JobClass;
  readonly jobs: number;
  readonly medianSeconds: number;
  readonly p99Seconds: number;
  /** The same, had every job gone in plain arrival order at the quota's rate (see {@link arrivalOrderWaits}). */
  readonly arrivalOrderMedianSeconds: number;
  readonly arrivalOrderP99Seconds: number;
}

/** The `q`-quantile (0..1) of `values`, the nearest rank; 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
}

/** When each job is sent, in ms from the start. */
function sentAtMs(job: JobSpec): number {
  return job.atMs ?? 0;
}

/**
 * Each job's wait in plain arrival order, in ms: the jobs go one by one in the order they were sent (a tie in the
 * order given), each no earlier than its sending nor `1000 / ratePerSecond` ms after the one before. The waits the
 * quota alone would give them, without classes and without any overhead.
 */
export function arrivalOrderWaits(jobs: readonly JobSpec[], ratePerSecond: number): Map<JobSpec, number> {
  const gapMs = 1000 / ratePerSecond;
  const order = [...jobs].sort((a, b) => sentAtMs(a) - sentAtMs(b));
  const waits = new Map<JobSpec, number>();
  let last = Number.NEGATIVE_INFINITY;
  for (const job of order) {
    const at = Math.max(sentAtMs(job), last + gapMs);
    waits.set(job, at - sentAtMs(job));
    last = at;
  }
  return waits;
}

/** Each job's first call's arrival, in ms from `start`, by job id. */
function firstCalls(calls: readonly VirtualApiCall[], start: number): Map<string, number> {
  const first = new Map<string, number>();
  for (const call of calls)
    if (!first.has(call.id) || call.at - start < (first.get(call.id) ?? 0)) first.set(call.id, call.at - start);
  return first;
}

/**
 * The waits of each class's called jobs (see {@link ClassWaits}), against plain arrival order at `ratePerSecond`.
 * A job never called counts for neither.
 */
export function classWaits(
  jobs: readonly JobSpec[],
  calls: readonly VirtualApiCall[],
  start: number,
  ratePerSecond: number,
): ClassWaits[] {
  const first = firstCalls(calls, start);
  const ideal = arrivalOrderWaits(jobs, ratePerSecond);
  const classOf = (job: JobSpec): JobClass => (job.queue === 'bulk' ? 'bulk' : 'main');
  return (['main', 'bulk'] as const).flatMap((jobClass) => {
    const called = jobs.filter((job) => classOf(job) === jobClass && first.has(jobIdOf(job.body) ?? ''));
    if (called.length === 0) return [];
    const waits = called.map((job) => ((first.get(jobIdOf(job.body) ?? '') ?? 0) - sentAtMs(job)) / 1000);
    const inOrder = called.map((job) => (ideal.get(job) ?? 0) / 1000);
    return [
      {
        class: jobClass,
        jobs: called.length,
        medianSeconds: quantile(waits, 0.5),
        p99Seconds: quantile(waits, 0.99),
        arrivalOrderMedianSeconds: quantile(inOrder, 0.5),
        arrivalOrderP99Seconds: quantile(inOrder, 0.99),
      },
    ];
  });
}

/**
 * The lowest share of bulk jobs among the calls of any `windowSeconds` (sliding by a second) that ends before the
 * last bulk job's call, so within which bulk had jobs waiting: the share bulk was given at worst. `undefined` when
 * the run is shorter than a window.
 */
export function lowestBulkShare(
  jobs: readonly JobSpec[],
  calls: readonly VirtualApiCall[],
  start: number,
  windowSeconds: number,
): number | undefined {
  const bulkIds = new Set(jobs.filter((job) => job.queue === 'bulk').map((job) => jobIdOf(job.body)));
  const first = [...firstCalls(calls, start)].map(([id, at]) => ({ bulk: bulkIds.has(id), at }));
  const lastBulk = Math.max(...first.filter((c) => c.bulk).map((c) => c.at));
  let lowest: number | undefined;
  for (let from = 0; from + windowSeconds * 1000 <= lastBulk; from += 1000) {
    const inWindow = first.filter((c) => c.at >= from && c.at < from + windowSeconds * 1000);
    if (inWindow.length === 0) continue;
    const share = inWindow.filter((c) => c.bulk).length / inWindow.length;
    lowest = Math.min(lowest ?? 1, share);
  }
  return lowest;
}
