import { GetQueueUrlCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { JobResult, ResultHandler, UndeliveredResult } from '../../ports/ResultHandler';
import { boundedResultJson, requestsOf, utf8Bytes } from './resultJson';

/** Options of {@link SqsResultDestination}. */
export interface SqsResultDestinationOptions {
  readonly client: SQSClient;
  /** The result queue's ARN (`arn:aws:sqs:<region>:<account>:<name>`), as `custom.quotaOrchestrator.results.queueArn` holds it. */
  readonly queueArn: string;
}

/**
 * The most one result message, and one SendMessageBatch request, carries: 256 KiB, SQS's long-standing limit, which
 * every queue takes whatever its `MaximumMessageSize` beyond the default.
 */
export const MAX_RESULT_MESSAGE_BYTES = 262_144;

const MAX_BATCH = 10;

/**
 * The account and name of the queue `arn` names.
 * @throws Error when `arn` is not an SQS queue's ARN.
 */
export function queueOfArn(arn: string): { readonly account: string; readonly name: string } {
  const match = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:(\d{12}):([A-Za-z0-9_.-]+)$/.exec(arn);
  if (match === null) throw new Error(`not the ARN of an SQS queue: ${arn}`);
  return { account: match[1]!, name: match[2]! };
}

/**
 * The default result handler with an SQS result destination: each result is one message whose body is the
 * {@link JobResult} as JSON (its body cut to fit {@link MAX_RESULT_MESSAGE_BYTES}, with `bodyTruncated`), sent with
 * SendMessageBatch, ten to a request. On a FIFO queue (ARN ending in `.fifo`) the message group is the job's FIFO
 * group, else its dispatch id, and the deduplication id the dispatch id (one dispatch succeeds once).
 *
 * The queue's URL is asked of SQS (GetQueueUrl, by name and owner account) at the first delivery and kept, rather
 * than spelled from the ARN, so that it is the one the client's endpoint knows (an emulator's, a VPC endpoint's). The
 * queue must be in the client's region.
 */
export class SqsResultDestination implements ResultHandler {
  /** `sqs <queueArn>`. */
  readonly destination: string;
  private readonly client: SQSClient;
  private readonly queue: { readonly account: string; readonly name: string };
  private readonly fifo: boolean;
  private queueUrl: Promise<string> | undefined;

  /** @throws Error when `queueArn` is not an SQS queue's ARN. */
  constructor({ client, queueArn }: SqsResultDestinationOptions) {
    this.client = client;
    this.destination = `sqs ${queueArn}`;
    this.queue = queueOfArn(queueArn);
    this.fifo = queueArn.endsWith('.fifo');
  }

  /** The queue's URL, asked once; asked again after a failure. */
  private url(): Promise<string> {
    this.queueUrl ??= (async () => {
      const { QueueUrl } = await this.client.send(
        new GetQueueUrlCommand({ QueueName: this.queue.name, QueueOwnerAWSAccountId: this.queue.account }),
      );
      if (QueueUrl === undefined) throw new Error(`GetQueueUrl of '${this.queue.name}' returned no QueueUrl`);
      return QueueUrl;
    })();
    return this.queueUrl.catch((error: unknown) => {
      this.queueUrl = undefined;
      throw error;
    });
  }

  /**
   * Sends every request; an entry SQS refuses, or a request that fails as a whole, makes its results undelivered, and
   * so does a queue URL that cannot be had.
   */
  async deliver(results: readonly JobResult[]): Promise<readonly UndeliveredResult[]> {
    let queueUrl: string;
    try {
      queueUrl = await this.url();
    } catch (error) {
      return results.map((result) => ({
        result,
        reason: `GetQueueUrl failed: ${(error as Error).name}: ${(error as Error).message}`,
      }));
    }
    const messages = results.map((result, index) => ({
      index,
      result,
      body: boundedResultJson(result, MAX_RESULT_MESSAGE_BYTES),
    }));
    const undelivered: UndeliveredResult[] = [];
    for (const request of requestsOf(
      messages,
      (message) => utf8Bytes(message.body),
      MAX_BATCH,
      MAX_RESULT_MESSAGE_BYTES,
    )) {
      const Entries = request.map(({ index, result, body }) => ({
        Id: String(index),
        MessageBody: body,
        ...(this.fifo
          ? { MessageGroupId: result.groupId ?? result.dispatchId, MessageDeduplicationId: result.dispatchId }
          : {}),
      }));
      try {
        const { Failed = [] } = await this.client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries }));
        for (const entry of Failed)
          undelivered.push({
            result: results[Number(entry.Id)]!,
            reason: `SQS refused the result: ${entry.Code ?? 'error'}${entry.Message === undefined ? '' : ` ${entry.Message}`}`,
          });
      } catch (error) {
        for (const { result } of request)
          undelivered.push({
            result,
            reason: `SendMessageBatch failed: ${(error as Error).name}: ${(error as Error).message}`,
          });
      }
    }
    return undelivered;
  }
}
