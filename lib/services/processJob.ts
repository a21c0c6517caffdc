import { isDispatchAllowed } from '../domain/breaker/circuit';
import type { Circuit, CircuitEvent } from '../domain/breaker/state';
import { circuitPolicyFrom } from '../domain/breaker/policy';
import type { Classification } from '../domain/outcome/classify';
import { classify } from '../domain/outcome/classify';
import { decideRetry, type RetryDecision } from '../domain/outcome/retryPolicy';
import type { ApiResult } from '../domain/outcome/apiResult';
import type { Settlement } from '../domain/quota/ledger';
import type { Costs } from '../domain/quota/tiers';
import { usageSourcesOf } from '../domain/usage/unitSettings';
import { readUsage } from '../domain/usage/usageSources';
import type { ServiceConfig } from '../config';
import { StateUnavailableError } from '../errors';
import type { ApiCaller } from '../ports/ApiCaller';
import type { Clock } from '../ports/Clock';
import type { BatchEvent, HealthCheckEvent, JobEvent, WorkerEvent } from '../ports/Invoker';
import { ATTRIBUTES, fifoGroupOf, type QueueName, type QueueReceiver } from '../ports/QueueReceiver';
import type { CircuitStore } from '../ports/CircuitStore';
import { isStoppedBatchClaim, type IdempotencyRecord, type IdempotencyStore } from '../ports/IdempotencyStore';
import type { LedgerStore } from '../ports/LedgerStore';
import type { JobResult, ResultHandler } from '../ports/ResultHandler';
import { applyCircuitEvent, loadCircuit, type LaneCircuitTransition, type OnCircuitTransition } from './circuitUpdates';
import {
  deadLetter,
  retryLater,
  returnAllUnconsumed,
  returnUnconsumed,
  type MessageRef,
  type Unconsumed,
} from './queueOutcomes';

/** The stores a worker uses. */
export interface WorkerStores {
  readonly idempotency: IdempotencyStore;
  /** A worker only reports settlements; the orchestrator folds them into the ledger. */
  readonly ledger: Pick<LedgerStore, 'addSettlements'>;
  readonly circuit: CircuitStore;
}

/** What a worker needs. */
export interface WorkerDeps {
  readonly clock: Clock;
  readonly stores: WorkerStores;
  readonly queues: QueueReceiver;
  readonly api: ApiCaller;
  readonly config: ServiceConfig;
  /** Randomness in [0, 1) for retry jitter. */
  readonly random: () => number;
  /**
   * Told the API's answer to each job whose call succeeded, once its success is recorded (see {@link ResultHandler}).
   * @default none: the answers are dropped
   */
  readonly results?: ResultHandler;
  /** Receives typed events for logs and metrics; the work never depends on it. */
  readonly onEvent?: (event: WorkerReport) => void;
}

/** The ids that follow one job through the logs: its message, its dispatch and its idempotency key. */
export interface JobKeys {
  readonly messageId: string;
  readonly dispatchId: string;
  readonly idempotencyKey: string;
}

/** What a worker reports as it goes (times are epoch ms). */
export type WorkerReport =
  /** This worker's circuit write recorded a transition (see `circuitTransitionsOf`): a change of status, with its reason. */
  | ({ readonly type: 'circuit-transition' } & LaneCircuitTransition)
  /** A job's API call ended at `at`, classified as `result` (`rate-limited` is a 429). */
  | ({
      readonly type: 'api-called';
      readonly lane: string;
      readonly at: number;
      readonly result: Classification['kind'];
    } & JobKeys)
  /** A job's message was sent to its dead-letter queue with `reason`. */
  | ({ readonly type: 'dead-lettered'; readonly lane: string; readonly at: number; readonly reason: string } & JobKeys)
  /**
   * A succeeded job's result could not be handed to {@link WorkerDeps.results} (the destination refused it or could
   * not be reached): it is dropped, and the job stays succeeded (its API call is never made again).
   */
  | ({
      readonly type: 'result-undelivered';
      readonly lane: string;
      readonly at: number;
      readonly reason: string;
    } & JobKeys);

/**
 * How a job of a batch ends a success: the batch records, deletes and reports its successes together, once all its
 * jobs have ended (see {@link processBatch}).
 */
export interface BatchEnding {
  /** The batch's id: the job's claim names it, and so points to where the batch records its successes. */
  readonly id: string;
  /**
   * Told of a success that owes no settlement, instead of writing the job's own success record: the batch records it
   * with the others (see {@link IdempotencyStore.recordBatchSuccesses}).
   */
  readonly succeeded: (event: JobEvent) => void;
  /** Told of a succeeded job's message, instead of deleting it. */
  readonly deleteLater: (queue: QueueName, receiptHandle: string) => void;
  /** Told of a reservation given back by a job that started too late, instead of recording it. */
  readonly refundLater: (refund: Settlement) => void;
  /** Told of a job that started too late, instead of returning it to its queue (see {@link returnAllUnconsumed}). */
  readonly returnLater: (job: Unconsumed) => void;
  /** Told of a succeeded job's result, instead of handing it to {@link WorkerDeps.results}. */
  readonly resultLater: (result: JobResult) => void;
}

