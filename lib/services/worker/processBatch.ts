import type { Settlement } from '../../domain/quota/ledger';
import type { Costs } from '../../domain/quota/tiers';
import type { BatchEvent, JobEvent } from '../../ports/Invoker';
import { fifoGroupOf, type QueueName, type QueueReceiver } from '../../ports/QueueReceiver';
import type { JobResult } from '../../ports/ResultHandler';
import { returnAllUnconsumed, type Unconsumed } from '../queueOutcomes';
import { endRefusalRun } from './circuitReports';
import { CircuitView } from './circuitView';
import { messageOf } from './jobMessage';
import { endedRecord, resultDestination, successDetails, usageField } from './keyRecords';
import { processJob } from './processJob';
import { deliverResults } from './results';
import { claimRefund, recordSettlement, refundOf } from './settlements';
import type { BatchEnding, JobOutcome, WorkerDeps } from './types';

/** What a batch's jobs leave to the batch as they end (see {@link BatchEnding}), in the order they ended. */
interface LeftToBatch {
  /** Each success with what its call counted. */
  readonly succeeded: { readonly job: JobEvent; readonly used: Costs }[];
  readonly refunds: Settlement[];
  readonly returns: Unconsumed[];
  readonly results: JobResult[];
  /** Receipt handles to delete, by queue. */
  readonly deletes: Map<QueueName, string[]>;
}

/**
 * Handles a batch's jobs side by side, each as {@link processJob} handles a job alone: each waits for its own slot,
 * so the calls go out at their slots, not together. A job that fails does not stop the others, but the messages of
 * one FIFO group go in order, each after the one before has ended (see {@link inGroupOrder}). Once all have ended,
 * the reservations of the jobs that started too late are given back in one write and the jobs sent back to the
 * requeue queue ten to a request, and the successes are recorded in one write under the batch's id (the first job's
 * dispatch id), which their claims name; their messages and the originals of the jobs sent back are then deleted ten
 * to a request, and the successes reported to the circuit once. If that write fails, each success gets a
 * record of its own, as a job alone does. The successes' results are handed on together once recorded, before the
 * deletes (see `handOnResult`). A message whose delete failed reappears, and its next dispatch finds its
 * success.
 * @throws Error naming each job that failed (its message reappears for another dispatch), once all have ended.
 */
export async function processBatch(event: BatchEvent, deps: WorkerDeps): Promise<JobOutcome[]> {
  const { clock, queues } = deps;
  const start = clock.now();
  const { batch, left } = batchEnding(event.jobs[0]?.dispatchId ?? '');
  const circuit = new CircuitView(event.lane, deps);
  const settled = await Promise.allSettled(
    inGroupOrder(
      event.jobs,
      (job, chainedAfter) => processJob(job, deps, { batch, circuit, chainedAfter }),
      (job) => standDown(job, batch, deps),
    ),
  );
  // Given back in one write; if it cannot be recorded, the quota goes unused, as for a job alone. Then the jobs go
  // back to their queues, their originals deleted with the successes'.
  if (left.refunds.length > 0) await recordSettlement(event.lane, start, deps, ...left.refunds);
  const { toDelete, problems } = await returnAllUnconsumed(queues, left.returns);
  for (const message of toDelete) batch.deleteLater(message.queue, message.receiptHandle);
  const outcomes = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const failures = [
    ...settled.flatMap((s, i) =>
      s.status === 'rejected' ? [`${event.jobs[i]?.messageId}: ${(s.reason as Error).message}`] : [],
    ),
    ...problems,
  ];
  await recordSuccesses(batch.id, left.succeeded, deps);
  await deliverResults(left.results, deps);
  failures.push(...(await deleteAll(left.deletes, queues)));
  if (outcomes.includes('succeeded')) await endRefusalRun(clock.now(), event.lane, deps, circuit.refusalRun());
  if (failures.length > 0)
    throw new Error(`the batch of ${event.jobs.length} jobs failed in part: ${failures.join('; ')}`, {
      cause: settled.find((s) => s.status === 'rejected')?.reason,
    });
  return outcomes as JobOutcome[];
}

/** A batch's ending named `id`, which collects what its jobs leave to it. */
function batchEnding(id: string): { readonly batch: BatchEnding; readonly left: LeftToBatch } {
  const left: LeftToBatch = { succeeded: [], refunds: [], returns: [], results: [], deletes: new Map() };
  const { deletes } = left;
  const batch: BatchEnding = {
    id,
    succeeded: (job, used) => left.succeeded.push({ job, used }),
    deleteLater: (queue, receiptHandle) => deletes.set(queue, [...(deletes.get(queue) ?? []), receiptHandle]),
    refundLater: (refund) => left.refunds.push(refund),
    returnLater: (job) => left.returns.push(job),
    resultLater: (result) => left.results.push(result),
  };
  return { batch, left };
}

