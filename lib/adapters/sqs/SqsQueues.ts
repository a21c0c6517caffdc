import { randomUUID } from 'node:crypto';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { ConfigError } from '../../errors';
import {
  QUEUE_NAMES,
  type MessageAttribute,
  type OutgoingMessage,
  type QueueName,
  type QueueReceiver,
  type ReceiveOptions,
  type ReceivedMessage,
  type SendFailure,
  type SourceQueue,
} from '../../ports/QueueReceiver';
import { fitAttributes, unpackAttributes } from './fitAttributes';

/** Options of {@link SqsQueues}. */
export interface SqsQueuesOptions {
  readonly client: SQSClient;
  /** URL of each of the lane's eight queues; `fifo` and `fifo-dlq` must be FIFO queues (URL ending in `.fifo`), the others not. */
  readonly queueUrls: Readonly<Record<QueueName, string>>;
}

/** SQS limits, in seconds. */
const MAX_VISIBILITY_SECONDS = 43_200;
const MAX_WAIT_SECONDS = 20;
const MAX_DELAY_SECONDS = 900;
const MAX_BATCH = 10;
/** The most a SendMessageBatch request may carry, bodies and attributes summed (SQS's batch limit before 2025). */
const MAX_BATCH_PAYLOAD_BYTES = 262_144;

const FIFO_QUEUES: ReadonlySet<QueueName> = new Set(['fifo', 'fifo-dlq']);

/** `value` rounded with `round` and clamped to `min..max`; infinities clamp, NaN is refused. */
function clamp(name: string, value: number, round: (n: number) => number, min: number, max: number): number {
  if (Number.isNaN(value)) throw new RangeError(`${name} must be a number, got NaN`);
  return Math.min(max, Math.max(min, round(value)));
}

/**
 * The error code of an SDK error: its `name`, without the `AWS.SimpleQueueService.` prefix that SQS's
 * query-compatible JSON protocol puts on codes it has no modelled exception for.
 */
function errorCode(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name.replace(/^AWS\.SimpleQueueService\./, '') : undefined;
}

/**
 * True for the errors DeleteMessage returns when the receipt handle no longer refers to an in-flight receive:
 * `ReceiptHandleIsInvalid`, the legacy `InvalidIdFormat`, and the `InvalidParameterValue` that FIFO queues return
 * for an expired handle ("Value … for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.").
 */
function isStaleHandle(error: unknown): boolean {
  const code = errorCode(error);
  if (code === 'ReceiptHandleIsInvalid' || code === 'InvalidIdFormat') return true;
  return code === 'InvalidParameterValue' && /receipt ?handle/i.test(String((error as { message?: unknown }).message));
}

/** The SDK's form of one attribute: `Binary…` types carry their value as base64 text on our side. */
function toSqsAttribute({ dataType, value }: MessageAttribute): MessageAttributeValue {
  return dataType.startsWith('Binary')
    ? { DataType: dataType, BinaryValue: Buffer.from(value, 'base64') }
    : { DataType: dataType, StringValue: value };
}

function fromSqsAttribute(queue: QueueName, name: string, attribute: MessageAttributeValue): MessageAttribute {
  const { DataType: dataType, StringValue: text, BinaryValue: bytes } = attribute;
  if (dataType === undefined)
    throw new Error(`SQS returned attribute '${name}' of a message in '${queue}' without a DataType`);
  if (dataType.startsWith('Binary')) {
    if (bytes === undefined)
      throw new Error(`SQS returned Binary attribute '${name}' of a message in '${queue}' without a BinaryValue`);
    return { dataType, value: Buffer.from(bytes).toString('base64') };
  }
  if (text === undefined)
    throw new Error(`SQS returned attribute '${name}' of a message in '${queue}' without a StringValue`);
  return { dataType, value: text };
}

