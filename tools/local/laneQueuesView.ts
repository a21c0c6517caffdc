import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import {
  DEAD_LETTER_QUEUES,
  QUEUE_NAMES,
  READ_ORDER,
  type QueueName,
  type ReceivedMessage,
} from '../../lib/ports/QueueReceiver';

/** What the state of one queue is (SQS's approximate counts, exact on fauxqs). */
export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** The lane's queues summed up. */
export interface LaneDepths {
  /** Messages waiting in the source queues (visible or delayed). */
  readonly queued: number;
  /** Source messages received and not yet deleted: waiting for their pacing slot or with a worker. */
  readonly inFlight: number;
  /** Messages anywhere in the dead-letter queues. */
  readonly deadLettered: number;
}

/** A lane's eight queues as an operator looks at them from outside the service: depths, and what they hold. */
export class LaneQueuesView {
  private readonly queues: SqsQueues;

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrls: Readonly<Record<QueueName, string>>,
  ) {
    this.queues = new SqsQueues({ client: sqs, queueUrls });
  }

  /** Visible, in-flight and delayed messages of a queue. */
  async depth(queue: QueueName): Promise<QueueDepth> {
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrls[queue],
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return {
      visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }

  /** Messages anywhere in a queue: visible, in flight or delayed. */
  async count(queue: QueueName): Promise<number> {
    const d = await this.depth(queue);
    return d.visible + d.inFlight + d.delayed;
  }

  /** Messages per queue, for failure messages: `{ main: 0, 'main-dlq': 1, … }`. */
  async counts(): Promise<Record<QueueName, number>> {
    const entries = await Promise.all(QUEUE_NAMES.map(async (q) => [q, await this.count(q)] as const));
    return Object.fromEntries(entries) as Record<QueueName, number>;
  }

  /** The source queues' waiting and in-flight messages, and the dead-letter queues' messages. */
  async laneDepths(): Promise<LaneDepths> {
    const [sources, dead] = await Promise.all([
      Promise.all(READ_ORDER.map((q) => this.depth(q))),
      Promise.all(DEAD_LETTER_QUEUES.map((q) => this.count(q))),
    ]);
    return {
      queued: sources.reduce((sum, d) => sum + d.visible + d.delayed, 0),
      inFlight: sources.reduce((sum, d) => sum + d.inFlight, 0),
      deadLettered: dead.reduce((sum, n) => sum + n, 0),
    };
  }

  /** Receives every visible message of a queue, keeping them hidden for a minute (they stay in the queue). */
  async receiveAll(queue: QueueName): Promise<ReceivedMessage[]> {
    const all: ReceivedMessage[] = [];
    for (;;) {
      const received = await this.queues.receive(queue, { max: 10, visibilityMs: 60_000, waitMs: 0 });
      if (received.length === 0) return all;
      all.push(...received);
    }
  }

  /** Every message of the four dead-letter queues, received as {@link LaneQueuesView.receiveAll} does. */
  async receiveDeadLetters(): Promise<ReceivedMessage[]> {
    return (await Promise.all(DEAD_LETTER_QUEUES.map((q) => this.receiveAll(q)))).flat();
  }
}