/** How {@link processJob} handles a job: alone by default, or as one of a batch. */
export interface JobOptions {
  readonly batch?: BatchEnding;
  /**
   * Whether the job may still call at its slot (see {@link CircuitView}), shared by a batch's jobs.
   * @default the job's own
   */
  readonly circuitAllows?: (slotAt: number) => Promise<boolean>;
  /**
   * The slot of the message before this one of its FIFO group in the same batch, which ended just now: this job
   * waited for it. If it is then too late to call, its refund says how long after that slot it could start (see
   * `Settlement.chainGapMs`), not its start delay: the worker did not start late.
   */
  readonly chainedAfter?: number;
}

/** How one job event ended for this delivery. */
export type JobOutcome =
  | 'succeeded'
  | 'retried'
  | 'dead-lettered'
  /** The job already ended (a success or a dead-lettering is recorded for this key): the API was not called again. */
  | 'duplicate'
  /** Another delivery is calling the API for this key right now: this one stood back. */
  | 'busy-elsewhere'
  /** This very dispatch was delivered before and its call failed (the message was requeued or kept): nothing to do. */
  | 'already-failed'
  /** This very dispatch was delivered before and dead-lettered its message: nothing to do. */
  | 'already-ended'
  /** The API refused the caller, not the job: the job went back to its queue without consuming an attempt. */
  | 'kept'
  /**
   * The worker started after the event's `callBy`: no call; the reservation was given back and the job went back to
   * its queue, without consuming an attempt (a FIFO message's receive is counted all the same), to be dispatched again.
   */
  | 'too-late'
  /**
   * The circuit opened (or a 429 paused the lane) while the job waited for its slot: no call; the reservation was
   * given back and the job went back to its queue as a job that started too late does.
   */
  | 'held-back'
  /**
   * An earlier message of its FIFO group in the same batch did not end (it will be tried again, or another delivery
   * has it): no call, so that the group keeps its order; the reservation was given back and the job went back to its
   * queue as a job that started too late does.
   */
  | 'behind-unfinished';

/**
 * Handles one job: calls the API at most once per dispatch, and never again after a recorded success; then deletes,
 * retries, keeps or dead-letters the message, reports every result that concerns the circuit (transient failures,
 * 429s, 4xx refusals, and a success ending a run of refusals), and settles the reservation when the actual cost
 * differs from the reserved one (or nothing reached the API).
 *
 * A job refused with 401 or 403 is kept (see {@link returnUnconsumed}), and so is one refused with another 4xx once
 * the circuit is open after its report: the refusal then says the caller may be wrong, not the job.
 */
export async function processJob(event: JobEvent, deps: WorkerDeps, options: JobOptions = {}): Promise<JobOutcome> {
  const { clock, stores, queues, api, config } = deps;
  const message = messageOf(event);
  const start = clock.now();
  const settle = (owed: Settlement | undefined): Promise<boolean> => recordOwed(event.lane, owed, start, deps);
  const failed = (at: number): IdempotencyRecord => ({
    status: 'failed',
    dispatchId: event.dispatchId,
    at,
    expiresAt: at + config.orchestrator.idempotencyTtlMs,
  });
  const giveBack = async (lateStart: boolean, outcome: 'too-late' | 'held-back' = 'too-late'): Promise<JobOutcome> => {
    // Given back once: the refund carries the dispatch id, and the start delay of a late start (an event sent before
    // there was one has no sentAt). If it cannot be recorded, the quota goes unused.
    const late = !lateStart
      ? {}
      : options.chainedAfter !== undefined
        ? { chainGapMs: start - options.chainedAfter }
        : Number.isFinite(event.sentAt)
          ? { startDelayMs: start - event.sentAt }
          : {};
    const refund: Settlement = { reservation: event.reservation, actual: null, id: event.dispatchId, ...late };
    const unconsumed = { message: withKey(message, event.idempotencyKey), attempt: event.attempt };
    if (options.batch === undefined) {
      await settle(refund);
      await returnUnconsumed(queues, unconsumed.message, unconsumed.attempt);
    } else {
      options.batch.refundLater(refund);
      options.batch.returnLater(unconsumed);
    }
    return outcome;
  };
  // The key is claimed for a call that will not happen: the claim becomes this dispatch's failure (see below).
  const giveBackClaimed = async (outcome: 'too-late' | 'held-back'): Promise<JobOutcome> => {
    await stores.idempotency.putIdempotency(event.idempotencyKey, failed(clock.now()));
    return giveBack(false, outcome);
  };

  // The key is claimed before the wait for the slot, so that nothing but the call itself follows the slot: the call
  // leaves within the timer's lateness of it. A worker already late claims the key as this dispatch's failure: no
  // other delivery of this event can call after it (a 'failed' record of a dispatch keeps out only that dispatch),
  // and one that already claimed it keeps it.
  const lateAtStart = start > event.callBy;
  const claim: IdempotencyRecord = lateAtStart ? failed(start) : inProgress(event, start, config, options.batch);
  const held = await claimKey(event.idempotencyKey, claim, start, deps);
  if (held !== null) return standBack(held, event, message, start, deps);
  if (lateAtStart) return giveBack(true);
  // The lead and a batch's span can be long: the circuit is checked again just before the slot, as the orchestrator
  // checks it before a dispatch.
  const ahead = event.slotAt - CIRCUIT_CHECK_AHEAD_MS - clock.now();
  if (ahead > 0) await clock.sleep(ahead);
  const circuitAllows = options.circuitAllows ?? new CircuitView(event.sentAt, event.lane, deps).allows;
  if (!(await circuitAllows(event.slotAt))) return giveBackClaimed('held-back');
  // The claim itself took this worker past `callBy`.
  if (!(await holdToSlot(event, clock))) return giveBackClaimed('too-late');

  const result = await api.call(event.body, { idempotencyKey: event.idempotencyKey });
  const now = clock.now();
  const classification = classify(result, now);
  deps.onEvent?.({ type: 'api-called', lane: event.lane, at: now, result: classification.kind, ...keysOf(event) });
  const decision = decideRetry(
    { classification, attempt: event.attempt, refillMs: refillMs(config), random: deps.random },
    config.retry,
  );
  const { owed, release } = owedBy(event, usageOf(result, config), config);
  if (decision.action === 'succeed')
    return endSucceeded(event, message, result, { owed, release }, now, start, deps, options);
  const circuit = await reportFailure(
    classification,
    decision.action === 'retry' ? decision.delayMs : 0,
    now,
    event.lane,
    deps,
  );
  // A 4xx is this job's own fault only while the circuit stays closed after its report: open, nothing is dispatched
  // and the job waits with the others, whether this run of refusals opened it or something else did.
  const fate: Exclude<RetryDecision, { action: 'succeed' }> =
    classification.kind === 'client-error' && circuit !== undefined && circuit.state.status !== 'closed'
      ? { action: 'keep', reason: classification.reason }
      : decision;
  // Written before the message is requeued, kept or dead-lettered, so a second delivery of this event does not call
  // again. `failed` lets the next dispatch (the next attempt) claim the key; `dead-lettered` keeps every later claim
  // out, and is written before the message leaves: a worker stopping in between leaves a message whose next
  // dispatch finds the record and dead-letters it without calling (ended is ended).
  const expiresAt = now + config.orchestrator.idempotencyTtlMs;
  await stores.idempotency.putIdempotency(
    event.idempotencyKey,
    fate.action === 'dead-letter'
      ? { status: 'dead-lettered', dispatchId: event.dispatchId, at: now, expiresAt, reason: fate.reason }
      : failed(now),
  );
  // Recorded before the message is requeued, kept or dead-lettered. A failed call rarely owes one (only when the API
  // reports a usage other than the estimate); if it cannot be recorded, the message's fate goes ahead and the worker
  // fails with the settlement in its error (a retry must not wait on the ledger).
  const recorded = await settle(owed);
  await releaseSlot(event.lane, release, deps);
  const throwUnlessRecorded = (): void => {
    if (!recorded && owed !== undefined)
      throw unrecorded(owed, 'the message was requeued, kept or dead-lettered all the same');
  };
  if (fate.action === 'keep') {
    await returnUnconsumed(queues, message, event.attempt);
    throwUnlessRecorded();
    return 'kept';
  }
  if (fate.action === 'dead-letter') {
    const apiError = result.kind === 'response' ? result.body : undefined;
    await deadLetterRecorded(
      message,
      fate.reason,
      event,
      { status: 'dead-lettered', dispatchId: event.dispatchId, at: now, expiresAt },
      deps,
      apiError,
    );
    throwUnlessRecorded();
    return 'dead-lettered';
  }
  await retryLater(queues, withKey(message, event.idempotencyKey), event.attempt, fate.delayMs);
  throwUnlessRecorded();
  return 'retried';
}

