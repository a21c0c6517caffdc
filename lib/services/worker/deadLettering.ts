import type { JobEvent } from '../../ports/Invoker';
import type { IdempotencyRecord } from '../../ports/IdempotencyStore';
import { deadLetter, type MessageRef } from '../queueOutcomes';
import { keysOf } from './jobMessage';
import type { WorkerDeps } from './types';

/**
 * Sends `message` to its dead-letter queue with `reason`, the dispatch that called (`record.dispatchId`) and the
 * API's answer (`apiError`, known only to the worker that called: the record keeps the reason alone), then writes
 * `record` (the key's dead-lettered record) without its reason: the message is there, so a later dispatch of a copy
 * left behind (a receipt handle gone stale) only deletes it. If that write fails, such a dispatch sends a second copy
 * there: one too many, never one too few.
 */
export async function deadLetterRecorded(
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
