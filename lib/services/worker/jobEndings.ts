import { isDispatchAllowed } from '../../domain/breaker/circuit';
import type { RetryDecision } from '../../domain/outcome/retryPolicy';
import type { Settlement } from '../../domain/quota/ledger';
import { retryLater, returnUnconsumed } from '../queueOutcomes';
import { endRefusalRun, reportFailure } from './circuitReports';
import { deadLetterRecorded } from './deadLettering';
import { endedRecord, successDetails } from './keyRecords';
import { handOnResult } from './results';
import { claimRefund, recordOwed, recordSettlement, refundOf, releaseSlot, unrecorded } from './settlements';
import type { AnsweredCall, JobContext, JobOutcome } from './types';

/** What the retry policy decides for a call that did not succeed. */
type Failure = Exclude<RetryDecision, { action: 'succeed' }>;

/**
 * Ends a job whose call succeeded at `call.now`: records what it owes the ledger, writes the success record (holding
 * the settlement if it could not be recorded), hands its result on (see {@link handOnResult}), deletes the message, and
 * reports the success to the circuit (unless the job's options leave either to its batch).
 * @throws StateUnavailableError when its settlement cannot be recorded (the message is kept if the record holds it;
 * the result is handed on all the same: the job has succeeded either way).
 */
export async function endSucceeded(job: JobContext, call: AnsweredCall): Promise<JobOutcome> {
  const { event, message, start, deps, options, circuit } = job;
  const { result, now, owed, release, used } = call;
  const { stores, queues, config } = deps;
  const succeeded = { ...endedRecord('succeeded', event.dispatchId, now, config), ...successDetails(used, deps) };
  await releaseSlot(event.lane, release, start, deps);
  // The settlement first, then one record: one that holds the settlement only when it could not be recorded, and the
  // message stays then, so that the message's next dispatch finds the record (no second call) and records the
  // settlement (see recordOwedSettlement). A worker that dies between the settlement and the record is any worker that
  // dies after its call.
  if (owed !== undefined && !(await recordSettlement(event.lane, start, deps, owed))) {
    const holding = await stores.idempotency
      .putIdempotency(event.idempotencyKey, { ...succeeded, settlement: owed })
      .then(
        () => true,
        () => false,
      );
    // Without a record, the message must go all the same, or its next dispatch would call again: ended is ended.
    if (!holding) await queues.delete(message.queue, message.receiptHandle);
    await handOnResult(event, result, now, deps, options.batch);
    throw unrecorded(owed, holding ? 'its success record holds it, and the message was kept' : 'it is lost');
  }
  // The record first, then the delete: a worker stopping in between leaves a message whose next dispatch finds the
  // record (no second call) and deletes it. A record that cannot be written does not keep the message: with the
  // message gone no dispatch follows, and a further delivery of this very dispatch, however late, finds that it
  // claimed the key (a dispatch claims it once). A batch records its successes together, before its deletes.
  const { batch } = options;
  if (batch !== undefined) batch.succeeded(event, used);
  else await stores.idempotency.putIdempotency(event.idempotencyKey, succeeded).catch(() => undefined);
  await handOnResult(event, result, now, deps, batch);
  if (batch !== undefined) {
    batch.deleteLater(message.queue, message.receiptHandle);
    return 'succeeded';
  }
  await queues.delete(message.queue, message.receiptHandle);
  // Last, once the job is done: it ends a run of 4xx refusals (a write only when there is a run).
  await endRefusalRun(now, event.lane, deps, circuit.refusalRun());
  return 'succeeded';
}

/**
 * Ends a job whose call failed at `call.now`: reports the failure to the circuit (see {@link fateOf}), records the
 * dispatch's failure or the job's dead-lettering under its key, records what the call owes the ledger and frees its
 * slot, then keeps, dead-letters or requeues the message (see {@link sendOnward}).
 * @throws StateUnavailableError when its settlement cannot be recorded (the message's fate went ahead all the same).
 */