/**
 * Ends a job whose call succeeded at `now`: records what it owes the ledger (held in the success record until then),
 * writes the success record, hands its result on (see {@link handOnResult}), deletes the message, and reports the
 * success to the circuit (unless `options` leaves either to its caller).
 * @throws StateUnavailableError when its settlement cannot be recorded (the message is kept if the record holds it;
 * the result is handed on all the same: the job has succeeded either way).
 */
async function endSucceeded(
  event: JobEvent,
  message: MessageRef,
  result: ApiResult,
  { owed, release }: Owed,
  now: number,
  start: number,
  deps: WorkerDeps,
  options: JobOptions,
): Promise<JobOutcome> {
  const { stores, queues, config } = deps;
  const succeeded = successRecord(event.dispatchId, now, config);
  await releaseSlot(event.lane, release, deps);
  if (owed !== undefined) {
    // The record holds the settlement until it is recorded, and the message stays until then: a worker that dies or
    // cannot reach DynamoDB in between leaves both, and the message's next dispatch finds the record (no second
    // call) and records the settlement (see recordOwedSettlement).
    const holding = await stores.idempotency
      .putIdempotency(event.idempotencyKey, { ...succeeded, settlement: owed })
      .then(
        () => true,
        () => false,
      );
    if (!(await recordSettlement(event.lane, start, deps, owed))) {
      // Without a record, the message must go all the same, or its next dispatch would call again: ended is ended.
      if (!holding) await queues.delete(message.queue, message.receiptHandle);
      await handOnResult(event, result, now, deps, options.batch);
      throw unrecorded(owed, holding ? 'its success record holds it, and the message was kept' : 'it is lost');
    }
  }
  // The record first, then the delete: a worker stopping in between leaves a message whose next dispatch finds the
  // record (no second call) and deletes it. A record that cannot be written does not keep the message: with the
  // message gone no dispatch follows, and a further delivery of this very dispatch, however late, finds that it
  // claimed the key (a dispatch claims it once). A batch records its successes together, before its deletes, unless
  // a record of the job's own held a settlement.
  const { batch } = options;
  if (batch !== undefined && owed === undefined) batch.succeeded(event);
  else await stores.idempotency.putIdempotency(event.idempotencyKey, succeeded).catch(() => undefined);
  await handOnResult(event, result, now, deps, batch);
  if (batch !== undefined) {
    batch.deleteLater(message.queue, message.receiptHandle);
    return 'succeeded';
  }
  await queues.delete(message.queue, message.receiptHandle);
  // Last, once the job is done: it ends a run of 4xx refusals (a read, and a write only when there is a run).
  await endRefusalRun(now, event.lane, deps);
  return 'succeeded';
}

