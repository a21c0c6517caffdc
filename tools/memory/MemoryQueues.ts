import type { Clock } from '../../lib/ports/Clock';
import {
  QUEUE_NAMES,
  READ_ORDER,
  deadLetterQueueOf,
  type MessageAttribute,
  type OutgoingMessage,
  type QueueName,
  type QueueReceiver,
  type ReceiveOptions,
  type ReceivedMessage,
  type SendFailure,
  type SourceQueue,
} from '../../lib/ports/QueueReceiver';

/** SQS limits, in milliseconds where they are durations. */
const MAX_DELAY_MS = 900_000;
const MAX_VISIBILITY_MS = 43_200_000;
const MAX_WAIT_MS = 20_000;
const MAX_BATCH = 10;
const MAX_BODY_BYTES = 262_144;
const DEDUPLICATION_WINDOW_MS = 300_000;

/** Options of {@link MemoryQueues}. */
export interface MemoryQueuesOptions {
  /** All visibility, delay and long-poll timing runs on this clock. */
  readonly clock: Clock;
  /** A source queue's message is moved to its dead-letter queue instead of being received more often than this. @default 10 */
  readonly maxReceiveCount?: number;
  /** The FIFO queue's own `maxReceiveCount` (see `fifoRedriveThreshold`). @default maxReceiveCount */
  readonly fifoMaxReceiveCount?: number;
}

/** A stored message as {@link MemoryQueues.messages} shows it. */
export interface StoredMessageSnapshot {
  readonly messageId: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly groupId?: string;
  /** Receives so far; kept when the message is redriven to a dead-letter queue. */
  readonly receiveCount: number;
  /** Instant (epoch ms) from which the message can be received: end of its delay or of its visibility timeout. */
  readonly visibleAt: number;
  /** Received, not deleted, and its visibility timeout not over. */
  readonly inFlight: boolean;
}

/**
 * Refuses what SQS refuses of any message to `queue` before sending: a delay out of 0..900 000 ms, a FIFO message
 * without a group or with a delay, a deduplication id on a standard queue.
 */
function checkShape(queue: QueueName, message: OutgoingMessage): void {
  const delayMs = message.delayMs ?? 0;
  checkRange('delayMs', delayMs, 0, MAX_DELAY_MS);
  if (isFifo(queue)) {
    if (message.groupId === undefined) throw new Error(`send to FIFO queue '${queue}' needs a groupId`);
    if (delayMs > 0) throw new Error(`FIFO queue '${queue}' does not support per-message delays`);
  } else if (message.deduplicationId !== undefined) {
    throw new Error(`deduplicationId is only valid on FIFO queues, not on '${queue}'`);
  }
}

/** Request counters of {@link MemoryQueues.stats}: one per API call, whatever it returned. */
export type QueueRequestStats = Record<
  'receive' | 'send' | 'sendBatch' | 'delete' | 'deleteBatch' | 'changeVisibility' | 'messageCount',
  number
>;

interface StoredMessage {
  readonly messageId: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly groupId?: string;
  visibleAt: number;
  receiveCount: number;
  /** Handle of the latest receive; older handles are stale. */
  receiptHandle?: string;
}

interface QueueState {
  /** In arrival order (send, or redrive into a dead-letter queue). */
  messages: StoredMessage[];
  /** FIFO deduplication id → instant of the first send that carried it. */
  readonly deduplication: Map<string, number>;
  /** Long pollers to wake when anything about this queue changes. */
  readonly waiters: Set<() => void>;
}

function isFifo(queue: QueueName): boolean {
  return queue === 'fifo' || queue === 'fifo-dlq';
}

function isSource(queue: QueueName): queue is SourceQueue {
  return (READ_ORDER as readonly QueueName[]).includes(queue);
}

function checkRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(`${name} must be within ${min}..${max}, got ${value}`);
  }
}

function isInFlight(message: StoredMessage, now: number): boolean {
  return message.receiptHandle !== undefined && message.visibleAt > now;
}

