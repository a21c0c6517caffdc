import type { Settlement } from '../domain/quota/ledger';
import type { Costs } from '../domain/quota/tiers';

/**
 * What a success records besides when, for a job's status (`ops job`, the producer's `status`): `usage`, the units the
 * call counted against its lane's quotas (as the API's answer reports them, else the job's estimates), and `result`,
 * where the worker handed the call's result on (see `ResultHandler.destination`; `NO_RESULT_DESTINATION` when its
 * lane has none). A result the destination did not take is reported as `result-undelivered`, not recorded here.
 */
export interface SuccessDetails {
  readonly usage?: Costs;
  readonly result?: string;
}

/** A success a batch recorded for one of its dispatches (see {@link IdempotencyStore.batchSuccess}). */
export interface JobSuccess extends SuccessDetails {
  /** When the batch recorded it, epoch ms. */
  readonly at: number;
}

/** The successes a batch records in one write (see {@link IdempotencyStore.recordBatchSuccesses}). */
export interface BatchSuccesses {
  /** When, epoch ms. */
  readonly at: number;
  /** Kept at least until then, epoch ms. */
  readonly expiresAt: number;
  /** The dispatches that succeeded, each with what its call counted (see {@link SuccessDetails.usage}). */
  readonly jobs: readonly { readonly dispatchId: string; readonly usage?: Costs }[];
  /** Where the worker handed their results on (see {@link SuccessDetails.result}). */
  readonly result?: string;
}

/** What a worker records per idempotency key. */
export type IdempotencyRecord =
  /**
   * A worker is calling the API for this key; other deliveries keep their hands off until `expiresAt`. A claim made
   * within a batch names it (`batch`; workers name a job alone a batch of one, by its own dispatch): the batch records
   * its successes in one write (see {@link IdempotencyStore.recordBatchSuccesses}) instead of one record per key, so
   * its claims are kept for the idempotency TTL (`expiresAt`) and their worker is at work only until `busyUntil`.
   * After that, the claim's job succeeded if its batch's record lists the dispatch; if not, its worker stopped and the
   * claim may be taken over by another dispatch.
   */
  | {
      readonly status: 'in-progress';
      readonly dispatchId: string;
      readonly expiresAt: number;
      readonly batch?: BatchClaim;
    }
  /**
   * The API call succeeded at `at`; later deliveries must not call again. `settlement`, when present, is what the
   * call owes the ledger and its worker could not record: the message was kept, and whichever delivery meets this
   * record next records it before ending the message. See {@link SuccessDetails} for the rest.
   */
  | ({
      readonly status: 'succeeded';
      readonly dispatchId: string;
      readonly at: number;
      readonly expiresAt: number;
      readonly settlement?: Settlement;
    } & SuccessDetails)
  /**
   * The call of dispatch `dispatchId` failed at `at` and its message was requeued or dead-lettered (a
   * `dead-lettered` record becomes this when an operator reopens the job: see
   * {@link IdempotencyStore.reopenDeadLettered}). It keeps out only further deliveries of that same dispatch (Lambda
   * may deliver an event twice); the next dispatch claims the key.
   */
  | { readonly status: 'failed'; readonly dispatchId: string; readonly at: number; readonly expiresAt: number }
  /**
   * The job was dead-lettered at `at`: written before its message leaves the queue, so that whatever happens in
   * between, no later delivery or dispatch calls the API again (ended is ended, except by an operator's explicit
   * redrive: see {@link IdempotencyStore.reopenDeadLettered}). `reason` is kept until the message is known to be in
   * the dead-letter queue: a later dispatch that finds it there sends its own message to the dead-letter queue with
   * it (the first worker stopped before), and one that finds none only deletes its message.
   */
  | {
      readonly status: 'dead-lettered';
      readonly dispatchId: string;
      readonly at: number;
      readonly expiresAt: number;
      readonly reason?: string;
    };
// `dispatchId` names the orchestrator dispatch (and so the quota reservation) that wrote the record: a second
// delivery of the same event must not settle that reservation again, while a second dispatch must settle its own.