/**
 * Hands the result of `event`'s successful call on to {@link WorkerDeps.results}, if any, or to its batch, which hands
 * its jobs' results on together once their successes are recorded.
 *
 * Once a success is recorded the job has ended, whatever becomes of its result: a result the handler does not take
 * (the destination refuses it, or cannot be reached past its client's retries) is reported as `result-undelivered`
 * (see {@link WorkerDeps.onEvent}) and dropped, and the worker goes on. Never calling the API again for a success
 * matters more than its result. So a result is delivered at most once: it is also lost when the worker stops between
 * the success record and the hand-over, since a later dispatch of the job finds the success and makes no call.
 */
async function handOnResult(
  event: JobEvent,
  result: ApiResult,
  now: number,
  deps: WorkerDeps,
  batch: BatchEnding | undefined,
): Promise<void> {
  if (deps.results === undefined || result.kind !== 'response') return;
  const jobResult: JobResult = {
    lane: event.lane,
    queue: event.queue,
    messageId: event.messageId,
    dispatchId: event.dispatchId,
    idempotencyKey: event.idempotencyKey,
    ...(event.groupId === undefined ? {} : { groupId: event.groupId }),
    attempt: event.attempt,
    at: now,
    status: result.status,
    headers: result.headers,
    body: result.body ?? '',
    bodyTruncated: result.bodyTruncated ?? false,
  };
  if (batch === undefined) await deliverResults([jobResult], deps);
  else batch.resultLater(jobResult);
}

/** Hands `results` to {@link WorkerDeps.results}, reporting each it did not take (see {@link handOnResult}); never throws. */
async function deliverResults(results: readonly JobResult[], deps: WorkerDeps): Promise<void> {
  const { results: handler } = deps;
  if (handler === undefined || results.length === 0) return;
  const undelivered = await handler
    .deliver(results)
    .catch((error: unknown) =>
      results.map((result) => ({ result, reason: (error as Error).message ?? String(error) })),
    );
  const at = deps.clock.now();
  for (const { result, reason } of undelivered) {
    const { lane, messageId, dispatchId, idempotencyKey } = result;
    deps.onEvent?.({ type: 'result-undelivered', lane, at, reason, messageId, dispatchId, idempotencyKey });
  }
}

/** The record of dispatch `dispatchId`'s success at `at`, kept for the idempotency TTL. */
function successRecord(
  dispatchId: string,
  at: number,
  config: ServiceConfig,
): IdempotencyRecord & { status: 'succeeded' } {
  return { status: 'succeeded', dispatchId, at, expiresAt: at + config.orchestrator.idempotencyTtlMs };
}

/**
 * The claim of a worker on time, kept for the idempotency TTL with its worker's time marked (see `BatchClaim`): it
 * names its batch, and a job alone is a batch of one, named by its own dispatch. So a claim whose worker stopped
 * after its call and before its success record outlives its time, and a late delivery of the same dispatch finds it
 * and makes no second call (see {@link claimKey}); the next dispatch takes it over.
 */
function inProgress(
  event: JobEvent,
  start: number,
  config: ServiceConfig,
  batch: BatchEnding | undefined,
): IdempotencyRecord {
  const { dispatchId } = event;
  const busyUntil = start + config.orchestrator.workerTimeoutMs;
  return {
    status: 'in-progress',
    dispatchId,
    expiresAt: start + config.orchestrator.idempotencyTtlMs,
    batch: { id: batch?.id ?? dispatchId, busyUntil },
  };
}

/**
 * Claims `key` with `claim` (see {@link IdempotencyStore.putIdempotencyIfAbsent}). A stopped batch claim in the way
 * is looked up in its batch's record: a success recorded there holds the key as a success record would; without one,
 * its worker stopped (it may or may not have called), and the claim of another dispatch replaces it, as it would an
 * expired claim. One of the same dispatch keeps the key: a dispatch claims its key once, since that claim may have
 * called.
 * @returns `null` when claimed, else the record that holds the key.
 */
async function claimKey(
  key: string,
  claim: IdempotencyRecord,
  now: number,
  deps: WorkerDeps,
): Promise<IdempotencyRecord | null> {
  const { idempotency } = deps.stores;
  const held = await idempotency.putIdempotencyIfAbsent(key, claim, now);
  if (held === null || !isStoppedBatchClaim(held, now)) return held;
  const at = await idempotency.batchSuccessAt(held.batch.id, held.dispatchId);
  if (at !== undefined) return { status: 'succeeded', dispatchId: held.dispatchId, at, expiresAt: held.expiresAt };
  if (held.dispatchId === claim.dispatchId) return held;
  return idempotency.putIdempotencyIfAbsent(key, claim, now, held.dispatchId);
}

/**
 * What a dispatch whose call ended owes the orchestrator: `owed`, a settlement, when the call used other than its
 * estimates (it also frees the call slot); else, on a lane with `maxInFlight`, a settlement that changes no count and
 * only frees the slot (`release`).
 */
interface Owed {
  readonly owed?: Settlement;
  readonly release?: Settlement;
}

