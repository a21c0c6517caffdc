import {
  ATTRIBUTES,
  deadLetterQueueOf,
  type MessageAttribute,
  type OutgoingMessage,
  type QueueReceiver,
  type SourceQueue,
} from '../ports/QueueReceiver';
import { utf8Prefix } from '../domain/utf8Prefix';
import { withoutDeadLetterMarks } from './deadLetterMarks';

/** The parts of a received message needed to retry or dead-letter it. */
export interface MessageRef {
  readonly queue: SourceQueue;
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly groupId?: string;
}

/** The most of the API's answer a dead letter's `apiError` attribute carries, in UTF-8 bytes. */
export const MAX_API_ERROR_BYTES = 1_024;

/** What a worker knows of a dead-lettered job beyond its reason (see {@link deadLetter}). */
export interface DeadLetterDetails {
  /** The dispatch whose call ended the job. */
  readonly dispatchId?: string;
  /** The API's answer to that call (its response body), e.g. `{"error":"invalid phone number"}`. */
  readonly apiError?: string;
}

/**
 * Characters SQS refuses in a message attribute's value (outside `#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD |
 * #x10000-#x10FFFF`): other control characters, lone surrogate halves, U+FFFE and U+FFFF.
 */
const REFUSED_BY_SQS =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is matched
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` as SQS takes it in an attribute: each character it refuses written as a `\uXXXX` escape, then cut to at most
 * `maxBytes` UTF-8 bytes on a whole character, with `…` at the end when cut.
 */
export function attributeText(text: string, maxBytes: number): string {
  const clean = text.replace(REFUSED_BY_SQS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (Buffer.byteLength(clean, 'utf8') <= maxBytes) return clean;
  const ellipsis = '…';
  return (
    utf8Prefix(Buffer.from(clean, 'utf8'), maxBytes - Buffer.byteLength(ellipsis, 'utf8')).toString('utf8') + ellipsis
  );
}

/**
 * Parks a message in its queue's dead-letter queue, then deletes the original. The body and the other attributes are
 * kept as they were, and the dead letter carries as attributes:
 * - `reason` (at most 1,000 characters), `attempt` and `sourceQueue`;
 * - `originalMessageId`: the id of the message it was (for a retried job, of its copy in the requeue queue);
 * - `dispatchId` and `apiError` when `details` has them: the dispatch whose call ended the job, and the API's
 *   answer to it, cut to {@link MAX_API_ERROR_BYTES} (see {@link attributeText}). Ones an earlier dead-lettering left
 *   on the message (a redriven message) are dropped rather than carried over.
 */
export async function deadLetter(
  queues: QueueReceiver,
  message: MessageRef,
  reason: string,
  attempt: number,
  details: DeadLetterDetails = {},
): Promise<void> {
  const kept = Object.fromEntries(
    Object.entries(message.attributes).filter(
      ([name]) => name !== ATTRIBUTES.dispatchId && name !== ATTRIBUTES.apiError,
    ),
  );
  const { dispatchId, apiError } = details;
  await queues.send(deadLetterQueueOf(message.queue), {
    body: message.body,
    attributes: {
      ...kept,
      [ATTRIBUTES.reason]: { dataType: 'String', value: reason.slice(0, 1000) },
      [ATTRIBUTES.attempt]: { dataType: 'Number', value: String(attempt) },
      [ATTRIBUTES.sourceQueue]: { dataType: 'String', value: message.queue },
      [ATTRIBUTES.originalMessageId]: { dataType: 'String', value: message.messageId },
      ...(dispatchId === undefined ? {} : { [ATTRIBUTES.dispatchId]: { dataType: 'String', value: dispatchId } }),
      ...(apiError === undefined || apiError === ''
        ? {}
        : { [ATTRIBUTES.apiError]: { dataType: 'String', value: attributeText(apiError, MAX_API_ERROR_BYTES) } }),
    },
    // Only the FIFO queue's DLQ is FIFO; a group id on a standard message (SQS fair queues) needs no deduplication.
    ...(message.queue !== 'fifo' || message.groupId === undefined
      ? {}
      : { groupId: message.groupId, deduplicationId: `${message.messageId}-${attempt}` }),
  });
  await queues.delete(message.queue, message.receiptHandle);
}

/**
 * Schedules another attempt of the job keyed `idempotencyKey` after `delayMs` (at most 900 s).
 *
 * A FIFO message stays in flight in its own queue with its visibility pushed out by the delay, so its group stays
 * locked and message k+1 cannot pass it (SQS counts the receives, which gives the attempt). Any other message is
 * sent to the requeue queue carrying `attempt + 1` and the job's key (see {@link requeued}), which the orchestrator
 * reads first, and the original is deleted.
 */
export async function retryLater(
  queues: QueueReceiver,
  message: MessageRef,
  idempotencyKey: string,
  attempt: number,
  delayMs: number,
): Promise<void> {
  await requeue(queues, message, idempotencyKey, attempt + 1, delayMs);
}

/**
 * Returns a job that was not at fault (the API refused the caller) to be dispatched again once the circuit closes,
 * without consuming an attempt: any message but a FIFO one is requeued carrying `attempt` itself and the job's key
 * `idempotencyKey`. A FIFO message is made visible again in its own queue, so its group keeps its order; SQS then
 * counts one more receive, which no queue call can undo, and which costs no attempt: a FIFO job's attempts are
 * counted in its key's record. It is receivable again at once, or after `delayMs`.
 */
export async function returnUnconsumed(
  queues: QueueReceiver,
  message: MessageRef,
  idempotencyKey: string,
  attempt: number,
  delayMs = 0,
): Promise<void> {
  await requeue(queues, message, idempotencyKey, attempt, delayMs);
}

/** A job to return unconsumed (see {@link returnUnconsumed}), receivable again at once or after `delayMs`. */
export interface Unconsumed {
  readonly message: MessageRef;
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly delayMs?: number;
}

/**
 * Returns several jobs as {@link returnUnconsumed} returns each, but sends the copies of standard messages to the
 * requeue queue ten to a request, and leaves the originals of those sent for the caller to delete (with others, ten to
 * a request). A job that could not be returned reappears once its visibility runs out.
 * @returns the originals to delete, and why each job that was not returned was not.
 */
export async function returnAllUnconsumed(
  queues: QueueReceiver,
  jobs: readonly Unconsumed[],
): Promise<{ readonly toDelete: readonly MessageRef[]; readonly problems: readonly string[] }> {
  const problems: string[] = [];
  const problem = (job: Unconsumed, reason: string) => problems.push(`returning ${job.message.messageId}: ${reason}`);
  for (const job of jobs.filter(({ message }) => message.queue === 'fifo')) {
    await returnUnconsumed(queues, job.message, job.idempotencyKey, job.attempt, job.delayMs).catch((error: unknown) =>
      problem(job, (error as Error).message),
    );
  }
  const standard = jobs.filter(({ message }) => message.queue !== 'fifo');
  if (standard.length === 0) return { toDelete: [], problems };
  const failed = await queues
    .sendBatch(
      'requeue',
      standard.map(({ message, idempotencyKey, attempt, delayMs }) =>
        requeued(message, idempotencyKey, attempt, delayMs ?? 0),
      ),
    )
    .catch((error: unknown) => standard.map((_, index) => ({ index, reason: (error as Error).message })));
  for (const { index, reason } of failed) problem(standard[index]!, reason);
  const unsent = new Set(failed.map(({ index }) => index));
  return { toDelete: standard.filter((_, i) => !unsent.has(i)).map(({ message }) => message), problems };
}

/**
 * Makes `message` receivable again after `delayMs`, carrying `nextAttempt` and `idempotencyKey` unless it is a FIFO
 * message (see {@link retryLater}).
 */
async function requeue(
  queues: QueueReceiver,
  message: MessageRef,
  idempotencyKey: string,
  nextAttempt: number,
  delayMs: number,
): Promise<void> {
  const delay = requeueDelay(delayMs);
  if (message.queue === 'fifo') {
    await queues.changeVisibility('fifo', message.receiptHandle, delay);
    return;
  }
  await queues.send('requeue', requeued(message, idempotencyKey, nextAttempt, delayMs));
  await queues.delete(message.queue, message.receiptHandle);
}

/** A delay SQS takes: whole seconds, 0 to 900. */
function requeueDelay(delayMs: number): number {
  return Math.min(900_000, Math.max(0, Math.ceil(delayMs / 1000) * 1000));
}

/**
 * The copy of standard `message` sent to the requeue queue, carrying `nextAttempt` and the job's key
 * `idempotencyKey`, delayed by `delayMs`. The copy gets a new message id, so every attempt of a job shares one key,
 * and a late redelivery of an earlier attempt's event finds the later attempt's success. A dead letter an operator
 * moved back as it was (see `deadLetterMarksOf`) goes on as a retry of its job, without its dead-letter attributes:
 * with them, its copy would read as a redrive again, back at its first attempt.
 */
function requeued(message: MessageRef, idempotencyKey: string, nextAttempt: number, delayMs: number): OutgoingMessage {
  return {
    body: message.body,
    attributes: {
      ...withoutDeadLetterMarks(message.attributes),
      [ATTRIBUTES.attempt]: { dataType: 'Number', value: String(nextAttempt) },
      [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: idempotencyKey },
    },
    delayMs: requeueDelay(delayMs),
  };
}