/** Where a claim made within a batch finds its outcome, and until when its worker is at work. */
export interface BatchClaim {
  /** The batch's id: its outcome record's key. */
  readonly id: string;
  /** Epoch ms: the claiming worker's time is up (its start plus the worker timeout). */
  readonly busyUntil: number;
}

/**
 * Whether `record`, read at `now`, is a claim made within a batch whose worker's time is up: whether it holds the
 * key depends on its batch's record (see {@link IdempotencyStore.batchSuccess}).
 */
export function isStoppedBatchClaim(
  record: IdempotencyRecord,
  now: number,
): record is IdempotencyRecord & { status: 'in-progress'; batch: BatchClaim } {
  return record.status === 'in-progress' && record.batch !== undefined && now >= record.batch.busyUntil;
}

/**
 * Whether `record` says the job ended (succeeded or dead-lettered): no later delivery or dispatch calls the API again
 * (until an operator redrives a dead-lettered job: see {@link IdempotencyStore.reopenDeadLettered}).
 */
export function hasEnded(record: IdempotencyRecord): boolean {
  return record.status === 'succeeded' || record.status === 'dead-lettered';
}

/**
 * What keeps a claim out (see {@link IdempotencyStore.putIdempotencyIfAbsent}): the record that holds the key, or
 * `spent` when no record does but the claiming dispatch is marked on the key (see {@link IdempotencyStore.claimRefund}):
 * it claimed the key before, and so called the API or may have (a dispatch claims its key once), or it gave its
 * reservation back (a dispatch that gave its reservation back never calls).
 */
export type ClaimRefusal = IdempotencyRecord | 'spent';

/**
 * Why a claim by dispatch `dispatchId` at `now` is refused, the key holding `existing` and the dispatch marked on it
 * or not (`marked`): the record when it keeps the claim out on its own (see {@link blocksClaim}), else `spent` when
 * the dispatch is marked; `null` when the claim may be written.
 */
export function claimRefusal(
  existing: IdempotencyRecord | undefined,
  dispatchId: string,
  marked: boolean,
  now: number,
  replacing?: string,
): ClaimRefusal | null {
  if (blocksClaim(existing, dispatchId, now, replacing)) return existing;
  return marked ? 'spent' : null;
}

/** Whether `existing`, read at `now`, keeps a claim by dispatch `dispatchId` out, whatever the dispatch's marks. */
export function blocksClaim(
  existing: IdempotencyRecord | undefined,
  dispatchId: string,
  now: number,
  replacing?: string,
): existing is IdempotencyRecord {
  if (existing === undefined || now >= existing.expiresAt) return false;
  if (replacing !== undefined && existing.dispatchId === replacing && isStoppedBatchClaim(existing, now)) return false;
  return existing.status !== 'failed' || existing.dispatchId === dispatchId;
}

/**
 * What {@link IdempotencyStore.reopenDeadLettered} found: `reopened` when the key's record was an unexpired
 * `dead-lettered` one and is now reopened; otherwise the status of the live record it left as it was, or `absent`
 * when there is none (never written, expired at `now`, or marks only).
 */
export type ReopenOutcome = 'reopened' | Exclude<IdempotencyRecord['status'], 'dead-lettered'> | 'absent';

/**
 * Idempotency records per key, for workers, and for an operator's redrive of dead letters. A job that ended stays
 * ended: no later delivery or dispatch of its key calls the API again, except after an operator's explicit redrive
 * re-opens a dead-lettered job (see {@link IdempotencyStore.reopenDeadLettered}). Every implementation passes
 * `test/contract/stateStores.contract.ts`.
 *
 * Expiry is judged against the `now` passed in, never against a clock of the store's own, so that the same
 * contract holds on virtual time.
 */
export interface IdempotencyStore {
  /** The record for `key`, or `undefined` if there is none or it has expired at `now`. */
  getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined>;