/** What `event`'s call owes, having used `usage` (the units its answer reports; the others used their estimate). See {@link Owed}. */
function owedBy(event: JobEvent, usage: Costs, config: ServiceConfig): Owed {
  const settlement: Settlement = { reservation: event.reservation, actual: usage, id: event.dispatchId };
  const differs = Object.entries(usage).some(([unit, used]) => used !== (event.reservation.costs[unit] ?? 0));
  if (differs) return { owed: settlement };
  return config.maxInFlight === undefined ? {} : { release: { ...settlement, actual: {} } };
}

/**
 * Records `release`, if any, to free the call slot of its dispatch: once, without the back-off of a settlement, since
 * a release that is lost costs no quota, only the slot until the call could no longer be running.
 */
async function releaseSlot(lane: string, release: Settlement | undefined, deps: WorkerDeps): Promise<void> {
  if (release !== undefined) await deps.stores.ledger.addSettlements(lane, release).catch(() => undefined);
}

/** Records `owed`, if any (see {@link recordSettlement}); false when it could not be recorded. */
function recordOwed(lane: string, owed: Settlement | undefined, start: number, deps: WorkerDeps): Promise<boolean> {
  return owed === undefined ? Promise.resolve(true) : recordSettlement(lane, start, deps, owed);
}

/**
 * What a delivery does when the job's key is held (`held`): it makes no call. Only a different dispatch gives its
 * reservation back, and only once (see {@link refundOnce}; a refund that cannot be recorded leaves quota unused,
 * never exceeded). A job that ended leaves its copy of the message to be deleted or, when its dead-lettering may have
 * stopped short of the DLQ, dead-lettered with the recorded reason.
 */
async function standBack(
  held: IdempotencyRecord,
  event: JobEvent,
  message: MessageRef,
  start: number,
  deps: WorkerDeps,
): Promise<JobOutcome> {
  const { queues } = deps;
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
    // one sends it there; without, it only deletes its copy.
    if (held.dispatchId === event.dispatchId) return 'already-ended';
    if (held.reason === undefined) await queues.delete(message.queue, message.receiptHandle);
    else await deadLetterRecorded(message, held.reason, event, held, deps);
    return 'duplicate';
  }
  return held.status === 'failed' ? 'already-failed' : 'busy-elsewhere';
}

/**
 * Holds the worker to the event's slot: waits for `slotAt` if it is still ahead, then tells whether the call may
 * start, which it may until `callBy` (later, it could reach the API after the arrival margin).
 */
async function holdToSlot(event: JobEvent, clock: Clock): Promise<boolean> {
  const early = event.slotAt - clock.now();
  if (early > 0) await clock.sleep(early);
  return clock.now() <= event.callBy;
}

/** How long before a job's slot its worker asks whether the circuit still allows the call. */
const CIRCUIT_CHECK_AHEAD_MS = 50;

/**
 * How long a reading of the circuit by a batch's checks stands in for the read that ends a run of refusals (see
 * {@link endRefusalRun}): as long as the eventually consistent read it spares may lag.
 */
const REFUSAL_RUN_READING_MS = 1_000;

/**
 * A worker event's view of the circuit. {@link CircuitView.allows} tells whether its jobs may still call: the circuit
 * closed and the lane paused neither by an operator nor by a 429, as read no longer than `circuitPollMs` ago (the orchestrator's reading when
 * it sent the event counts as the first). The lead grows to 1.5 s while workers start late, and a batch spans as long:
 * without this, jobs would go on calling a failing API after the circuit opened. So no job calls more than
 * `circuitPollMs` (and a read's time) after the circuit opened, as none is dispatched; at the configured lead a job
 * alone needs no read. The jobs of a batch share one read at a time. A read still unanswered at the slot, or one that
 * failed, leaves the last reading in force: the check never makes a call late, and a DynamoDB error does not stop the
 * work.
 */
class CircuitView {
  private knownAt: number;
  private allowsNow = true;
  private reading: Promise<void> | undefined;
  /** The run of 4xx refusals the last read found, and when it was read. */
  private refusals: { readonly run: number; readonly at: number } | undefined;

  constructor(
    sentAt: number,
    private readonly lane: string,
    private readonly deps: WorkerDeps,
  ) {
    this.knownAt = Number.isFinite(sentAt) ? sentAt : Number.NEGATIVE_INFINITY;
  }

  /** Whether a job whose slot is `slotAt` may still call (see {@link CircuitView}). */
  readonly allows = async (slotAt: number): Promise<boolean> => {
    const { clock, stores, config } = this.deps;
    const readAt = clock.now();
    if (!this.allowsNow || readAt - this.knownAt <= config.orchestrator.circuitPollMs) return this.allowsNow;
    this.reading ??= loadCircuit(stores.circuit, this.lane)
      .then((circuit) => {
        this.knownAt = readAt;
        this.allowsNow = isDispatchAllowed(circuit) && circuit.pausedUntil <= clock.now();
        this.refusals = { run: circuit.clientErrorRun, at: readAt };
      })
      .catch(() => undefined)
      .finally(() => {
        this.reading = undefined;
      });
    await Promise.race([this.reading, clock.sleep(Math.max(0, slotAt - readAt))]);
    return this.allowsNow;
  };

  /** The run of 4xx refusals as read less than {@link REFUSAL_RUN_READING_MS} before `now`, if a check read it. */
  refusalRunAt(now: number): number | undefined {
    return this.refusals !== undefined && now - this.refusals.at < REFUSAL_RUN_READING_MS
      ? this.refusals.run
      : undefined;
  }
}