function toReceived(queue: QueueName, message: Message): ReceivedMessage {
  const { MessageId: messageId, ReceiptHandle: receiptHandle, Body: body } = message;
  if (messageId === undefined || receiptHandle === undefined || body === undefined) {
    const missing = (['MessageId', 'ReceiptHandle', 'Body'] as const).filter((field) => message[field] === undefined);
    throw new Error(`SQS returned a message from '${queue}' without ${missing.join(', ')}`);
  }
  const countText = message.Attributes?.ApproximateReceiveCount;
  const receiveCount = Number(countText);
  if (countText === undefined || !Number.isInteger(receiveCount) || receiveCount < 1) {
    throw new Error(
      `SQS returned message ${messageId} from '${queue}' without a valid ApproximateReceiveCount (got ${JSON.stringify(countText)})`,
    );
  }
  const raw = Object.entries(message.MessageAttributes ?? {}).map(
    ([name, attribute]) => [name, fromSqsAttribute(queue, name, attribute)] as const,
  );
  const groupId = message.Attributes?.MessageGroupId;
  return {
    queue,
    messageId,
    receiptHandle,
    body,
    attributes: unpackAttributes(Object.fromEntries(raw)),
    ...(groupId === undefined ? {} : { groupId }),
    receiveCount,
  };
}

/**
 * The lane's eight queues on Amazon SQS.
 *
 * - **Durations** in milliseconds become SQS's whole seconds: visibility and delay round up (never shorter than
 *   asked), the long-poll wait rounds to the nearest second. Values beyond SQS's ranges are clamped to them
 *   (visibility 0..43 200 s, delay 0..900 s, wait 0..20 s, batch 1..10); NaN is refused with a RangeError.
 * - **Attributes**: String and Number attributes map to `StringValue`; `Binary…` attributes carry their bytes as
 *   base64 text in `value` (with their `dataType`, e.g. `Binary` or `Binary.gzip`) on both receive and send.
 *   Sends go through {@link fitAttributes}, so more than 10 attributes or empty values never make SQS refuse a
 *   message, and receives expand the pack again, so callers always see the attributes they sent.
 * - **Stale receipt handles** are ignored by `delete`, as the port requires. On a FIFO queue an expired handle
 *   means the message was not deleted and will be delivered again; the worker's idempotency record then turns
 *   that delivery into a duplicate that is deleted without calling the API.
 */
export class SqsQueues implements QueueReceiver {
  private readonly client: SQSClient;
  private readonly queueUrls: Readonly<Record<QueueName, string>>;

  /** @throws ConfigError when a queue URL is missing, or a queue's URL does not match its type (FIFO or standard). */
  constructor({ client, queueUrls }: SqsQueuesOptions) {
    for (const queue of QUEUE_NAMES) {
      const url = queueUrls[queue];
      if (typeof url !== 'string' || url === '')
        throw new ConfigError(`queueUrls.${queue}`, 'must be the URL of an SQS queue');
      if (FIFO_QUEUES.has(queue) !== url.endsWith('.fifo')) {
        const expected = FIFO_QUEUES.has(queue)
          ? 'a FIFO queue (URL ending in .fifo)'
          : 'a standard queue (URL not ending in .fifo)';
        throw new ConfigError(`queueUrls.${queue}`, `must be ${expected}; got ${url}`);
      }
    }
    this.client = client;
    this.queueUrls = { ...queueUrls };
  }