  /**
   * Writes `record` for `key` unless an unexpired record at `now` keeps it out (an `in-progress`, `succeeded` or
   * `dead-lettered` record, or a `failed` one of the same `dispatchId`: see {@link blocksClaim}) or its dispatch is
   * marked on `key` already (see {@link IdempotencyStore.claimRefund}), checked in one atomic write. A claim that is
   * written also marks its dispatch: a dispatch claims its key once, and one that gave its reservation back never
   * claims it.
   * @param replacing the dispatch id of a stopped batch claim (see {@link isStoppedBatchClaim}) whose batch recorded
   * no success for it: that claim keeps this one out no longer.
   * @returns `null` when written (also when the client retried the write after it landed and its answer was lost),
   * otherwise what kept it out (see {@link claimRefusal}), and nothing is written.
   */
  putIdempotencyIfAbsent(
    key: string,
    record: IdempotencyRecord,
    now: number,
    replacing?: string,
  ): Promise<ClaimRefusal | null>;

  /**
   * Writes `record` for `key`, replacing the record there (the dispatches marked on `key` stay, and so do the
   * attempts spent on it). With `spentAttempt`, the same write counts the call of `record.dispatchId` as an attempt
   * the job spent (see {@link IdempotencyStore.attemptsSpent}); a write retried after its answer was lost counts it
   * once.
   */
  putIdempotency(key: string, record: IdempotencyRecord, options?: { readonly spentAttempt?: boolean }): Promise<void>;

  /**
   * How many dispatches of `key`'s job had a call that spent an attempt (see {@link IdempotencyStore.putIdempotency}),
   * since the job was first dispatched or since an operator last reopened it (see
   * {@link IdempotencyStore.reopenDeadLettered}): the job's own count of attempts, which no receive, hand-back, pause
   * or reservation given back changes. 0 for a key never written. Kept at least as long as the key's record.
   */
  attemptsSpent(key: string): Promise<number>;

  /**
   * Re-opens the dead-lettered job of `key`, for an operator's redrive (`ops redrive` before it sends the letter
   * back, or the worker of a letter moved back as it was: see `claimJob`): in one conditional write, and only if the
   * record is (still) `dead-lettered` and unexpired at `now`, it becomes a `failed` record of the same dispatch, with
   * the same `at` and `expiresAt` and without a reason, and its attempts spent start again from 0 (the redriven job
   * gets all its attempts again). So the next dispatch of the key (the redriven message's)
   * claims it and calls, while further deliveries of the dispatch that dead-lettered it stay out and, their dispatch
   * still marked on the key (see {@link IdempotencyStore.claimRefund}), give nothing back. Any other record (a
   * success above all: the job must not be called again) is left as it is.
   * @returns `reopened` when this call reopened the key (also when the client retried the write after it landed and
   * its answer was lost), otherwise what it found (see {@link ReopenOutcome}).
   */
  reopenDeadLettered(key: string, now: number): Promise<ReopenOutcome>;

  /**
   * Marks dispatch `dispatchId` as having given its reservation back, unless it is marked already: it claimed `key`
   * (and so called the API, or may have) or gave its reservation back before. The marks live with `key`'s record,
   * at least until `expiresAt`; a mark alone is no record (it reads as none, and keeps out only the claims of its own
   * dispatch).
   * @returns true when this call marked it: the caller then refunds the reservation, so that a refund happens at
   * most once per dispatch, whichever deliveries of it arrive and in whatever order (a retried write whose answer was
   * lost counts as this call's).
   */
  claimRefund(key: string, dispatchId: string, expiresAt: number): Promise<boolean>;

  /**
   * Records in one write that the dispatches of `successes` of batch `batch` succeeded, with what each call counted
   * and where their results went, kept at least until `successes.expiresAt`; the batch's claims point to this record.
   * Writing it again (a retry after a lost answer, a second delivery of the batch) adds the dispatches to those there.
   * With no jobs, it writes nothing.
   */
  recordBatchSuccesses(batch: string, successes: BatchSuccesses): Promise<void>;

  /** The success batch `batch` recorded for dispatch `dispatchId`; `undefined` if it recorded none. */
  batchSuccess(batch: string, dispatchId: string): Promise<JobSuccess | undefined>;
}
