import { ATTRIBUTES, deadLetterQueueOf, type MessageAttribute, type OutgoingMessage, type QueueReceiver, type SourceQueue } from '../ports/QueueReceiver';

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

/** A job to return unconsumed (see {@link returnUnconsumed}). */
export interface Unconsumed {
  readonly message: MessageRef;
  readonly attempt: number;
}

/**
 * Returns several jobs as {@link returnUnconsumed} returns each, but sends the copies of standard messages to the
 * requeue queue ten to a request, and leaves the originals of those sent for the caller to delete (with others, ten to
 * a request). A job that could not be returned reappears once its visibility runs out.
 * @returns the originals to delete, and why each job that was not returned was not.
 */
export async function returnAllUnconsumed(queues: QueueReceiver, jobs: readonly Unconsumed[]): Promise<{ readonly toDelete: readonly MessageRef[]; readonly problems: readonly string[] }> {
  const problems: string[] = [];
  const problem = (job: Unconsumed, reason: string) => problems.push(`returning ${job.message.messageId}: ${reason}`);
  for (const job of jobs.filter(({ message }) => message.queue === 'fifo')) {
    await returnUnconsumed(queues, job.message, job.attempt).catch((error: unknown) => problem(job, (error as Error).message));
  }
  const standard = jobs.filter(({ message }) => message.queue !== 'fifo');
  if (standard.length === 0) return { toDelete: [], problems };
  const failed = await queues
    .sendBatch('requeue', standard.map(({ message, attempt }) => requeued(message, attempt, 0)))
    .catch((error: unknown) => standard.map((_, index) => ({ index, reason: (error as Error).message })));
  for (const { index, reason } of failed) problem(standard[index]!, reason);
  const unsent = new Set(failed.map(({ index }) => index));
  return { toDelete: standard.filter((_, i) => !unsent.has(i)).map(({ message }) => message), problems };
}

/** Makes `message` receivable again after `delayMs`, carrying `nextAttempt` unless it is a FIFO message (see {@link retryLater}). */
async function requeue(queues: QueueReceiver, message: MessageRef, nextAttempt: number, delayMs: number): Promise<void> {
  const delay = requeueDelay(delayMs);
  if (message.queue === 'fifo') {
    await queues.changeVisibility('fifo', message.receiptHandle, delay);
    return;
  }
  await queues.send('requeue', requeued(message, nextAttempt, delayMs));
  await queues.delete(message.queue, message.receiptHandle);
}

/** A delay SQS takes: whole seconds, 0 to 900. */
function requeueDelay(delayMs: number): number {
  return Math.min(900_000, Math.max(0, Math.ceil(delayMs / 1000) * 1000));
}

/** The copy of standard `message` sent to the requeue queue, carrying `nextAttempt`, delayed by `delayMs`. */
function requeued(message: MessageRef, nextAttempt: number, delayMs: number): OutgoingMessage {
  return {
    body: message.body,
    attributes: { ...message.attributes, [ATTRIBUTES.attempt]: { dataType: 'Number', value: String(nextAttempt) } },
    delayMs: requeueDelay(delayMs),
  };
}