  /**
   * ReceiveMessage on `queue` (dead-letter queues too), with every message attribute, `ApproximateReceiveCount` and
   * `MessageGroupId`.
   * @throws RangeError when an option is NaN.
   * @throws Error when SQS returns a message without its id, receipt handle, body, receive count or an attribute value.
   */
  async receive(queue: QueueName, { max, visibilityMs, waitMs }: ReceiveOptions): Promise<ReceivedMessage[]> {
    const response = await this.client.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrls[queue],
        MaxNumberOfMessages: clamp('max', max, Math.floor, 1, MAX_BATCH),
        VisibilityTimeout: clamp('visibilityMs', visibilityMs / 1000, Math.ceil, 0, MAX_VISIBILITY_SECONDS),
        WaitTimeSeconds: clamp('waitMs', waitMs / 1000, Math.round, 0, MAX_WAIT_SECONDS),
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'],
      }),
    );
    return (response.Messages ?? []).map((message) => toReceived(queue, message));
  }

  /**
   * SendMessage. On FIFO queues the deduplication id defaults to a fresh random id, so only an explicit
   * `deduplicationId` deduplicates.
   * @throws Error on a FIFO queue without `groupId` or with `delayMs > 0` (SQS allows only queue-level delays
   *   there), and on a standard queue with a `deduplicationId`.
   * @throws RangeError when `delayMs` is NaN.
   */
  async send(queue: QueueName, message: OutgoingMessage): Promise<void> {
    await this.client.send(
      new SendMessageCommand({ QueueUrl: this.queueUrls[queue], ...this.entryOf(queue, message) }),
    );
  }

  /**
   * SendMessageBatch, ten messages to a request and at most {@link MAX_BATCH_PAYLOAD_BYTES} of them (a larger message
   * goes alone with SendMessage). Every request is made; a request that fails as a whole fails each of its messages.
   * @throws Error or RangeError as {@link SqsQueues.send} does for a message it refuses, before any request.
   */
  async sendBatch(queue: QueueName, messages: readonly OutgoingMessage[]): Promise<readonly SendFailure[]> {
    const entries = messages.map((message, index) => ({
      index,
      entry: this.entryOf(queue, message),
      bytes: payloadBytes(message),
    }));
    const failures: SendFailure[] = [];
    const failAll = (chunk: readonly { index: number }[], error: unknown) =>
      failures.push(...chunk.map(({ index }) => ({ index, reason: (error as Error).message })));
    for (const chunk of chunks(entries)) {
      const [only] = chunk;
      try {
        if (chunk.length === 1 && only !== undefined && only.bytes > MAX_BATCH_PAYLOAD_BYTES) {
          await this.client.send(new SendMessageCommand({ QueueUrl: this.queueUrls[queue], ...only.entry }));
          continue;
        }
        const Entries = chunk.map(({ index, entry }) => ({ Id: String(index), ...entry }));
        const { Failed = [] } = await this.client.send(
          new SendMessageBatchCommand({ QueueUrl: this.queueUrls[queue], Entries }),
        );
        failures.push(
          ...Failed.map((entry) => ({
            index: Number(entry.Id),
            reason: `${entry.Code ?? 'error'} ${entry.Message ?? ''}`.trim(),
          })),
        );
      } catch (error) {
        failAll(chunk, error);
      }
    }
    return failures.sort((a, b) => a.index - b.index);
  }

  /**
   * The fields of a SendMessage request but the queue URL, which SendMessageBatch entries share.
   * @throws Error or RangeError as {@link SqsQueues.send} documents.
   */
  private entryOf(queue: QueueName, message: OutgoingMessage) {
    const delayMs = message.delayMs ?? 0;
    const delaySeconds = clamp('delayMs', delayMs / 1000, Math.ceil, 0, MAX_DELAY_SECONDS);
    const fifo = FIFO_QUEUES.has(queue);
    if (fifo) {
      if (message.groupId === undefined) throw new Error(`send to FIFO queue '${queue}' needs a groupId`);
      if (delayMs > 0)
        throw new Error(`FIFO queue '${queue}' does not support per-message delays (asked for ${delayMs} ms)`);
    } else if (message.deduplicationId !== undefined) {
      throw new Error(`deduplicationId is only valid on FIFO queues, not on '${queue}'`);
    }
    const attributes = Object.entries(fitAttributes(message.attributes ?? {}));
    return {
      MessageBody: message.body,
      ...(attributes.length === 0
        ? {}
        : { MessageAttributes: Object.fromEntries(attributes.map(([name, a]) => [name, toSqsAttribute(a)])) }),
      ...(fifo ? { MessageDeduplicationId: message.deduplicationId ?? randomUUID() } : { DelaySeconds: delaySeconds }),
      ...(message.groupId === undefined ? {} : { MessageGroupId: message.groupId }),
    };
  }

  /** GetQueueAttributes: the approximate numbers of messages visible, not visible (in flight) and delayed, summed. */
  async messageCount(queue: SourceQueue): Promise<number> {
    const AttributeNames = [
      'ApproximateNumberOfMessages',
      'ApproximateNumberOfMessagesNotVisible',
      'ApproximateNumberOfMessagesDelayed',
    ] as const;
    const { Attributes = {} } = await this.client.send(
      new GetQueueAttributesCommand({ QueueUrl: this.queueUrls[queue], AttributeNames: [...AttributeNames] }),
    );
    return AttributeNames.reduce((sum, name) => sum + Number(Attributes[name] ?? 0), 0);
  }

  /** DeleteMessage; a receipt handle that is invalid, expired or already used is ignored. Other errors propagate. */
  async delete(queue: QueueName, receiptHandle: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteMessageCommand({ QueueUrl: this.queueUrls[queue], ReceiptHandle: receiptHandle }),
      );
    } catch (error) {
      if (isStaleHandle(error)) return;
      throw error;
    }
  }

  /**
   * DeleteMessageBatch, ten handles to a request; entries refused for a stale handle (see {@link SqsQueues.delete})
   * are ignored. Every request is made before a failure is thrown.
   * @throws Error naming each entry that failed otherwise, or the first request that failed as a whole.
   */
  async deleteBatch(queue: QueueName, receiptHandles: readonly string[]): Promise<void> {
    const failures: string[] = [];
    let thrown: unknown;
    for (let i = 0; i < receiptHandles.length; i += MAX_BATCH) {
      const Entries = receiptHandles
        .slice(i, i + MAX_BATCH)
        .map((ReceiptHandle, j) => ({ Id: String(i + j), ReceiptHandle }));
      try {
        const { Failed = [] } = await this.client.send(
          new DeleteMessageBatchCommand({ QueueUrl: this.queueUrls[queue], Entries }),
        );
        for (const entry of Failed) {
          if (!isStaleHandle({ name: entry.Code, message: entry.Message }))
            failures.push(`entry ${entry.Id}: ${entry.Code ?? 'error'} ${entry.Message ?? ''}`.trim());
        }
      } catch (error) {
        thrown ??= error;
      }
    }
    if (thrown !== undefined) throw thrown;
    if (failures.length > 0) throw new Error(`DeleteMessageBatch on '${queue}' failed for ${failures.join('; ')}`);
  }

  /**
   * ChangeMessageVisibility to `visibilityMs` from now, rounded up to whole seconds and clamped to 0..43 200 s.
   * @throws RangeError when `visibilityMs` is NaN; SQS errors (`MessageNotInflight`, `ReceiptHandleIsInvalid`) propagate.
   */
  async changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrls[queue],
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: clamp('visibilityMs', visibilityMs / 1000, Math.ceil, 0, MAX_VISIBILITY_SECONDS),
      }),
    );
  }
}

/** What SQS counts of a message against a request's payload limit: its body and its attributes' names, types and values. */
function payloadBytes(message: OutgoingMessage): number {
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
  return Object.entries(message.attributes ?? {}).reduce(
    (sum, [name, a]) => sum + bytes(name) + bytes(a.dataType) + bytes(a.value),
    bytes(message.body),
  );
}

/** `entries` in order, cut into requests of at most {@link MAX_BATCH} and {@link MAX_BATCH_PAYLOAD_BYTES}. */
function chunks<T extends { readonly bytes: number }>(entries: readonly T[]): T[][] {
  const result: T[][] = [];
  let bytes = 0;
  for (const entry of entries) {
    const last = result.at(-1);
    if (last === undefined || last.length === MAX_BATCH || bytes + entry.bytes > MAX_BATCH_PAYLOAD_BYTES) {
      result.push([entry]);
      bytes = entry.bytes;
    } else {
      last.push(entry);
      bytes += entry.bytes;
    }
  }
  return result;
}
