import type { ApiResult } from '../../domain/outcome/apiResult';
import type { JobEvent } from '../../ports/Invoker';
import type { JobResult } from '../../ports/ResultHandler';
import type { BatchEnding, WorkerDeps } from './types';

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
export async function handOnResult(
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
export async function deliverResults(results: readonly JobResult[], deps: WorkerDeps): Promise<void> {
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