export async function endFailed(job: JobContext, call: AnsweredCall, decision: Failure): Promise<JobOutcome> {
  const { event, start, deps } = job;
  const { now, owed, release } = call;
  const fate = await fateOf(job, call, decision);
  // Written before the message is requeued, kept or dead-lettered, so a second delivery of this event does not call
  // again. `failed` lets the next dispatch (the next attempt) claim the key; `dead-lettered` keeps every later claim
  // out, and is written before the message leaves: a worker stopping in between leaves a message whose next
  // dispatch finds the record and dead-letters it without calling (ended is ended).
  // The same write counts the call as an attempt the job spent, unless it is kept (the API refused the caller, or the
  // circuit is open): a FIFO job's attempt is that count (see attemptOf).
  await deps.stores.idempotency.putIdempotency(
    event.idempotencyKey,
    fate.action === 'dead-letter'
      ? { ...endedRecord('dead-lettered', event.dispatchId, now, deps.config), reason: fate.reason }
      : endedRecord('failed', event.dispatchId, now, deps.config),
    { spentAttempt: fate.action !== 'keep' },
  );
  // Recorded before the message is requeued, kept or dead-lettered. A failed call rarely owes one (only when the API
  // reports a usage other than the estimate); if it cannot be recorded, the message's fate goes ahead and the worker
  // fails with the settlement in its error (a retry must not wait on the ledger).
  const recorded = await recordOwed(event.lane, owed, start, deps);
  await releaseSlot(event.lane, release, start, deps);
  const outcome = await sendOnward(job, call, fate);
  if (!recorded && owed !== undefined)
    throw unrecorded(owed, 'the message was requeued, kept or dead-lettered all the same');
  return outcome;
}

/**
 * Reports a failed call to the circuit (see {@link reportFailure}) and returns its fate: `decision`, unless the call
 * was a 4xx and the circuit is no longer closed after the report, when the job is kept. A 429, or a circuit that no
 * longer lets dispatch through after the report, stops the job's batch (see `CircuitCheck.stop`).
 */
async function fateOf(
  { event, deps, circuit: check }: JobContext,
  { classification, now }: AnsweredCall,
  decision: Failure,
): Promise<Failure> {
  const delayMs = decision.action === 'retry' ? decision.delayMs : 0;
  // The API's own word: the batch's later calls stop before the report's write, which may take a while or fail.
  if (classification.kind === 'rate-limited') check.stop();
  // A report that cannot be written (DynamoDB unavailable, or its answer lost) must not stop the job's own record:
  // the worker would end without one, and the message's next dispatch would call again. The job's fate then goes on
  // as if the circuit had not moved; the next failure reports again.
  const circuit = await reportFailure(classification, delayMs, now, event.lane, deps).catch(() => undefined);
  if (circuit !== undefined && !isDispatchAllowed(circuit)) check.stop();
  // A 4xx is this job's own fault only while the circuit stays closed after its report: open, nothing is dispatched
  // and the job waits with the others, whether this run of refusals opened it or something else did. Except the job
  // of a circuit's trial: kept, it would be the next trial too, and a job the API refuses for itself would hold the
  // lane open for good; it goes with its reason, and the next trial tries another job.
  const waits = classification.kind === 'client-error' && circuit !== undefined && circuit.state.status !== 'closed';
  return waits && event.trial === undefined ? { action: 'keep', reason: classification.reason } : decision;
}

/**
 * Sends a failed job's message where its `fate` says: back to its queue without consuming an attempt (see
 * {@link returnUnconsumed}), to its dead-letter queue with the API's answer (see {@link deadLetterRecorded}), or to be
 * tried again after the fate's delay (see {@link retryLater}).
 */
async function sendOnward(
  { event, message, deps }: JobContext,
  { result, now }: AnsweredCall,
  fate: Failure,
): Promise<JobOutcome> {
  if (fate.action === 'keep') {
    // With its key: a copy left behind (a send that landed and lost its answer) then finds this job's record.
    await returnUnconsumed(deps.queues, message, event.idempotencyKey, event.attempt);
    return 'kept';
  }
  if (fate.action === 'dead-letter') {
    const apiError = result.kind === 'response' ? result.body : undefined;
    const record = endedRecord('dead-lettered', event.dispatchId, now, deps.config);
    await deadLetterRecorded(message, fate.reason, event, record, deps, apiError);
    return 'dead-lettered';
  }
  await retryLater(deps.queues, message, event.idempotencyKey, event.attempt, fate.delayMs);
  return 'retried';
}

/**
 * Why a job that holds its key gives it back without calling: it started after `callBy` (`late-start`: it claimed the
 * key as this dispatch's failure), it was ready only after `callBy` (`late-ready`: its claim, the key read or the
 * circuit's read took that long), the circuit stopped the lane while it waited for its slot (`held-back`), or its
 * caller could not get ready (`not-ready`: the key could not be read). Both late ones end as `too-late`.
 */
