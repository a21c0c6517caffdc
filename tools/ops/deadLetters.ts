import { GetQueueAttributesCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { unpackAttributes } from '../../lib/adapters/sqs/fitAttributes';
import {
  ATTRIBUTES,
  DEAD_LETTER_QUEUES,
  deadLetterQueueOf,
  READ_ORDER,
  type DeadLetterQueue,
  type MessageAttribute,
  type OutgoingMessage,
  type QueueName,
  type QueueReceiver,
  type SourceQueue,
} from '../../lib/ports/QueueReceiver';

/** A message of a dead-letter queue, as the operator sees it. */
export interface DeadLetter {
  /** The dead-letter queue it is in. */
  readonly dlq: DeadLetterQueue;
  /** The source queue it came from, where a redrive sends it: its `sourceQueue` attribute, else the queue its DLQ serves. */
  readonly source: SourceQueue;
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** Every attribute, packed ones expanded. */
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly groupId?: string;
  /** Why the service dead-lettered it; absent when SQS moved it after `maxReceiveCount` receives (no worker settled it). */
  readonly reason?: string;
  /** The attempt that failed last, as the service counted it. */
  readonly attempt?: number;
  /** The start of the API's answer to the call that ended the job (its error text), when a worker dead-lettered it after a call. */
  readonly apiError?: string;
  /** The id of the message the service dead-lettered (the job's own, or its requeued copy's). */
  readonly originalMessageId?: string;
  /** The dispatch whose call ended the job. */
  readonly dispatchId?: string;
  /** When it reached the dead-letter queue (epoch ms): when the service sent it there, or when its producer sent it if SQS moved it. */
  readonly deadLetteredAt: number;
  /** Receives of it in the dead-letter queue, this peek's included. */
  readonly receiveCount: number;
}

/** The source queue a dead-letter queue serves. */
export function sourceOf(dlq: DeadLetterQueue): SourceQueue {
  return dlq.slice(0, -'-dlq'.length) as SourceQueue;
}

/**
 * A received message of `dlq` as a {@link DeadLetter}.
 * @throws Error when SQS returned it without an id, a receipt handle or a body.
 */
export function deadLetterOf(dlq: DeadLetterQueue, message: Message): DeadLetter {
  const { MessageId: messageId, ReceiptHandle: receiptHandle, Body: body } = message;
  if (messageId === undefined || receiptHandle === undefined || body === undefined)
    throw new Error(`SQS returned a message of ${dlq} without its id, receipt handle or body`);
  const raw = Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, a]) => [
      name,
      {
        dataType: a.DataType ?? 'String',
        value: a.StringValue ?? (a.BinaryValue === undefined ? '' : Buffer.from(a.BinaryValue).toString('base64')),
      },
    ]),
  );
  const attributes = unpackAttributes(raw);
  const named = attributes[ATTRIBUTES.sourceQueue]?.value;
  const source = READ_ORDER.find((queue) => queue === named) ?? sourceOf(dlq);
  const attempt = Number(attributes[ATTRIBUTES.attempt]?.value);
  const reason = attributes[ATTRIBUTES.reason]?.value;
  const groupId = message.Attributes?.MessageGroupId;
  const text = (name: string) => {
    const value = attributes[name]?.value;
    return value === undefined ? {} : { [name]: value };
  };
  return {
    dlq,
    source,
    messageId,
    receiptHandle,
    body,
    attributes,
    ...(groupId === undefined ? {} : { groupId }),
    ...(reason === undefined ? {} : { reason }),
    ...(Number.isInteger(attempt) && attempt >= 1 ? { attempt } : {}),
    ...text(ATTRIBUTES.apiError),
    ...text(ATTRIBUTES.originalMessageId),
    ...text(ATTRIBUTES.dispatchId),
    deadLetteredAt: Number(message.Attributes?.SentTimestamp ?? 0),
    receiveCount: Number(message.Attributes?.ApproximateReceiveCount ?? 0),
  };
}

/** Attributes the producer sets and a redrive keeps; every other attribute in `ATTRIBUTES` the service wrote, and a redrive drops. */
const PRODUCER_ATTRIBUTES: ReadonlySet<string> = new Set([ATTRIBUTES.cost, ATTRIBUTES.idempotencyKey]);

/** The attributes the service writes on a message it requeues or dead-letters (`attempt`, `reason`, `sourceQueue`, …). */
export const SERVICE_WRITTEN_ATTRIBUTES: readonly string[] = Object.values(ATTRIBUTES).filter(
  (name) => !PRODUCER_ATTRIBUTES.has(name),
);

/**
 * The idempotency key the job of `letter` had: its `idempotencyKey` attribute (a producer's, or the one a requeued
 * copy carries); else the id of the message it was, which was its key: `originalMessageId` for a message the service
 * dead-lettered, or its own id for one SQS moved (no `reason`), since SQS keeps a message's id when it moves it. It is
 * `undefined` only for a dead letter of a version of the service that did not record `originalMessageId`.
 */
export function idempotencyKeyOf(letter: DeadLetter): string | undefined {
  const attribute = letter.attributes[ATTRIBUTES.idempotencyKey];
  if (attribute !== undefined) return attribute.value;
  if (letter.originalMessageId !== undefined) return letter.originalMessageId;
  return letter.reason === undefined ? letter.messageId : undefined;
}