/** The message `event` dispatches. */
function messageOf(event: JobEvent): MessageRef {
  return {
    queue: event.queue,
    messageId: event.messageId,
    receiptHandle: event.receiptHandle,
    body: event.body,
    attributes: event.attributes,
    ...(event.groupId === undefined ? {} : { groupId: event.groupId }),
  };
}

/**
 * `message` carrying the job's key as an attribute. A requeued copy gets a new message id, so every attempt of a job
 * shares one key, and a late redelivery of an earlier attempt's event finds the later attempt's success.
 */
function withKey(message: MessageRef, idempotencyKey: string): MessageRef {
  return {
    ...message,
    attributes: { ...message.attributes, [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: idempotencyKey } },
  };
}

/** How a health-check event ended. */
export type HealthCheckOutcome =
  | 'healthy'
  | 'unhealthy'
  /** The check was no longer current (replaced, already started, timed out, or the circuit moved on): no call. */
  | 'not-current';

/**
 * Claims the circuit's half-open trial `event.checkId` with a conditional write, and only if that write is this
 * delivery's, probes the API and records the verdict. Another delivery of the same event, a late one, or one of a
 * replaced check finds the claim refused and makes no call: so at most one probe runs at a time.
 */
export async function processHealthCheck(event: HealthCheckEvent, deps: WorkerDeps): Promise<HealthCheckOutcome> {
  const { clock, stores, api, config } = deps;
  const policy = circuitPolicyFrom(config.circuit);
  const claim = await applyCircuitEvent(
    stores.circuit,
    event.lane,
    { type: 'health-check-started', checkId: event.checkId },
    clock.now(),
    policy,
    transitionsOf(deps),
  );
  if (!claim.written) return 'not-current';
  const result = await api.probe();
  const now = clock.now();
  const healthy = classify(result, now).kind === 'success';
  const type = healthy ? 'health-check-ok' : 'health-check-failed';
  await applyCircuitEvent(
    stores.circuit,
    event.lane,
    { type, checkId: event.checkId },
    now,
    policy,
    transitionsOf(deps),
  );
  return healthy ? 'healthy' : 'unhealthy';
}

/** How a worker event ended: a job's outcome, each job's of a batch in its order, or a health check's. */
export type WorkerOutcome = JobOutcome | readonly JobOutcome[] | HealthCheckOutcome;

/**
 * Handles a batch's jobs side by side, each as {@link processJob} handles a job alone: each waits for its own slot,
 * so the calls go out at their slots, not together. A job that fails does not stop the others, but the messages of
 * one FIFO group go in order, each after the one before has ended (see {@link inGroupOrder}). Once all have ended,
 * the reservations of the jobs that started too late are given back in one write and the jobs sent back to the
 * requeue queue ten to a request, and the successes are recorded in one write under the batch's id (the first job's
 * dispatch id), which their claims name; their messages and the originals of the jobs sent back are then deleted ten
 * to a request, and the successes reported to the circuit once. If that write fails, each success gets a
 * record of its own, as a job alone does. The successes' results are handed on together once recorded, before the
 * deletes (see {@link handOnResult}). A message whose delete failed reappears, and its next dispatch finds its
 * success.
 * @throws Error naming each job that failed (its message reappears for another dispatch), once all have ended.
 */
export async function processBatch(event: BatchEvent, deps: WorkerDeps): Promise<JobOutcome[]> {
  const { clock, stores, queues, config } = deps;
  const start = clock.now();
  const succeeded: JobEvent[] = [];
  const refunds: Settlement[] = [];
  const returns: Unconsumed[] = [];
  const results: JobResult[] = [];
  const deletes = new Map<QueueName, string[]>();
  const batch: BatchEnding = {
    id: event.jobs[0]?.dispatchId ?? '',
    succeeded: (job) => succeeded.push(job),
    deleteLater: (queue, receiptHandle) => deletes.set(queue, [...(deletes.get(queue) ?? []), receiptHandle]),
    refundLater: (refund) => refunds.push(refund),
    returnLater: (job) => returns.push(job),
    resultLater: (result) => results.push(result),
  };
  const circuit = new CircuitView(event.sentAt, event.lane, deps);
  const settled = await Promise.allSettled(
    inGroupOrder(
      event.jobs,
      (job, chainedAfter) => processJob(job, deps, { batch, circuitAllows: circuit.allows, chainedAfter }),
      (job) => standDown(job, batch, deps),
    ),
  );
  // Given back in one write; if it cannot be recorded, the quota goes unused, as for a job alone. Then the jobs go
  // back to their queues, their originals deleted with the successes'.
  if (refunds.length > 0) await recordSettlement(event.lane, start, deps, ...refunds);
  const { toDelete, problems } = await returnAllUnconsumed(queues, returns);
  for (const message of toDelete) batch.deleteLater(message.queue, message.receiptHandle);
  const outcomes = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  const failures = [
    ...settled.flatMap((s, i) =>
      s.status === 'rejected' ? [`${event.jobs[i]?.messageId}: ${(s.reason as Error).message}`] : [],
    ),
    ...problems,
  ];
  const now = clock.now();
  if (succeeded.length > 0) {
    await stores.idempotency
      .recordBatchSuccesses(
        batch.id,
        succeeded.map((job) => job.dispatchId),
        now,
        now + config.orchestrator.idempotencyTtlMs,
      )
      .catch(() =>
        Promise.all(
          succeeded.map((job) =>
            stores.idempotency
              .putIdempotency(job.idempotencyKey, successRecord(job.dispatchId, now, config))
              .catch(() => undefined),
          ),
        ),
      );
  }
  await deliverResults(results, deps);
  for (const [queue, handles] of deletes)
    await queues
      .deleteBatch(queue, handles)
      .catch((error: unknown) =>
        failures.push(`deleting ${handles.length} from ${queue}: ${(error as Error).message}`),
      );
  if (outcomes.includes('succeeded'))
    await endRefusalRun(clock.now(), event.lane, deps, circuit.refusalRunAt(clock.now()));
  if (failures.length > 0)
    throw new Error(`the batch of ${event.jobs.length} jobs failed in part: ${failures.join('; ')}`, {
      cause: settled.find((s) => s.status === 'rejected')?.reason,
    });
  return outcomes as JobOutcome[];
}

