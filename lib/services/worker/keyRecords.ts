import type { ServiceConfig } from '../../config';
import type { JobEvent } from '../../ports/Invoker';
import type { IdempotencyRecord } from '../../ports/IdempotencyStore';
import type { BatchEnding } from './types';

/** The record of dispatch `dispatchId`'s success at `at`, kept for the idempotency TTL. */
export function successRecord(
  dispatchId: string,
  at: number,
  config: ServiceConfig,
): IdempotencyRecord & { status: 'succeeded' } {
  return { status: 'succeeded', dispatchId, at, expiresAt: at + config.orchestrator.idempotencyTtlMs };
}

/**
 * The record of dispatch `dispatchId`'s failure at `at`, kept for the idempotency TTL: it keeps out only that
 * dispatch, and lets the next one (the next attempt) claim the key.
 */
export function failedRecord(dispatchId: string, at: number, config: ServiceConfig): IdempotencyRecord {
  return { status: 'failed', dispatchId, at, expiresAt: at + config.orchestrator.idempotencyTtlMs };
}

/**
 * The record of the job whose dispatch `dispatchId` dead-lettered it at `at`, kept for the idempotency TTL: it keeps
 * every later claim out.
 */
export function deadLetteredRecord(
  dispatchId: string,
  at: number,
  config: ServiceConfig,
): IdempotencyRecord & { status: 'dead-lettered' } {
  return { status: 'dead-lettered', dispatchId, at, expiresAt: at + config.orchestrator.idempotencyTtlMs };
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
