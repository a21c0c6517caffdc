/**
 * The lane's queues: the four sources, read in the order requeue ▸ fifo ▸ main ▸ bulk (bulk also as its share is
 * due, see `PrioritySettings`), and a dead-letter queue each.
 */
export type SourceQueue = 'requeue' | 'fifo' | 'main' | 'bulk';

/** Where a source queue's dead letters go. */
export type DeadLetterQueue = `${SourceQueue}-dlq`;

/** Any queue of a lane. */
export type QueueName = SourceQueue | DeadLetterQueue;

/**
 * Source queues in the order the orchestrator reads them: retried work first, then ordered work, then new work, then
 * work that may wait for it (bulk, whose jobs also go ahead of the others' as its share is due).
 */
export const READ_ORDER: readonly SourceQueue[] = ['requeue', 'fifo', 'main', 'bulk'];

/** The dead-letter queue of a source queue. */
export function deadLetterQueueOf(queue: SourceQueue): DeadLetterQueue {
  return `${queue}-dlq`;
}

/** The dead-letter queues, in {@link READ_ORDER} of their sources. */
export const DEAD_LETTER_QUEUES: readonly DeadLetterQueue[] = READ_ORDER.map(deadLetterQueueOf);

/** Every queue of a lane, sources first. */
export const QUEUE_NAMES: readonly QueueName[] = [...READ_ORDER, ...DEAD_LETTER_QUEUES];

/**
 * Message attributes the service reads or writes; others are kept but ignored. Producers set `cost` and
 * `idempotencyKey`; a requeued copy carries `attempt`; a dead letter carries `reason`, `attempt` and `sourceQueue`,
 * `originalMessageId` (the id of the message it was), and, when a worker dead-lettered it after a call, `dispatchId`
 * (the dispatch that called) and `apiError` (the start of the API's answer, see `deadLetter`).
 */
export const ATTRIBUTES = {
  cost: 'cost',
  idempotencyKey: 'idempotencyKey',
  attempt: 'attempt',
  reason: 'reason',
  sourceQueue: 'sourceQueue',
  originalMessageId: 'originalMessageId',
  dispatchId: 'dispatchId',
  apiError: 'apiError',
} as const;

/** An SQS message attribute: a data type (`String`, `Number`, …) and its value as text. */
export interface MessageAttribute {
  readonly dataType: string;
  readonly value: string;
}

/** A message as received. */
export interface ReceivedMessage {
  readonly queue: QueueName;
  readonly messageId: string;
  readonly receiptHandle: string;
  /** The raw body; validated by the orchestrator, never trusted. */
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  /** FIFO `MessageGroupId`, if any. */
  readonly groupId?: string;
  /** How many times this message has been received, this time included (SQS `ApproximateReceiveCount`). */
  readonly receiveCount: number;
}

/** The FIFO group of `message`, or `undefined` for a message of another queue. */
export function fifoGroupOf(message: { readonly queue: QueueName; readonly groupId?: string }): string | undefined {
  return message.queue === 'fifo' ? message.groupId : undefined;
}

/** A message to send. */
export interface OutgoingMessage {
  readonly body: string;
  readonly attributes?: Readonly<Record<string, MessageAttribute>>;
  /** Delivery delay; SQS allows 0..900 000 ms (whole seconds). @default 0 */
  readonly delayMs?: number;
  /** Required for FIFO queues. */
  readonly groupId?: string;
  /** FIFO deduplication id; defaults to a fresh id. */
  readonly deduplicationId?: string;
}

/** A message of {@link QueueReceiver.sendBatch} that was not sent: its index among those given, and why. */
export interface SendFailure {
  readonly index: number;
  readonly reason: string;
}

/** Options of {@link QueueReceiver.receive}. */
export interface ReceiveOptions {
  /** At most this many messages (SQS allows 1..10). */
  readonly max: number;
  /** How long received messages stay invisible to other receivers. */
  readonly visibilityMs: number;
  /** Long-poll wait when the queue is empty (SQS allows 0..20 000 ms). */
  readonly waitMs: number;
}

/**
 * Receives from, and writes back to, the lane's queues with SQS semantics: visibility timeouts, delays,
 * and the FIFO group lock (no message of a group is delivered while another of that group is in flight).
 */
export interface QueueReceiver {
  receive(queue: SourceQueue, options: ReceiveOptions): Promise<ReceivedMessage[]>;
  send(queue: QueueName, message: OutgoingMessage): Promise<void>;
  /**
   * Sends several messages to one queue, as {@link QueueReceiver.send} does each, ten to a request (a message too
   * large to share a request goes alone). Every request is made, and a failed one fails its messages, not the call.
   * @returns the messages that were not sent, each with why (none when all were).
   * @throws Error, before any request, for a message `send` would refuse outright (a FIFO message without a group).
   */
  sendBatch(queue: QueueName, messages: readonly OutgoingMessage[]): Promise<readonly SendFailure[]>;
  /** Deletes a received message; deleting one that is already gone is not an error. */
  delete(queue: QueueName, receiptHandle: string): Promise<void>;
  /**
   * Deletes received messages of one queue, as {@link QueueReceiver.delete} does each, ten to a request.
   * @throws Error naming the messages that could not be deleted, once every request was made.
   */
  deleteBatch(queue: QueueName, receiptHandles: readonly string[]): Promise<void>;
  /** Sets how long a received message stays invisible from now; 0 makes it visible again at once. */
  changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void>;
  /**
   * How many messages `queue` holds: visible, in flight (received, not yet deleted) or delayed, all work that is not
   * done. Approximate on SQS, which counts a little behind.
   */
  messageCount(queue: SourceQueue): Promise<number>;
}