/** Outcomes after which a job has ended: the next message of its FIFO group may be called. */
const ENDED: ReadonlySet<JobOutcome> = new Set(['succeeded', 'dead-lettered', 'duplicate', 'already-ended']);
/**
 * Outcomes of a job that another delivery has (of its dispatch, or of another dispatch of its message): that one has
 * the rest of its FIFO group too, or their messages reappear after their visibility, in order.
 */
const ELSEWHERE: ReadonlySet<JobOutcome> = new Set(['busy-elsewhere', 'already-failed']);

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
 * {@link IdempotencyStore.claimRefund}). A later delivery of the batch calls it no more: the earlier message's claim
 * keeps that one from ending there too (see {@link claimKey}).
 */
async function standDown(job: JobEvent, batch: BatchEnding, deps: WorkerDeps): Promise<JobOutcome> {
  const start = deps.clock.now();
  if (
    !(await deps.stores.idempotency.claimRefund(
      job.idempotencyKey,
      job.dispatchId,
      start + deps.config.orchestrator.idempotencyTtlMs,
    ))
  )
    return 'busy-elsewhere';
  batch.refundLater({ reservation: job.reservation, actual: null, id: job.dispatchId });
  batch.returnLater({ message: withKey(messageOf(job), job.idempotencyKey), attempt: job.attempt });
  return 'behind-unfinished';
}

/** The worker's entry point for every kind of event. */
export async function processWorkerEvent(event: WorkerEvent, deps: WorkerDeps): Promise<WorkerOutcome> {
  switch (event.kind) {
    case 'job':
      return processJob(event, deps);
    case 'batch':
      return processBatch(event, deps);
    default:
      return processHealthCheck(event, deps);
  }
}

/**
 * Reports a failed call to the circuit: a 429 pauses the lane until the API's Retry-After (or the retry delay); a
 * transient failure counts toward opening; a refusal of the caller (401, 403) opens it; another 4xx lengthens the
 * run of refusals. Returns the circuit after the report, `undefined` when the result is none of the circuit's business.
 */
async function reportFailure(
  classification: Classification,
  delayMs: number,
  now: number,
  lane: string,
  deps: WorkerDeps,
): Promise<Circuit | undefined> {
  const event = circuitEventOf(classification, delayMs, now);
  return event === undefined ? undefined : reportToCircuit(event, now, lane, deps);
}

function circuitEventOf(classification: Classification, delayMs: number, now: number): CircuitEvent | undefined {
  switch (classification.kind) {
    case 'rate-limited':
      return { type: 'rate-limited', retryAt: now + (classification.retryAfterMs ?? delayMs) };
    case 'transient':
      return { type: 'transient-failure' };
    case 'caller-rejected':
      return { type: 'caller-rejected', reason: classification.reason };
    case 'client-error':
      return { type: 'client-error', reason: classification.reason };
    default:
      return undefined;
  }
}

/**
 * Reports a success to the lane's circuit when it ends a run of 4xx refusals, the only change a success makes. The run
 * is read eventually consistent (half a read unit), unless a batch's circuit check read it `known` less than a second
 * ago: either way a run that began in the last second may be missed, and then the next success ends it, or the next
 * refusal lengthens it by one more than it should.
 */
async function endRefusalRun(now: number, lane: string, deps: WorkerDeps, known?: number): Promise<void> {
  if ((known ?? (await deps.stores.circuit.refusalRun(lane))) > 0)
    await reportToCircuit({ type: 'success' }, now, lane, deps);
}

/** Applies `event` to the lane's circuit, tells {@link WorkerDeps.onEvent} of a change of status it wrote, and returns the circuit after. */
async function reportToCircuit(event: CircuitEvent, now: number, lane: string, deps: WorkerDeps): Promise<Circuit> {
  const { after } = await applyCircuitEvent(
    deps.stores.circuit,
    lane,
    event,
    now,
    circuitPolicyFrom(deps.config.circuit),
    transitionsOf(deps),
  );
  return after;
}

/** The hook that hands the circuit transitions a worker writes to {@link WorkerDeps.onEvent}. */
function transitionsOf(deps: WorkerDeps): OnCircuitTransition | undefined {
  const { onEvent } = deps;
  return onEvent === undefined ? undefined : (transition) => onEvent({ type: 'circuit-transition', ...transition });
}

/** The ids of `event`'s job, for its log lines. */
function keysOf(event: JobEvent): JobKeys {
  return { messageId: event.messageId, dispatchId: event.dispatchId, idempotencyKey: event.idempotencyKey };
}