/**
 * Records the successes of `succeeded` in one write under the batch's id `batchId`; if that write fails, each gets a
 * record of its own, and one that cannot be written is left out (see `endSucceeded`).
 */
async function recordSuccesses(batchId: string, succeeded: LeftToBatch['succeeded'], deps: WorkerDeps): Promise<void> {
  if (succeeded.length === 0) return;
  const { clock, stores, config } = deps;
  const now = clock.now();
  const jobs = succeeded.map(({ job, used }) => ({ dispatchId: job.dispatchId, ...usageField(used) }));
  const expiresAt = now + config.orchestrator.idempotencyTtlMs;
  await stores.idempotency
    .recordBatchSuccesses(batchId, { at: now, expiresAt, jobs, result: resultDestination(deps) })
    .catch(() =>
      Promise.all(
        succeeded.map(({ job, used }) =>
          stores.idempotency
            .putIdempotency(job.idempotencyKey, {
              ...endedRecord('succeeded', job.dispatchId, now, config),
              ...successDetails(used, deps),
            })
            .catch(() => undefined),
        ),
      ),
    );
}

/** Deletes the messages of `deletes`, ten to a request, queue by queue. @returns a line for each request that failed. */
async function deleteAll(deletes: ReadonlyMap<QueueName, string[]>, queues: QueueReceiver): Promise<string[]> {
  const failures: string[] = [];
  for (const [queue, handles] of deletes)
    await queues
      .deleteBatch(queue, handles)
      .catch((error: unknown) =>
        failures.push(`deleting ${handles.length} from ${queue}: ${(error as Error).message}`),
      );
  return failures;
}

/** Outcomes after which a job has ended: the next message of its FIFO group may be called. */
const ENDED: ReadonlySet<JobOutcome> = new Set(['succeeded', 'dead-lettered', 'duplicate', 'already-ended']);
/**
 * Outcomes of a job that another delivery has (of its dispatch, or of another dispatch of its message): that one has
 * the rest of its FIFO group too, or their messages reappear after their visibility, in order.
 */
const ELSEWHERE: ReadonlySet<JobOutcome> = new Set(['busy-elsewhere', 'already-failed', 'already-spent']);

/**
 * Runs `jobs` side by side with `run`, except that the messages of one FIFO group go one after the other, in the
 * batch's order: each starts once the one before has ended (see {@link ENDED}), and is told that one's slot. Once one
 * does not end (it failed, was kept or given back), those after it are handed to `standDown` instead, so that none
 * passes it; when another delivery of the batch has it (see {@link ELSEWHERE}), they are left to that delivery.
 * @returns each job's outcome, in the order of `jobs`.
 */
function inGroupOrder(
  jobs: readonly JobEvent[],
  run: (job: JobEvent, chainedAfter?: number) => Promise<JobOutcome>,
  standDown: (job: JobEvent) => Promise<JobOutcome>,
): Promise<JobOutcome>[] {
  const last = new Map<string, { readonly slotAt: number; readonly outcome: Promise<JobOutcome | undefined> }>();
  return jobs.map((job) => {
    const group = fifoGroupOf(job);
    const before = group === undefined ? undefined : last.get(group);
    const after = async (
      { slotAt }: { readonly slotAt: number },
      ended: JobOutcome | undefined,
    ): Promise<JobOutcome> => {
      if (ended !== undefined && ENDED.has(ended)) return run(job, slotAt);
      if (ended !== undefined && ELSEWHERE.has(ended)) return 'busy-elsewhere';
      return standDown(job);
    };
    const outcome = before === undefined ? run(job) : before.outcome.then((ended) => after(before, ended));
    if (group !== undefined) last.set(group, { slotAt: job.slotAt, outcome: outcome.catch(() => undefined) });
    return outcome;
  });
}

/**
 * Gives back a job that will not call because an earlier message of its group did not end: its reservation and its
 * message, unless another delivery of the dispatch claimed it or gave it back already (see
 * `IdempotencyStore.claimRefund`). A later delivery of the batch calls it no more: the earlier message's claim
 * keeps that one from ending there too (see `claimKey`).
 */
async function standDown(job: JobEvent, batch: BatchEnding, deps: WorkerDeps): Promise<JobOutcome> {
  if (!(await claimRefund(job, deps.clock.now(), deps))) return 'busy-elsewhere';
  batch.refundLater(refundOf(job));
  batch.returnLater({ message: messageOf(job), idempotencyKey: job.idempotencyKey, attempt: job.attempt });
  return 'behind-unfinished';
}