/**
 * The lane's eight queues in memory, with SQS semantics on an injected clock, for unit tests and the virtual-time
 * simulation. Ids are deterministic counters (`m-1`…, `r-1`…).
 *
 * - Standard queues deliver visible messages oldest first.
 * - FIFO queues (`fifo`, `fifo-dlq`) deliver each group in send order and hold a group back while any of its
 *   messages is in flight. Like SQS, one receive fills up from one group before moving to the next, so a batch
 *   may hold several consecutive messages of one group.
 * - A source queue's message that was already received `maxReceiveCount` times is moved to its dead-letter queue
 *   when a receive would deliver it again.
 */
export class MemoryQueues implements QueueReceiver {
  /** Request counters, one per call. */
  readonly stats: QueueRequestStats = {
    receive: 0,
    send: 0,
    sendBatch: 0,
    delete: 0,
    deleteBatch: 0,
    changeVisibility: 0,
    messageCount: 0,
  };

  private readonly clock: Clock;
  private readonly maxReceiveCount: number;
  private readonly fifoMaxReceiveCount: number;
  private readonly queues = new Map<QueueName, QueueState>();
  private messageSeq = 0;
  private handleSeq = 0;

  /** @throws RangeError if `maxReceiveCount` or `fifoMaxReceiveCount` is not an integer within 1..1000 (the SQS range). */
  constructor({ clock, maxReceiveCount = 10, fifoMaxReceiveCount = maxReceiveCount }: MemoryQueuesOptions) {
    for (const [name, count] of Object.entries({ maxReceiveCount, fifoMaxReceiveCount })) {
      if (!Number.isInteger(count)) throw new RangeError(`${name} must be an integer, got ${count}`);
      checkRange(name, count, 1, 1000);
    }
    this.clock = clock;
    this.maxReceiveCount = maxReceiveCount;
    this.fifoMaxReceiveCount = fifoMaxReceiveCount;
    for (const name of QUEUE_NAMES)
      this.queues.set(name, { messages: [], deduplication: new Map(), waiters: new Set() });
  }

  /**
   * Receives up to `max` visible messages; each becomes invisible for `visibilityMs` and gets a new receipt handle.
   * If none is visible, waits up to `waitMs` for one (a send, a delete that frees a FIFO group, or a delay or
   * visibility timeout running out), then returns what is visible, possibly nothing.
   * Accepts dead-letter queues too, which never redrive.
   * @throws RangeError if `max` is not 1..10, `visibilityMs` not 0..43 200 000 or `waitMs` not 0..20 000.
   */
  async receive(queue: QueueName, { max, visibilityMs, waitMs }: ReceiveOptions): Promise<ReceivedMessage[]> {
    const state = this.state(queue);
    this.stats.receive++;
    if (!Number.isInteger(max)) throw new RangeError(`max must be an integer, got ${max}`);
    checkRange('max', max, 1, MAX_BATCH);
    checkRange('visibilityMs', visibilityMs, 0, MAX_VISIBILITY_MS);
    checkRange('waitMs', waitMs, 0, MAX_WAIT_MS);
    const deadline = this.clock.now() + waitMs;
    for (;;) {
      const received = this.take(queue, max, visibilityMs);
      const now = this.clock.now();
      if (received.length > 0 || now >= deadline) return received;
      await this.waitForChange(state, Math.min(deadline, this.nextVisibleAt(state, now)) - now);
    }
  }

  /**
   * Stores a message. On FIFO queues, a `deduplicationId` already sent in the last 5 minutes is accepted and dropped.
   * @throws RangeError if `delayMs` is not 0..900 000 or the body is empty or over 256 KiB.
   * @throws Error on a FIFO queue without `groupId` or with a delay (SQS allows only queue-level delays there),
   *   and on a standard queue with a `deduplicationId`.
   */
  async send(queue: QueueName, message: OutgoingMessage): Promise<void> {
    this.stats.send++;
    this.store(queue, message);
  }

