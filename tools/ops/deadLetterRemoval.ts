import { GetQueueAttributesCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';
import { DEAD_LETTER_QUEUES, type DeadLetterQueue } from '../../lib/ports/QueueReceiver';
import { describeError, workOnDeadLetters, type ChosenLetters } from './chosenDeadLetters';
import { reasonClassOf, type ReasonClass } from './deadLetterFilter';
import type { DeadLetterQueues } from './deadLetters';

/** How one dead letter's delete went. */
export interface DeleteResult {
  readonly messageId: string;
  readonly from: DeadLetterQueue;
  /** The class of its reason (see `REASON_CLASSES`). */
  readonly reason: ReasonClass;
  /** `deleted`: gone for good. `failed`: it stays in its dead-letter queue. */
  readonly outcome: 'deleted' | 'failed';
  readonly error?: string;
}

/**
 * Deletes the chosen dead letters for good: their jobs end there. Each job's idempotency record stays `dead-lettered`
 * until its TTL, so a message of the same key sent again within it is not called (as for any dead-lettered job; a
 * redrive is the way to run one again). A letter whose delete fails is made visible again.
 * @returns how each letter went, in the order they were handled.
 */
export function deleteDeadLetters(deps: DeadLetterQueues, options: ChosenLetters): Promise<DeleteResult[]> {
  return workOnDeadLetters<DeleteResult>(deps, options, async (letter) => {
    const base = { messageId: letter.messageId, from: letter.dlq, reason: reasonClassOf(letter) };
    try {
      await deps.queues.delete(letter.dlq, letter.receiptHandle);
      return { result: { ...base, outcome: 'deleted' }, left: false };
    } catch (error) {
      return { result: { ...base, outcome: 'failed', error: describeError(error) }, left: true };
    }
  });
}

/** How one dead-letter queue's purge went. */
export interface PurgeResult {
  readonly dlq: DeadLetterQueue;
  /** The messages it held just before, as SQS counts them (approximately), hidden ones included. */
  readonly messages: number;
  /** `purged`: SQS empties it within a minute. `failed`: it was left as it was (a purge of the last minute refuses another). */
  readonly outcome: 'purged' | 'failed';
  readonly error?: string;
}

/**
 * Empties whole dead-letter queues with SQS's `PurgeQueue`: every message, hidden ones included, without reading
 * them, which is what a queue of millions needs. SQS takes up to a minute to finish and refuses a second purge of
 * the same queue within a minute. A queue that counts no message is not purged.
 * @returns how each queue went.
 */
export async function purgeDeadLetters(
  { sqs, queueUrls }: Pick<DeadLetterQueues, 'sqs' | 'queueUrls'>,
  queues: readonly DeadLetterQueue[] = DEAD_LETTER_QUEUES,
): Promise<PurgeResult[]> {
  const results: PurgeResult[] = [];
  for (const dlq of queues) {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrls[dlq],
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const messages =
      Number(Attributes.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (messages === 0) {
      results.push({ dlq, messages, outcome: 'purged' });
      continue;
    }
    try {
      await sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrls[dlq] }));
      results.push({ dlq, messages, outcome: 'purged' });
    } catch (error) {
      results.push({ dlq, messages, outcome: 'failed', error: describeError(error) });
    }
  }
  return results;
}