/** First wait between tries of a settlement, doubling up to {@link SETTLEMENT_MAX_BACKOFF_MS}. */
const SETTLEMENT_BACKOFF_MS = 100;
/** Longest wait between tries of a settlement. */
const SETTLEMENT_MAX_BACKOFF_MS = 2_000;
/** Share of a worker's time (from its start) by which its last try of a settlement begins: the rest ends the message. */
const SETTLEMENT_TRIES_SHARE = 0.75;

/**
 * Appends `settlements` to the lane's pending list in one write, trying again with back-off while the store fails
 * (DynamoDB down or throttling) until {@link SETTLEMENT_TRIES_SHARE} of the worker's time (from `start`) has passed; it
 * always tries once.
 * @returns false when every try failed.
 */
async function recordSettlement(
  lane: string,
  start: number,
  deps: WorkerDeps,
  ...settlements: Settlement[]
): Promise<boolean> {
  const { clock, stores, config } = deps;
  const lastTryBy = start + SETTLEMENT_TRIES_SHARE * config.orchestrator.workerTimeoutMs;
  for (let waitMs = SETTLEMENT_BACKOFF_MS; ; waitMs = Math.min(SETTLEMENT_MAX_BACKOFF_MS, 2 * waitMs)) {
    try {
      await stores.ledger.addSettlements(lane, ...settlements);
      return true;
    } catch {
      if (clock.now() + waitMs > lastTryBy) return false;
      await clock.sleep(waitMs);
    }
  }
}

/**
 * Records the settlement a success record `held` owes, if any (its worker could not record it and kept the message),
 * then writes the record again without it, so that it is recorded once.
 * @throws StateUnavailableError when it still cannot be recorded: the message is kept for a later dispatch to try again.
 */
async function recordOwedSettlement(
  event: JobEvent,
  held: IdempotencyRecord & { status: 'succeeded' },
  start: number,
  deps: WorkerDeps,
): Promise<void> {
  const { settlement, ...record } = held;
  if (settlement === undefined) return;
  if (!(await recordSettlement(event.lane, start, deps, settlement)))
    throw unrecorded(
      settlement,
      `the success record of key '${event.idempotencyKey}' still holds it, and the message was kept`,
    );
  await deps.stores.idempotency.putIdempotency(event.idempotencyKey, record);
}

/**
 * Gives back the reservation of a dispatch that does not call (another dispatch holds or ended the key), unless the
 * dispatch called or gave it back before: the mark of {@link IdempotencyStore.claimRefund} makes it once per
 * dispatch, whichever deliveries of it arrive and in whatever order. Without it, a second delivery of a dispatch
 * that stood back would refund again, and a late delivery of a dispatch that called (its key since claimed by the
 * next attempt's dispatch) would refund quota its call used: the ledger would under-count either way.
 */
async function refundOnce(event: JobEvent, start: number, deps: WorkerDeps): Promise<void> {
  if (
    !(await deps.stores.idempotency.claimRefund(
      event.idempotencyKey,
      event.dispatchId,
      start + deps.config.orchestrator.idempotencyTtlMs,
    ))
  )
    return;
  await recordSettlement(event.lane, start, deps, {
    reservation: event.reservation,
    actual: null,
    id: event.dispatchId,
  });
}

/**
 * Sends `message` to its dead-letter queue with `reason`, the dispatch that called (`record.dispatchId`) and the
 * API's answer (`apiError`, known only to the worker that called: the record keeps the reason alone), then writes
 * `record` (the key's dead-lettered record) without its reason: the message is there, so a later dispatch of a copy
 * left behind (a receipt handle gone stale) only deletes it. If that write fails, such a dispatch sends a second copy
 * there: one too many, never one too few.
 */
async function deadLetterRecorded(
  message: MessageRef,
  reason: string,
  event: JobEvent,
  record: IdempotencyRecord & { status: 'dead-lettered' },
  deps: WorkerDeps,
  apiError?: string,
): Promise<void> {
  await deadLetter(deps.queues, message, reason, event.attempt, {
    dispatchId: record.dispatchId,
    ...(apiError === undefined ? {} : { apiError }),
  });
  deps.onEvent?.({ type: 'dead-lettered', lane: event.lane, at: deps.clock.now(), reason, ...keysOf(event) });
  const moved: IdempotencyRecord = {
    status: 'dead-lettered',
    dispatchId: record.dispatchId,
    at: record.at,
    expiresAt: record.expiresAt,
  };
  await deps.stores.idempotency.putIdempotency(event.idempotencyKey, moved).catch(() => undefined);
}

/** The error of a worker that could not record `settlement`, saying what became of it. */
function unrecorded(settlement: Settlement, fate: string): StateUnavailableError {
  return new StateUnavailableError('addSettlements', {
    cause: new Error(`settlement ${JSON.stringify(settlement)} could not be recorded: ${fate}`),
  });
}

/**
 * The units the API's answer says the call used, for the units whose usage source finds a count in it (see
 * `readUsage`); none for a call that got no answer.
 */
function usageOf(result: ApiResult, config: ServiceConfig): Costs {
  return result.kind === 'response' ? readUsage(usageSourcesOf(config.units), result) : {};
}

/** Backoff cap: the longest a tier takes to give its whole limit back at its steady rate; else the retry settings cap. */
function refillMs(config: ServiceConfig): number {
  const windows = config.quotas.flatMap((t) => t.steadyRate()?.perMs ?? []);
  return windows.length === 0 ? Number.POSITIVE_INFINITY : Math.max(...windows);
}
