import type { Costs } from '../../domain/quota/tiers';
import type { ServiceConfig } from '../../config';
import type { JobEvent } from '../../ports/Invoker';
import type { IdempotencyRecord, SuccessDetails } from '../../ports/IdempotencyStore';
import { NO_RESULT_DESTINATION } from '../../ports/ResultHandler';
import type { BatchEnding, WorkerDeps } from './types';

/**
 * How a dispatch's call ended, as its key records it: `succeeded` keeps every later call out; `failed` keeps out only
 * that dispatch and lets the next one (the next attempt) claim the key; `dead-lettered` keeps every later claim out.
 */
export type EndedStatus = 'succeeded' | 'failed' | 'dead-lettered';

/** The fields the records of an ended call share (see `IdempotencyRecord`). */
export interface EndedRecord<S extends EndedStatus> {
  readonly status: S;
  readonly dispatchId: string;
  readonly at: number;
  readonly expiresAt: number;
}

/** The record of dispatch `dispatchId`'s call ended at `at` as `status`, kept for the idempotency TTL. */
export function endedRecord<S extends EndedStatus>(
  status: S,
  dispatchId: string,
  at: number,
  config: ServiceConfig,
): EndedRecord<S> {
  return { status, dispatchId, at, expiresAt: at + config.orchestrator.idempotencyTtlMs };
}

/**
 * What the success of a call that counted `used` records besides when (see `SuccessDetails`): its usage, left out
 * when it counts no named unit (a call is always one request), and where the worker hands its result on.
 */
export function successDetails(used: Costs, deps: Pick<WorkerDeps, 'results'>): SuccessDetails {
  return { ...usageField(used), result: resultDestination(deps) };
}

/** `{ usage: used }`, or nothing when `used` counts no named unit. */
export function usageField(used: Costs): { readonly usage?: Costs } {
  return Object.keys(used).length === 0 ? {} : { usage: used };
}

/** Where `deps` hands a succeeded job's result on (see `SuccessDetails.result`). */
export function resultDestination({ results }: Pick<WorkerDeps, 'results'>): string {
  return results === undefined ? NO_RESULT_DESTINATION : (results.destination ?? 'result handler');
}

/**
 * The claim of a worker on time, kept for the idempotency TTL with its worker's time marked (see `BatchClaim`): it
 * names its batch, and a job alone is a batch of one, named by its own dispatch. So a claim whose worker stopped
 * after its call and before its success record outlives its time, and a late delivery of the same dispatch finds it
 * and makes no second call (see `claimKey`); the next dispatch takes it over.
 */
export function inProgress(
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