  /**
   * {@link MemoryQueues.send} for each message, as one request; a message SQS would refuse is returned with why.
   * @throws as `send` does, before storing any, for a message no request could carry (see `checkShape`).
   */
  async sendBatch(queue: QueueName, messages: readonly OutgoingMessage[]): Promise<readonly SendFailure[]> {
    this.stats.sendBatch++;
    for (const message of messages) checkShape(queue, message);
    const failures: SendFailure[] = [];
    for (const [index, message] of messages.entries()) {
      try {
        this.store(queue, message);
      } catch (error) {
        failures.push({ index, reason: (error as Error).message });
      }
    }
    return failures;
  }

  /** Stores a message as {@link MemoryQueues.send} does. */
  private store(queue: QueueName, message: OutgoingMessage): void {
    const state = this.state(queue);
    checkShape(queue, message);
    checkRange('body size in bytes', Buffer.byteLength(message.body, 'utf8'), 1, MAX_BODY_BYTES);
    const now = this.clock.now();
    const delayMs = message.delayMs ?? 0;
    if (message.deduplicationId !== undefined) {
      const firstSentAt = state.deduplication.get(message.deduplicationId);
      if (firstSentAt !== undefined && now - firstSentAt < DEDUPLICATION_WINDOW_MS) return;
      state.deduplication.set(message.deduplicationId, now);
    }
    state.messages.push({
      messageId: `m-${++this.messageSeq}`,
      body: message.body,
      attributes: { ...message.attributes },
      ...(message.groupId === undefined ? {} : { groupId: message.groupId }),
      visibleAt: now + delayMs,
      receiveCount: 0,
    });
    this.notify(state);
  }

  /** {@link MemoryQueues.delete} for each handle, as one request. */
  async deleteBatch(queue: QueueName, receiptHandles: readonly string[]): Promise<void> {
    this.stats.deleteBatch++;
    for (const handle of receiptHandles) this.remove(queue, handle);
  }

  /** Deletes the message received with `receiptHandle`; a stale, unknown or already used handle is ignored. */
  async delete(queue: QueueName, receiptHandle: string): Promise<void> {
    this.stats.delete++;
    this.remove(queue, receiptHandle);
  }

  /** Removes the message received with `receiptHandle`, if it is still there. */
  private remove(queue: QueueName, receiptHandle: string): void {
    const state = this.state(queue);
    const index = state.messages.findIndex((m) => m.receiptHandle === receiptHandle);
    if (index < 0) return;
    state.messages.splice(index, 1);
    this.notify(state);
  }

  /**
   * Makes the message received with `receiptHandle` invisible for `visibilityMs` from now; 0 makes it visible at
   * once, which also releases its FIFO group.
   * @throws RangeError if `visibilityMs` is not 0..43 200 000.
   * @throws Error if the handle is not the latest of a stored message (SQS `ReceiptHandleIsInvalid`), or its
   *   visibility timeout is already over (SQS `MessageNotInflight`).
   */
  async changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void> {
    const state = this.state(queue);
    this.stats.changeVisibility++;
    checkRange('visibilityMs', visibilityMs, 0, MAX_VISIBILITY_MS);
    const now = this.clock.now();
    const message = state.messages.find((m) => m.receiptHandle === receiptHandle);
    if (message === undefined) {
      throw new Error(
        `ReceiptHandleIsInvalid: '${receiptHandle}' is not the latest receipt of a message in '${queue}'`,
      );
    }
    if (!isInFlight(message, now)) {
      throw new Error(`MessageNotInflight: message ${message.messageId} in '${queue}' is not in flight`);
    }
    message.visibleAt = now + visibilityMs;
    this.notify(state);
  }

  /** Snapshot of every message stored in `queue` (visible, delayed or in flight), in arrival order. */
  messages(queue: QueueName): StoredMessageSnapshot[] {
    const now = this.clock.now();
    return this.state(queue).messages.map((m) => ({
      messageId: m.messageId,
      body: m.body,
      attributes: { ...m.attributes },
      ...(m.groupId === undefined ? {} : { groupId: m.groupId }),
      receiveCount: m.receiveCount,
      visibleAt: m.visibleAt,
      inFlight: isInFlight(m, now),
    }));
  }

