import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { deadLetterQueueOf, READ_ORDER, type QueueName, type SourceQueue } from '../../lib/ports/QueueReceiver';

/** Options of {@link createLaneQueues}. */
export interface LaneQueuesOptions {
  /** Receives after which SQS moves a source queue's message to its dead-letter queue. @default 5 */
  readonly maxReceiveCount?: number;
  /** The FIFO queue's, as `custom.queues.fifoMaxReceiveCount` sets it when deployed. @default `maxReceiveCount` */
  readonly fifoMaxReceiveCount?: number;
}

/**
 * Creates a queue with `attributes` (as CreateQueue takes them) and returns its URL.
 * @throws Error when SQS returns no URL.
 */
export async function createQueue(
  client: SQSClient,
  name: string,
  attributes: Record<string, string>,
): Promise<string> {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (QueueUrl === undefined) throw new Error(`CreateQueue '${name}' returned no QueueUrl`);
  return QueueUrl;
}

/**
 * The ARN of the queue at `url`.
 * @throws Error when SQS returns none.
 */
export async function queueArn(client: SQSClient, url: string): Promise<string> {
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`GetQueueAttributes of ${url} returned no QueueArn`);
  return arn;
}

/**
 * Creates a lane's eight queues, named after `prefix` (e.g. from `uniqueName`), and returns their URLs as
 * `SqsQueues` takes them:
 * - `main`, `bulk` and `requeue`: standard queues;
 * - `fifo` (`<prefix>-fifo.fifo`): FIFO, without content-based deduplication, like the deployed one;
 * - one dead-letter queue per source queue, of the same type (the FIFO queue's DLQ is FIFO too, as SQS
 *   requires), with a `RedrivePolicy` on the source queue.
 * @throws Error if the resulting names exceed SQS's 80 characters.
 */
export async function createLaneQueues(
  client: SQSClient,
  prefix: string,
  options: LaneQueuesOptions = {},
): Promise<Record<QueueName, string>> {
  const maxReceiveCount = options.maxReceiveCount ?? 5;
  const fifoMaxReceiveCount = options.fifoMaxReceiveCount ?? maxReceiveCount;
  const longest = `${prefix}-fifo-dlq.fifo`;
  if (longest.length > 80)
    throw new Error(`queue name prefix '${prefix}' is too long: '${longest}' exceeds 80 characters`);

  const create = async (queue: SourceQueue): Promise<[string, string]> => {
    const fifo = queue === 'fifo';
    const suffix = fifo ? '.fifo' : '';
    const typeAttributes: Record<string, string> = fifo
      ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' }
      : {};
    const dlqUrl = await createQueue(client, `${prefix}-${queue}-dlq${suffix}`, typeAttributes);
    const redrivePolicy = JSON.stringify({
      deadLetterTargetArn: await queueArn(client, dlqUrl),
      maxReceiveCount: fifo ? fifoMaxReceiveCount : maxReceiveCount,
    });
    const url = await createQueue(client, `${prefix}-${queue}${suffix}`, {
      ...typeAttributes,
      RedrivePolicy: redrivePolicy,
    });
    return [url, dlqUrl];
  };
  const created = await Promise.all(READ_ORDER.map(async (queue) => [queue, await create(queue)] as const));
  return Object.fromEntries(
    created.flatMap(([queue, [url, dlqUrl]]) => [
      [queue, url],
      [deadLetterQueueOf(queue), dlqUrl],
    ]),
  ) as Record<QueueName, string>;
}