export type GiveBackReason = 'late-start' | 'late-ready' | 'held-back' | 'not-ready';

/**
 * Gives back a job that will not call: its reservation and its message, which goes back to its queue without
 * consuming an attempt (see {@link returnUnconsumed}); a batch's job leaves both to its batch. Nothing reached the
 * API, so the whole reservation flows back, and a job whose worker was ready too late (`late-start`, `late-ready`)
 * says how late, so that the orchestrator dispatches earlier. Only a delivery whose claim was written gets here, and
 * the store writes one claim per dispatch, never one of a dispatch that gave its reservation back (see
 * `ClaimRefusal`): so the reservation is given back once, and the message requeued by the delivery that holds it,
 * never by a late repeat of a dispatch that called.
 */
export async function giveBack(job: JobContext, reason: GiveBackReason): Promise<JobOutcome> {
  const { event, message, start, deps, options } = job;
  const now = deps.clock.now();
  // The key is claimed for a call that will not happen: the claim becomes this dispatch's failure (see processJob).
  if (reason !== 'late-start') {
    const failed = endedRecord('failed', event.dispatchId, now, deps.config);
    await deps.stores.idempotency.putIdempotency(event.idempotencyKey, failed);
  }
  // Given back once: the refund carries the dispatch id, and how late the worker was ready (an event sent before
  // there was one has no sentAt). If it cannot be recorded, the quota goes unused.
  const readyAt = reason === 'late-start' ? start : reason === 'late-ready' ? now : undefined;
  const refund: Settlement = { ...refundOf(event), ...(readyAt === undefined ? {} : lateness(job, readyAt)) };
  if (options.batch === undefined) {
    await recordSettlement(event.lane, start, deps, refund);
    await returnUnconsumed(deps.queues, message, event.idempotencyKey, event.attempt);
  } else {
    options.batch.refundLater(refund);
    options.batch.returnLater({ message, idempotencyKey: event.idempotencyKey, attempt: event.attempt });
  }
  return reason === 'held-back' || reason === 'not-ready' ? reason : 'too-late';
}

/**
 * How long a job whose key could not be claimed waits before it can be dispatched again (see
 * {@link giveBackUnclaimed}): a FIFO group goes on after a failed claim within seconds rather than after the message's
 * visibility (2 minutes), and while the table keeps failing, a FIFO message is received about 6 times a minute, not at
 * every dispatch: its queue's `fifoMaxReceiveCount` (100 by default) lasts a quarter of an hour of failed claims.
 */
export const UNCLAIMED_RETURN_DELAY_MS = 10_000;

/**
 * Gives back a job whose key could not be claimed (see `JobOutcome` `unclaimed`): its message, receivable again after
 * {@link UNCLAIMED_RETURN_DELAY_MS}, and its reservation if the refund's mark can be written. Whether the claim landed
 * is not known: if it did, the dispatch is marked already and nothing is given back (the quota goes unused, never
 * counted twice), and the next dispatch of the message stands back until this worker's time is up, when the claim,
 * which no success of its batch follows, gives way (see `claimKey`). If the mark cannot be written either, the quota
 * goes unused too.
 */
export async function giveBackUnclaimed(job: JobContext): Promise<JobOutcome> {
  const { event, message, start, deps, options } = job;
  const refunded = await claimRefund(event, start, deps).catch(() => false);
  const refund = refundOf(event);
  const delayMs = UNCLAIMED_RETURN_DELAY_MS;
  if (options.batch === undefined) {
    if (refunded) await recordSettlement(event.lane, start, deps, refund);
    await returnUnconsumed(deps.queues, message, event.idempotencyKey, event.attempt, delayMs);
  } else {
    if (refunded) options.batch.refundLater(refund);
    options.batch.returnLater({ message, idempotencyKey: event.idempotencyKey, attempt: event.attempt, delayMs });
  }
  return 'unclaimed';
}

/**
 * How late `job` was ready to call, at `readyAt`: after the slot of the message before it in its batch (see
 * `JobOptions.chainedAfter`), else after its event was sent.
 */
function lateness({ event, options }: JobContext, readyAt: number): Pick<Settlement, 'chainGapMs' | 'startDelayMs'> {
  if (options.chainedAfter !== undefined) return { chainGapMs: readyAt - options.chainedAfter };
  return Number.isFinite(event.sentAt) ? { startDelayMs: readyAt - event.sentAt } : {};
}
