import type { JobEvent } from '../../ports/Invoker';
import type { MessageRef } from '../queueOutcomes';
import type { JobKeys } from './types';

/** The message `event` dispatches. */
export function messageOf(event: JobEvent): MessageRef {
  return {
    queue: event.queue,
    messageId: event.messageId,
    receiptHandle: event.receiptHandle,
    body: event.body,
    attributes: event.attributes,
    ...(event.groupId === undefined ? {} : { groupId: event.groupId }),
  };
}

/** The ids of `event`'s job, for its log lines. */
export function keysOf(event: JobEvent): JobKeys {
  return { messageId: event.messageId, dispatchId: event.dispatchId, idempotencyKey: event.idempotencyKey };
}
