import { ATTRIBUTES, deadLetterQueueOf, type MessageAttribute, type QueueReceiver, type SourceQueue } from '../ports/QueueReceiver';

/** The parts of a received message needed to retry or dead-letter it. */
export interface MessageRef {
  readonly queue: SourceQueue;
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly groupId?: string;
}

/**
 * Parks a message in its queue's dead-letter queue with the reason and the attempt as attributes (the body and
 * the other attributes are kept as they were), then deletes the original.
 */
export async function deadLetter(queues: QueueReceiver, message: MessageRef, reason: string, attempt: number): Promise<void> {
  await queues.send(deadLetterQueueOf(message.queue), {
    body: message.body,
    attributes: {
      ...message.attributes,
      [ATTRIBUTES.reason]: { dataType: 'String', value: reason.slice(0, 1000) },
      [ATTRIBUTES.attempt]: { dataType: 'Number', value: String(attempt) },
      [ATTRIBUTES.sourceQueue]: { dataType: 'String', value: message.queue },
    },
    // Only the FIFO queue's DLQ is FIFO; a group id on a standard message (SQS fair queues) needs no deduplication.
    ...(message.queue !== 'fifo' || message.groupId === undefined ? {} : { groupId: message.groupId, deduplicationId: `${message.messageId}-${attempt}` }),
  });
  await queues.delete(message.queue, message.receiptHandle);
}

/**
 * Schedules another attempt after `delayMs` (at most 900 s).
 *
 * A FIFO message stays in flight in its own queue with its visibility pushed out by the delay, so its group stays
 * locked and message k+1 cannot pass it (SQS counts the receives, which gives the attempt). Any other message is
 * sent to the requeue queue carrying `attempt + 1`, which the orchestrator reads first, and the original is deleted.
 */
export async function retryLater(queues: QueueReceiver, message: MessageRef, attempt: number, delayMs: number): Promise<void> {
  await requeue(queues, message, attempt + 1, delayMs);
}

/**
 * Returns a job that was not at fault (the API refused the caller) to be dispatched again once the circuit closes,
 * without consuming an attempt: any message but a FIFO one is requeued carrying `attempt` itself. A FIFO message is
 * made visible again in its own queue, so its group keeps its order; SQS then counts one more receive, which the
 * orchestrator reads as its attempt, and which no queue call can undo.
 */
export async function returnUnconsumed(queues: QueueReceiver, message: MessageRef, attempt: number): Promise<void> {
  await requeue(queues, message, attempt, 0);
}

/** Makes `message` receivable again after `delayMs`, carrying `nextAttempt` unless it is a FIFO message (see {@link retryLater}). */
async function requeue(queues: QueueReceiver, message: MessageRef, nextAttempt: number, delayMs: number): Promise<void> {
  const delay = Math.min(900_000, Math.max(0, Math.ceil(delayMs / 1000) * 1000));
  if (message.queue === 'fifo') {
    await queues.changeVisibility('fifo', message.receiptHandle, delay);
    return;
  }
  await queues.send('requeue', {
    body: message.body,
    attributes: { ...message.attributes, [ATTRIBUTES.attempt]: { dataType: 'Number', value: String(nextAttempt) } },
    delayMs: delay,
  });
  await queues.delete(message.queue, message.receiptHandle);
}