  /** {@link MemoryQueues.depth}, counted as a request: the port's view. */
  async messageCount(queue: SourceQueue): Promise<number> {
    this.stats.messageCount++;
    return this.depth(queue);
  }

  /** Number of messages stored in `queue`: visible, delayed and in flight. */
  depth(queue: QueueName): number {
    return this.state(queue).messages.length;
  }

  private state(queue: QueueName): QueueState {
    const state = this.queues.get(queue);
    if (state === undefined) throw new Error(`unknown queue '${queue}'`);
    return state;
  }

  /** Receives without waiting: picks the deliverable messages in order, redriving those received too often. */
  private take(queue: QueueName, max: number, visibilityMs: number): ReceivedMessage[] {
    const now = this.clock.now();
    const state = this.state(queue);
    const received: ReceivedMessage[] = [];
    for (const message of this.deliverable(queue, state, now)) {
      if (received.length >= max) break;
      if (
        isSource(queue) &&
        message.receiveCount >= (queue === 'fifo' ? this.fifoMaxReceiveCount : this.maxReceiveCount)
      ) {
        this.redrive(queue, state, message, now);
        continue;
      }
      message.receiveCount++;
      message.visibleAt = now + visibilityMs;
      message.receiptHandle = `r-${++this.handleSeq}`;
      received.push({
        queue,
        messageId: message.messageId,
        receiptHandle: message.receiptHandle,
        body: message.body,
        attributes: { ...message.attributes },
        ...(message.groupId === undefined ? {} : { groupId: message.groupId }),
        receiveCount: message.receiveCount,
      });
    }
    return received;
  }

  /**
   * Messages a receive may deliver now, in delivery order. Standard: every visible message, oldest first.
   * FIFO: whole groups in send order, ordered by their oldest message; a group with any message in flight is
   * skipped, so no message is delivered while another of its group is being processed.
   */
  private deliverable(queue: QueueName, state: QueueState, now: number): StoredMessage[] {
    if (!isFifo(queue)) return state.messages.filter((m) => m.visibleAt <= now);
    const groups = new Map<string | undefined, StoredMessage[]>();
    for (const message of state.messages) {
      const group = groups.get(message.groupId);
      if (group === undefined) groups.set(message.groupId, [message]);
      else group.push(message);
    }
    // FIFO queues have no per-message delays, so a group with nothing in flight is entirely visible.
    return [...groups.values()].filter((group) => !group.some((m) => isInFlight(m, now))).flat();
  }

  private redrive(queue: SourceQueue, state: QueueState, message: StoredMessage, now: number): void {
    state.messages.splice(state.messages.indexOf(message), 1);
    const target = this.state(deadLetterQueueOf(queue));
    const moved: StoredMessage = { ...message, visibleAt: now };
    delete moved.receiptHandle;
    target.messages.push(moved);
    this.notify(target);
  }

  /** Earliest future instant at which a stored message becomes visible, or `Infinity`. */
  private nextVisibleAt(state: QueueState, now: number): number {
    let next = Number.POSITIVE_INFINITY;
    for (const message of state.messages) if (message.visibleAt > now) next = Math.min(next, message.visibleAt);
    return next;
  }

  /**
   * Resolves after `ms` on the clock or at the next change to the queue, whichever comes first. The clock has no
   * way to cancel a sleep, so an early wake leaves a harmless timer behind.
   */
  private async waitForChange(state: QueueState, ms: number): Promise<void> {
    let wake: () => void = () => undefined;
    const changed = new Promise<void>((resolve) => {
      wake = resolve;
    });
    state.waiters.add(wake);
    try {
      await Promise.race([this.clock.sleep(ms), changed]);
    } finally {
      state.waiters.delete(wake);
    }
  }

  private notify(state: QueueState): void {
    for (const wake of state.waiters) wake();
    state.waiters.clear();
  }
}
