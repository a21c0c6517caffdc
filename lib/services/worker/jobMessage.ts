import type { JobEvent } from '../../ports/Invoker';
import { ATTRIBUTES } from '../../ports/QueueReceiver';
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

/**
 * `message` carrying the job's key as an attribute. A requeued copy gets a new message id, so every attempt of a job
 * shares one key, and a late redelivery of an earlier attempt's event finds the later attempt's success.
 */
export function withKey(message: MessageRef, idempotencyKey: string): MessageRef {
  return {
    ...message,
    attributes: { ...message.attributes, [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: idempotencyKey } },
  };
}

/** The ids of `event`'s job, for its log lines. */
export function keysOf(event: JobEvent): JobKeys {
  return { messageId: event.messageId, dispatchId: event.dispatchId, idempotencyKey: event.idempotencyKey };
}
