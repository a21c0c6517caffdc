import type { JobEvent } from '../../ports/Invoker';
import { isStoppedBatchClaim, type ClaimRefusal, type IdempotencyRecord } from '../../ports/IdempotencyStore';
import { deadLetterMarksOf } from '../deadLetterMarks';
import type { MessageRef } from '../queueOutcomes';
import { deadLetterRecorded } from './deadLettering';
import { recordOwedSettlement, refundOnce } from './settlements';
import type { JobOutcome, WorkerDeps } from './types';

/**
 * Claims the key of `event`'s job with `claim` (see {@link claimKey}). A dead letter an operator moved back as it was
 * (see `deadLetterMarksOf`) is a redrive: when the dead-lettered record of the dispatch it names keeps it out, the key
 * is reopened (see `IdempotencyStore.reopenDeadLettered`), as `ops redrive` reopens it, and claimed again, so that the
 * job is called again. The record of another dispatch keeps it out as it keeps out any dispatch: a success above all,
 * or a dead-lettering since (the job was redriven and dead-lettered again, and its newer dead letter is the one to
 * redrive).
 * @returns `null` when claimed, else what keeps the claim out (see `ClaimRefusal`).
 */
export async function claimJob(
  event: JobEvent,
  claim: IdempotencyRecord,
  now: number,
  deps: WorkerDeps,
): Promise<ClaimRefusal | null> {
  const key = event.idempotencyKey;
  const held = await claimKey(key, claim, now, deps);
  if (held === null || held === 'spent' || held.status !== 'dead-lettered') return held;
  if (deadLetterMarksOf(event.attributes)?.dispatchId !== held.dispatchId) return held;
  await deps.stores.idempotency.reopenDeadLettered(key, now);
  return claimKey(key, claim, now, deps);
}

/**
 * Claims `key` with `claim` (see `IdempotencyStore.putIdempotencyIfAbsent`). A stopped batch claim in the way
 * is looked up in its batch's record: a success recorded there holds the key as a success record would; without one,
 * its worker stopped (it may or may not have called), and the claim of another dispatch replaces it, as it would an
 * expired claim. One of the same dispatch keeps the key: a dispatch claims its key once, since that claim may have
 * called, and the store refuses the claim of a dispatch marked on the key (`spent`: it claimed before, or gave its
 * reservation back).
 * @returns `null` when claimed, else what keeps the claim out (see `ClaimRefusal`).
 */
async function claimKey(
  key: string,
  claim: IdempotencyRecord,
  now: number,
  deps: WorkerDeps,
): Promise<ClaimRefusal | null> {
  const { idempotency } = deps.stores;
  const held = await idempotency.putIdempotencyIfAbsent(key, claim, now);
  if (held === null || held === 'spent' || !isStoppedBatchClaim(held, now)) return held;
  const success = await idempotency.batchSuccess(held.batch.id, held.dispatchId);
  if (success !== undefined)
    return { status: 'succeeded', dispatchId: held.dispatchId, ...success, expiresAt: held.expiresAt };
  if (held.dispatchId === claim.dispatchId) return held;
  return idempotency.putIdempotencyIfAbsent(key, claim, now, held.dispatchId);
}

/**
 * What a delivery does when the job's key is held (`held`): it makes no call. A dispatch marked on the key (`spent`)
 * was handled by an earlier delivery, which called or gave its reservation back, and requeued the job if it was to
 * go on: this one gives nothing back and leaves the message alone. Otherwise only a different dispatch gives its
 * reservation back, and only once (see {@link refundOnce}; a refund that cannot be recorded leaves quota unused,
 * never exceeded). A job that ended leaves its copy of the message to be deleted or, when its dead-lettering may have
 * stopped short of the DLQ, dead-lettered with the recorded reason once the worker that recorded it has timed out.
 */
export async function standBack(
  held: ClaimRefusal,
  event: JobEvent,
  message: MessageRef,
  start: number,
  deps: WorkerDeps,
): Promise<JobOutcome> {
  const { queues } = deps;
  if (held === 'spent') return 'already-spent';
  if (held.dispatchId !== event.dispatchId) await refundOnce(event, start, deps);
  if (held.status === 'succeeded') {
    await recordOwedSettlement(event, held, start, deps);
    await queues.delete(message.queue, message.receiptHandle);
    return 'duplicate';
  }
  if (held.status === 'dead-lettered') {
    // A further delivery of the same dispatch leaves the message alone: its first delivery moved it (or stopped
    // before, and the message's next dispatch finishes). A different dispatch holds the message: with a reason
    // still recorded, the first worker may have stopped before the message reached the dead-letter queue, so this
    // one sends it there, once that worker's time is surely up: before, it may still be moving the message, and a
    // second copy would reach the dead-letter queue. This copy is left to come back. Without a reason, it only
    // deletes its copy.
    if (held.dispatchId === event.dispatchId) return 'already-ended';
    if (held.reason === undefined) await queues.delete(message.queue, message.receiptHandle);
    else if (deps.clock.now() < held.at + deps.config.orchestrator.workerTimeoutMs) return 'busy-elsewhere';
    else await deadLetterRecorded(message, held.reason, event, held, deps);
    return 'duplicate';
  }
  return held.status === 'failed' ? 'already-failed' : 'busy-elsewhere';
}
