/**
 * The producer client: puts jobs on the service's queues as the service reads them (the message contract of
 * docs and `parseJob`). It ships for producers to import and depends on `@aws-sdk/client-sqs` alone.
 */
import { createHash } from 'node:crypto';
import {
  SendMessageBatchCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { EnqueueError } from '../errors';
import { MAX_QUANTITY, unitNameProblem } from '../domain/quota/tiers';
import { ATTRIBUTES } from '../ports/QueueReceiver';
import { parseJob } from '../services/parseJob';

/** One job to enqueue. */
export interface ProducerJob {
  /** Any JSON value: sent as its `JSON.stringify` text, which the worker hands to the API as it is. */
  readonly body: unknown;
  /**
   * What the job costs on cost tiers (e.g. tokens), sent as the Number attribute `cost`: an integer from 0 to
   * `MAX_QUANTITY` (1e12), as the service accepts.
   * @default left out: the service counts 1
   */
  readonly cost?: number;
  /**
   * The job's estimate of each named unit the lane's tiers count, sent as the Number attribute of the unit's name,
   * e.g. `{input_tokens: 812, output_tokens: 1024}` (the prompt's tokens and `max_tokens`): integers from 0 to
   * `MAX_QUANTITY`. The service reserves them before the call and hands back what the answer shows unused.
   * @default none: each unit's configured default, and a job without an estimate of a unit that has none is
   * dead-lettered
   */
  readonly estimates?: Readonly<Record<string, number>>;
  /**
   * The job's identity for the service's "at most one successful call" (String attribute `idempotencyKey`, 1 to 512
   * characters): give one when the same job may be enqueued twice.
   * @default left out: the service uses the message id
   */
  readonly idempotencyKey?: string;
  /** `MessageGroupId`: required on the FIFO queue (jobs of a group reach the API in order); on the main queue it is passed on as SQS fair-queue group. */
  readonly groupId?: string;
  /**
   * `MessageDeduplicationId`, FIFO queue only: SQS drops a second message with the same id sent within 5 minutes.
   * @default the idempotency key when given (its SHA-256 in hex when it is not a valid deduplication id: longer than
   * 128 characters or outside printable ASCII), else the SHA-256 in hex of the group id and the body's text: two
   * jobs with the same body in the same group within 5 minutes are then one. Give a `deduplicationId` or an
   * `idempotencyKey` when equal bodies are distinct jobs.
   */
  readonly deduplicationId?: string;
}

/** Where {@link enqueue} and {@link enqueueMany} send. */
export interface EnqueueOptions {
  readonly sqs: SQSClient;
  /**
   * The main queue's URL (stack output `MainQueueUrl`), the bulk queue's (`BulkQueueUrl`: jobs that may wait for the
   * main queue's) or the FIFO queue's (`FifoQueueUrl`, ending in `.fifo`).
   */
  readonly queueUrl: string;
}

/** How far {@link enqueueMany} has got: jobs sent, and jobs that failed (refused before sending, or by SQS). */
export interface EnqueueProgress {
  sent: number;
  failed: number;
}

/** A job of {@link enqueueMany} that was not sent: its index in the jobs given (from 0), and why. */
export interface EnqueueFailure {
  readonly index: number;
  readonly reason: string;
}

/**
 * The largest message the producers' queues take, body and attributes (names, types and values) counted in UTF-8
 * bytes: their `MaximumMessageSize` in resources/sqs.yml. It is also the most one SendMessageBatch request carries.
 */
export const MAX_MESSAGE_BYTES = 262_144;

/** Entries of one SendMessageBatch request, at most. */
export const MAX_BATCH_ENTRIES = 10;

/** SQS's group and deduplication ids: 1 to 128 characters, letters, digits and punctuation (printable ASCII but space). */
const SQS_ID = /^[\x21-\x7e]{1,128}$/;

/** A job checked and turned into the fields of a SendMessage request, but the queue URL. */
interface Prepared {
  readonly entry: Omit<SendMessageBatchRequestEntry, 'Id'>;
  readonly bytes: number;
}

/** The message's body: the job's body as JSON text. @throws EnqueueError naming `body` when it has none. */
function bodyText(body: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(body) as string | undefined;
  } catch (error) {
    throw new EnqueueError('body', `must serialise to JSON; JSON.stringify threw ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (text === undefined) throw new EnqueueError('body', `must serialise to JSON; got ${typeof body}`);
  return text;
}

/**
 * A quantity the service reserves (`cost`, a unit's estimate) as a Number attribute.
 * @throws EnqueueError naming `field` when it is not an integer from 0 to `MAX_QUANTITY`.
 */
function quantityAttribute(field: string, value: unknown): MessageAttributeValue {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_QUANTITY)
    throw new EnqueueError(field, `must be an integer from 0 to ${MAX_QUANTITY}; got ${String(value)}`);
  return { DataType: 'Number', StringValue: String(value) };
}

/**
 * The message attributes of `job`: `cost`, one per unit estimate, `idempotencyKey`, each when given.
 * @throws EnqueueError naming the field at fault.
 */
function attributesOf(job: ProducerJob): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  if (job.cost !== undefined) attributes[ATTRIBUTES.cost] = quantityAttribute('cost', job.cost);
  for (const [unit, estimate] of Object.entries(job.estimates ?? {})) {
    const field = `estimates.${unit}`;
    const problem = unitNameProblem(unit);
    if (problem !== undefined) throw new EnqueueError(field, `names no unit: its name ${problem}`);
    if (unit === ATTRIBUTES.cost && job.cost !== undefined)
      throw new EnqueueError(field, 'repeats cost: give one of the two');
    attributes[unit] = quantityAttribute(field, estimate);
  }
  const key = job.idempotencyKey;
  if (key !== undefined) {
    if (typeof key !== 'string' || key.length === 0 || key.length > 512) {
      throw new EnqueueError(
        'idempotencyKey',
        `must be a string of 1 to 512 characters; got ${typeof key === 'string' ? `length ${key.length}` : typeof key}`,
      );
    }
    attributes[ATTRIBUTES.idempotencyKey] = { DataType: 'String', StringValue: key };
  }
  return attributes;
}

/** @throws EnqueueError naming `field` when `value` is not an SQS group or deduplication id. */
function checkSqsId(field: string, value: unknown): void {
  if (typeof value !== 'string' || !SQS_ID.test(value)) {
    throw new EnqueueError(
      field,
      `must be 1 to 128 letters, digits or punctuation (printable ASCII but space); got ${JSON.stringify(value)}`,
    );
  }
}

/**
 * Checks the job's group and deduplication ids as SQS will: a FIFO queue needs a group, and only it takes a
 * deduplication id.
 * @throws EnqueueError naming `groupId` or `deduplicationId`.
 */
function checkQueueIds(job: ProducerJob, queueUrl: string, fifo: boolean): void {
  const { groupId, deduplicationId } = job;
  if (groupId !== undefined) checkSqsId('groupId', groupId);
  if (fifo && groupId === undefined) throw new EnqueueError('groupId', `is required on a FIFO queue (${queueUrl})`);
  if (deduplicationId === undefined) return;
  if (!fifo)
    throw new EnqueueError('deduplicationId', `is only valid on a FIFO queue; ${queueUrl} is a standard queue`);
  checkSqsId('deduplicationId', deduplicationId);
}

/** A message attribute as the service receives it. */
interface ReceivedAttribute {
  readonly dataType: string;
  readonly value: string;
}

/**
 * Checks the message as the service will check it on receipt (body depth, and whatever it checks beyond the
 * producer's own checks), with `parseJob` itself.
 * @throws EnqueueError naming `body` with the service's reason.
 */
function checkAsReceived(
  body: string,
  attributes: Readonly<Record<string, ReceivedAttribute>>,
  fifo: boolean,
  groupId: string | undefined,
): void {
  const parsed = parseJob({
    queue: fifo ? 'fifo' : 'main',
    messageId: 'enqueue',
    receiptHandle: '',
    body,
    attributes,
    receiveCount: 1,
    ...(groupId === undefined ? {} : { groupId }),
  });
  if (!parsed.ok) throw new EnqueueError('body', parsed.reason.replace(/^malformed: /, ''));
}

/**
 * The message's size as SQS counts it: body, and each attribute's name, type and value, in UTF-8 bytes.
 * @throws EnqueueError naming `size` when it exceeds {@link MAX_MESSAGE_BYTES}.
 */
function messageBytes(body: string, attributes: Readonly<Record<string, ReceivedAttribute>>): number {
  const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');
  const bytes = Object.entries(attributes).reduce(
    (sum, [name, a]) => sum + utf8(name) + utf8(a.dataType) + utf8(a.value),
    utf8(body),
  );
  if (bytes > MAX_MESSAGE_BYTES)
    throw new EnqueueError(
      'size',
      `the message (body and attributes) must be at most ${MAX_MESSAGE_BYTES} bytes, the queue's limit; got ${bytes}`,
    );
  return bytes;
}

/**
 * Checks `job` as the service and SQS will (see {@link enqueue}) and builds its message.
 * @throws EnqueueError naming the field at fault.
 */
function prepare(job: ProducerJob, queueUrl: string): Prepared {
  const fifo = queueUrl.endsWith('.fifo');
  const body = bodyText(job.body);
  const attributes = attributesOf(job);
  checkQueueIds(job, queueUrl, fifo);
  const { groupId, deduplicationId } = job;
  const received = Object.fromEntries(
    Object.entries(attributes).map(([name, a]) => [
      name,
      { dataType: a.DataType ?? 'String', value: a.StringValue ?? '' },
    ]),
  );
  checkAsReceived(body, received, fifo, groupId);
  const bytes = messageBytes(body, received);
  const dedup = !fifo ? undefined : (deduplicationId ?? deduplicationOf(job.idempotencyKey, groupId ?? '', body));
  return {
    entry: {
      MessageBody: body,
      ...(Object.keys(attributes).length === 0 ? {} : { MessageAttributes: attributes }),
      ...(groupId === undefined ? {} : { MessageGroupId: groupId }),
      ...(dedup === undefined ? {} : { MessageDeduplicationId: dedup }),
    },
    bytes,
  };
}

/** The default deduplication id of a FIFO job (see {@link ProducerJob.deduplicationId}). */
function deduplicationOf(idempotencyKey: string | undefined, groupId: string, body: string): string {
  const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
  if (idempotencyKey !== undefined) return SQS_ID.test(idempotencyKey) ? idempotencyKey : sha256(idempotencyKey);
  return sha256(`${groupId}\n${body}`);
}

/**
 * Sends one job with SendMessage, as the service reads it: the body as JSON text, `cost` (Number) and
 * `idempotencyKey` (String) message attributes when given, the FIFO group and deduplication ids (see
 * {@link ProducerJob}). The job is checked first, as the orchestrator will check it (a job it would dead-letter as
 * malformed is refused here) and as SQS will (group and deduplication ids, and at most {@link MAX_MESSAGE_BYTES}
 * with its attributes).
 * @returns the SQS message id.
 * @throws EnqueueError for a job that cannot be sent as it is; nothing was sent.
 * @throws the SDK's error when SQS refuses the request or cannot be reached (after the client's own retries).
 */
export async function enqueue(job: ProducerJob, options: EnqueueOptions): Promise<{ readonly messageId: string }> {
  const { entry } = prepare(job, options.queueUrl);
  const { MessageId } = await options.sqs.send(new SendMessageCommand({ QueueUrl: options.queueUrl, ...entry }));
  if (MessageId === undefined) throw new Error(`SQS returned no MessageId for a message sent to ${options.queueUrl}`);
  return { messageId: MessageId };
}

/**
 * Sends many jobs, each as {@link enqueue} does, with SendMessageBatch: up to {@link MAX_BATCH_ENTRIES} to a request
 * and at most {@link MAX_MESSAGE_BYTES} in all. Requests go one at a time, in the order of `jobs`, so the jobs of a
 * FIFO group keep that order. It never throws for a job: a job that fails its checks is not sent, an entry SQS refuses
 * and the entries of a request that failed as a whole (after the client's own retries) are failures, each with its
 * index in `jobs` and why, and the rest go on.
 * @param options.onProgress told after each request and each job refused before sending, with the totals so far.
 * @returns how many were sent, and the failures in index order.
 * @throws only what iterating `jobs` throws.
 */
export async function enqueueMany(
  jobs: Iterable<ProducerJob> | AsyncIterable<ProducerJob>,
  options: EnqueueOptions & { readonly onProgress?: (progress: EnqueueProgress) => void },
): Promise<{ readonly sent: number; readonly failed: readonly EnqueueFailure[] }> {
  const { sqs, queueUrl, onProgress } = options;
  const failed: EnqueueFailure[] = [];
  let sent = 0;
  let batch: (Prepared & { readonly index: number })[] = [];
  let batchBytes = 0;
  const report = () => onProgress?.({ sent, failed: failed.length });

  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const chunk = batch;
    batch = [];
    batchBytes = 0;
    try {
      const response = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map(({ index, entry }) => ({ Id: String(index), ...entry })),
        }),
      );
      const refused = response.Failed ?? [];
      for (const entry of refused)
        failed.push({
          index: Number(entry.Id),
          reason: `SQS refused the message: ${entry.Code ?? 'error'}${entry.Message === undefined ? '' : ` ${entry.Message}`}`,
        });
      sent += chunk.length - refused.length;
    } catch (error) {
      for (const { index } of chunk)
        failed.push({
          index,
          reason: `SendMessageBatch failed: ${(error as Error).name}: ${(error as Error).message}`,
        });
    }
    report();
  };

  let index = 0;
  for await (const job of jobs) {
    const at = index++;
    let prepared: Prepared;
    try {
      prepared = prepare(job, queueUrl);
    } catch (error) {
      if (!(error instanceof EnqueueError)) throw error;
      failed.push({ index: at, reason: error.message });
      report();
      continue;
    }
    if (batch.length === MAX_BATCH_ENTRIES || batchBytes + prepared.bytes > MAX_MESSAGE_BYTES) await flush();
    batch.push({ ...prepared, index: at });
    batchBytes += prepared.bytes;
  }
  await flush();
  return { sent, failed: failed.sort((a, b) => a.index - b.index) };
}