/**
 * The message a redrive sends for `letter` to its source queue: the original body and the producer's attributes
 * (`cost`, `idempotencyKey`, and any attribute of its own), without what the service wrote (see
 * {@link SERVICE_WRITTEN_ATTRIBUTES}): without `attempt`, the job starts its attempts afresh. It carries the job's
 * idempotency key ({@link idempotencyKeyOf}) as an attribute, so that a second redrive of the same dead letter (its
 * delete failed after its send) is absorbed by the service as a duplicate. A FIFO message keeps its group and gets a
 * fresh deduplication id (an old one would be dropped by SQS within its 5 minutes); SQS gives it a new message id.
 */
export function redriveMessageOf(letter: DeadLetter): OutgoingMessage {
  const kept = Object.entries(letter.attributes).filter(([name]) => !SERVICE_WRITTEN_ATTRIBUTES.includes(name));
  const key = idempotencyKeyOf(letter);
  const attributes = {
    ...Object.fromEntries(kept),
    ...(key === undefined ? {} : { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: key } }),
  };
  return {
    body: letter.body,
    ...(Object.keys(attributes).length === 0 ? {} : { attributes }),
    ...(letter.source === 'fifo' && letter.groupId !== undefined ? { groupId: letter.groupId } : {}),
  };
}

/** How long a peek keeps the messages it received hidden, should it not make them visible again (the CLI stopped). */
const PEEK_VISIBILITY_MS = 30_000;

/** Options of {@link peekDeadLetters}. */
export interface PeekOptions {
  /** The dead-letter queues to look in. @default all four */
  readonly queues?: readonly DeadLetterQueue[];
  /** At most this many, in all. */
  readonly max: number;
  /** Only the letters this holds for (see `passes`); the others are received and left as they were. @default all */
  readonly chosen?: (letter: DeadLetter) => boolean;
  /** Stops looking once this holds for a letter (e.g. the id looked for). */
  readonly until?: (letter: DeadLetter) => boolean;
}

/**
 * The SQS parts a dead-letter command uses: the raw client, to receive with the system attributes the port leaves
 * out (`SentTimestamp`), and the production adapter (`SqsQueues`) to send, delete and make visible again.
 */
export interface DeadLetterQueues {
  readonly sqs: SQSClient;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly queues: Pick<QueueReceiver, 'send' | 'delete' | 'changeVisibility'>;
}

/** The approximate number of visible messages of `queue`. */
async function visibleCount(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes.ApproximateNumberOfMessages ?? 0);
}

/**
 * Receives dead letters of `dlq`, ten at a time, each hidden for `visibilityMs`, until the queue gives none, `max`
 * have come, or `done` says so; `onBatch` handles each batch before the next receive. A queue that counts no visible
 * message is not received from.
 */
export async function receiveDeadLetters(
  { sqs, queueUrls }: DeadLetterQueues,
  dlq: DeadLetterQueue,
  options: { readonly max: number; readonly visibilityMs: number; readonly done?: () => boolean },
  onBatch: (letters: readonly DeadLetter[]) => Promise<void>,
): Promise<void> {
  if (options.max <= 0 || (await visibleCount(sqs, queueUrls[dlq])) === 0) return;
  let received = 0;
  while (received < options.max && options.done?.() !== true) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrls[dlq],
        MaxNumberOfMessages: Math.min(10, options.max - received),
        VisibilityTimeout: Math.ceil(options.visibilityMs / 1000),
        // A long poll of a second asks every SQS server, so that a queue with few messages is not seen empty.
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount', 'MessageGroupId'],
      }),
    );
    if (Messages.length === 0) return;
    received += Messages.length;
    await onBatch(Messages.map((message) => deadLetterOf(dlq, message)));
  }
}

/**
 * Looks at the dead letters without taking them: receives them (hidden for {@link PEEK_VISIBILITY_MS}), then makes
 * each visible again at once. A peek counts as a receive of each (its `ApproximateReceiveCount` grows). In a FIFO
 * dead-letter queue, SQS hands out a group's messages only while none of that group is hidden, so a peek may show
 * only the first messages of each group.
 * @returns the letters, oldest first.
 */
export async function peekDeadLetters(target: DeadLetterQueues, options: PeekOptions): Promise<DeadLetter[]> {
  const received: DeadLetter[] = [];
  const letters: DeadLetter[] = [];
  let found = false;
  const done = () => found || letters.length >= options.max;
  try {
    for (const dlq of options.queues ?? DEAD_LETTER_QUEUES) {
      if (done()) break;
      await receiveDeadLetters(
        target,
        dlq,
        // Without a filter every letter counts toward `max`, so no more than it are received.
        {
          max: options.chosen === undefined ? options.max - letters.length : Number.MAX_SAFE_INTEGER,
          visibilityMs: PEEK_VISIBILITY_MS,
          done,
        },
        async (batch) => {
          received.push(...batch);
          for (const letter of batch) {
            if (done() || options.chosen?.(letter) === false) continue;
            letters.push(letter);
            found ||= options.until?.(letter) === true;
          }
        },
      );
    }
  } finally {
    await Promise.all(
      received.map((letter) =>
        target.queues.changeVisibility(letter.dlq, letter.receiptHandle, 0).catch(() => undefined),
      ),
    );
  }
  return letters.sort((a, b) => a.deadLetteredAt - b.deadLetteredAt);
}

/** The dead-letter queues of `sources` (all four when none is given). */
export function deadLetterQueuesOf(sources: readonly SourceQueue[] | undefined): readonly DeadLetterQueue[] {
  return sources === undefined || sources.length === 0 ? DEAD_LETTER_QUEUES : sources.map(deadLetterQueueOf);
}
