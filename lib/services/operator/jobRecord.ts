import { isStoppedBatchClaim, type IdempotencyStore, type SuccessDetails } from '../../ports/IdempotencyStore';

/**
 * What the service recorded of one job, by its idempotency key (see `IdempotencyRecord`):
 * - `succeeded`: its call succeeded at `at`, counting `usage` (its named units: a call is one request) and handing
 *   its result to `result` (see `SuccessDetails`; both absent from a record written before they were kept);
 * - `dead-lettered`: it ended in a dead-letter queue at `at`, for `reason` while the record still holds it (the
 *   letter itself always carries it);
 * - `in-flight`: a worker holds it and is calling the API, or about to, until `until` at the latest;
 * - `retrying`: a call failed (or its worker stopped) at `at` and the job waits to be dispatched again;
 * - `none`: no record: it was never dispatched, or its record has expired (see `orchestrator.idempotencyTtlMs`).
 * `attemptsSpent` is how many of its attempts its calls spent so far (see `IdempotencyStore.attemptsSpent`).
 */
export type JobRecord =
  | ({ readonly state: 'succeeded'; readonly at: number; readonly dispatchId: string } & SuccessDetails)
  | {
      readonly state: 'dead-lettered';
      readonly at: number;
      readonly dispatchId: string;
      readonly reason?: string;
      readonly attemptsSpent: number;
    }
  | { readonly state: 'in-flight'; readonly until: number; readonly dispatchId: string; readonly attemptsSpent: number }
  | { readonly state: 'retrying'; readonly at: number; readonly dispatchId: string; readonly attemptsSpent: number }
  | { readonly state: 'none' };

/**
 * Reads what the service recorded of the job of `key` at `now`: one read of its record, and for a claim made within
 * a batch, one of its batch's record (the claim's job succeeded if the batch lists it: a batch records its successes
 * once all its jobs have ended, and its worker may still be at work on the others); one more for the attempts spent,
 * unless it succeeded.
 */
export async function readJobRecord(
  store: Pick<IdempotencyStore, 'getIdempotency' | 'batchSuccess' | 'attemptsSpent'>,
  key: string,
  now: number,
): Promise<JobRecord> {
  const record = await store.getIdempotency(key, now);
  if (record === undefined) return { state: 'none' };
  const { dispatchId } = record;
  if (record.status === 'succeeded') {
    const { at, usage, result } = record;
    return {
      state: 'succeeded',
      at,
      dispatchId,
      ...(usage === undefined ? {} : { usage }),
      ...(result === undefined ? {} : { result }),
    };
  }
  if (record.status === 'in-progress' && record.batch !== undefined) {
    const success = await store.batchSuccess(record.batch.id, dispatchId);
    if (success !== undefined) return { state: 'succeeded', dispatchId, ...success };
  }
  const attemptsSpent = await store.attemptsSpent(key);
  switch (record.status) {
    case 'dead-lettered':
      return {
        state: 'dead-lettered',
        at: record.at,
        dispatchId,
        attemptsSpent,
        ...(record.reason === undefined ? {} : { reason: record.reason }),
      };
    case 'failed':
      return { state: 'retrying', at: record.at, dispatchId, attemptsSpent };
    case 'in-progress':
      return isStoppedBatchClaim(record, now)
        ? { state: 'retrying', at: record.batch.busyUntil, dispatchId, attemptsSpent }
        : { state: 'in-flight', until: record.batch?.busyUntil ?? record.expiresAt, dispatchId, attemptsSpent };
  }
}
