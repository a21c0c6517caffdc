import { QueueUnavailableError } from '../../errors';
import { READ_ORDER, type ReceivedMessage, type SourceQueue } from '../../ports/QueueReceiver';
import { Backoff } from '../guardedPorts';
import { deadLetter } from '../queueOutcomes';
import type { RunContext } from './runContext';

/** The most messages SQS returns from one receive. */
const MAX_RECEIVE = 10;
/** The most receives a refill of a standard queue makes at once. */
export const MAX_PARALLEL_RECEIVES = 20;
/**
 * How much of the tightest tier's rate a refill of a standard queue takes: several batches and the lead, so that
 * batches come out whole and a refill's receives (and its look into the queues read before) serve a second of work.
 */
export const PREFETCH_MS = 1_000;

/**
 * A message in the intake's buffer, received at `receivedAt`: as received, or `refused` by Lambda (its event is too
 * large), which sends it to its DLQ with `reason` without another invoke.
 */
export type Buffered =
  | { readonly kind: 'received'; readonly message: ReceivedMessage; readonly receivedAt: number }
  | { readonly kind: 'refused'; readonly message: ReceivedMessage; readonly receivedAt: number; readonly reason: string };

/**
 * Where the run's messages come from and go back to: receives requeue ▸ fifo ▸ main into a buffer whose head the run
 * works on, dead-letters the head, backs the queues off after a failed receive or send, and hands the buffer back at exit.
 */
export class Intake {
  private buffer: Buffered[] = [];
  /** No receive or dead-letter send before this instant, after a failed queue call. */
  private queueRetryAt = Number.NEGATIVE_INFINITY;
  /** Where in {@link READ_ORDER} the next refill starts: the queue whose receive failed, else the first. */
  private readFrom = 0;
  private readonly queueRetry: Backoff;
  /** Whether the last refill found every queue empty, its long poll included. */
  private foundEmpty = false;
  /**
   * The queues that gave the last refill less than it asked for: the next reads each with one receive, not several.
   * The FIFO queue starts here, so that the run's first look into it takes at most one receive's messages.
   */
  private readonly sparse = new Set<SourceQueue>(['fifo']);
  /** Whether a FIFO receive of this run brought two messages of one group: FIFO is then read one message at a time. */
  private fifoGroupsRepeat = false;
  /** The queue the last refill that found anything read from: when all are empty, the long poll waits on it. */
  private lastFound: SourceQueue = 'main';

  constructor(
    private readonly run: RunContext,
    /** When the store is next called: a wait for the queues' back-off ends by then. */
    private readonly nextStoreCallAt: () => number,
    /** How many messages one receive may take at an instant (see `QuotaGate.room`). */
    private readonly room: (now: number) => number,
  ) {
    this.queueRetry = new Backoff(run.settings.invokeBackoffMs);
  }

  /**
   * The head of the buffer, refilled from requeue ▸ fifo ▸ main when empty. A queue is read with up to
   * {@link MAX_PARALLEL_RECEIVES} receives at once, for {@link PREFETCH_MS} of the tightest tier's rate: at high rates
   * one receive of 10 a turn cannot keep up, and a batch takes what the buffer holds. A queue that gave the last
   * refill less than it asked for (the requeue queue, mostly) gets one receive: several would mostly come back empty.
   * When all are empty it long-polls the main queue briefly (the FIFO queue if the last messages found came from it)
   * and returns `undefined`; after a failed receive it waits out the back-off instead.
   *
   * The buffer holds at most one message of a FIFO group: message k+1 must not be called until k has ended, and k's
   * worker does not say when. SQS holds a group's later messages back while one is in flight, but one receive may
   * bring several of a group: the first stays, the others are handed back at once (SQS keeps the group's order, and
   * counts one more receive of each), and FIFO is read one message at a time for the rest of the run, so that a deep
   * group's messages are not received and handed back again and again.
   */
  async next(): Promise<Buffered | undefined> {
    if (this.buffer.length > 0) return this.buffer[0];
    this.foundEmpty = false;
    const { queues, clock } = this.run.deps;
    if (clock.now() < this.queueRetryAt) {
      await this.run.sleepUntil(Math.min(this.queueRetryAt, this.nextStoreCallAt()));
      return undefined;
    }
    const visibilityMs = this.run.settings.visibilityTimeoutMs;
    // Several receives at once: what they took is kept even if one failed (its failure backs the queues off).
    const receive = async (queue: SourceQueue, wanted: number, waitMs: number): Promise<ReceivedMessage[] | undefined> => {
      const received: ReceivedMessage[] = [];
      const sizes = Array.from({ length: Math.ceil(wanted / MAX_RECEIVE) }, (_, i) => Math.min(MAX_RECEIVE, wanted - i * MAX_RECEIVE));
      const failures = await Promise.all(sizes.map((max) => this.tryQueue(async () => received.push(...(await queues.receive(queue, { max, visibilityMs, waitMs }))))));
      return received.length > 0 || failures.every((failure) => failure === undefined) ? received : undefined;
    };
    // After a failed receive the round resumes at that queue: the ones before it were just found empty, and starting
    // over could keep hitting a failure that strikes every few calls.
    for (const [i, queue] of READ_ORDER.entries()) {
      if (i < this.readFrom) continue;
      const wanted = this.fifoOneAtATime(queue) ? 1 : this.sparse.has(queue) ? this.batchSize() : this.prefetchSize();
      const received = await receive(queue, wanted, 0);
      if (received === undefined) {
        this.readFrom = i;
        return undefined;
      }
      this.readFrom = 0;
      if (received.length < wanted) this.sparse.add(queue);
      else this.sparse.delete(queue);
      if (received.length > 0) {
        this.lastFound = queue;
        this.fill(await this.firstOfEachGroup(received));
        return this.buffer[0];
      }
    }
    // A FIFO group whose message is in flight is held back until that message is deleted: the poll then waits on the
    // FIFO queue, which answers as soon as the group's next message can go.
    const waitMs = Math.max(0, Math.min(this.run.settings.idleWaitMs, this.run.options.deadline - clock.now()));
    const pollOn = this.lastFound === 'fifo' ? 'fifo' : 'main';
    const polled = await receive(pollOn, this.fifoOneAtATime(pollOn) ? 1 : this.batchSize(), waitMs);
    this.fill(await this.firstOfEachGroup(polled ?? []));
    this.foundEmpty = polled?.length === 0;
    return undefined;
  }

  /** Whether every source queue is empty: nothing visible, in flight or delayed; false when a queue cannot say. */
  async allDone(): Promise<boolean> {
    for (const queue of READ_ORDER) {
      let held = 0;
      const failure = await this.tryQueue(async () => {
        held = await this.run.deps.queues.messageCount(queue);
      });
      if (failure !== undefined || held > 0) return false;
    }
    return true;
  }

  /** Whether the last {@link Intake.next} found every queue empty, its long poll included (the buffer is empty then). */
  get empty(): boolean {
    return this.foundEmpty;
  }

  /** The `i`-th buffered message after the head (the head is 0), without receiving: a batch's candidates. */
  peek(i: number): Buffered | undefined {
    return this.buffer[i];
  }

  /** Takes the head out of the buffer: it was dispatched, or is left to reappear after its visibility. */
  shift(): void {
    this.buffer.shift();
  }

  /**
   * Takes the head out of the buffer and hides it for `visibilityMs` more, so that no run receives it again before
   * it could be sent. If the change fails, it reappears once its visibility runs out, as a shifted head does.
   */
  async hideHead(visibilityMs: number): Promise<void> {
    const head = this.buffer.shift();
    if (head !== undefined) await this.tryQueue(() => this.run.deps.queues.changeVisibility(head.message.queue, head.message.receiptHandle, visibilityMs));
  }

  /** Marks the head as refused by Lambda for `reason`: it goes to its DLQ without another invoke. */
  refuseHead(reason: string): void {
    const head = this.buffer[0];
    if (head !== undefined) this.buffer[0] = { kind: 'refused', message: head.message, receivedAt: head.receivedAt, reason };
  }

  /**
   * Sends the head message to its dead-letter queue with `reason`. A failed send leaves it at the head and backs the
   * queues off; a failed delete after the send leaves it to be received and dead-lettered again.
   */
  async deadLetterHead(reason: string, attempt: number): Promise<void> {
    const head = this.buffer[0];
    if (head === undefined) return;
    const { clock } = this.run.deps;
    if (clock.now() < this.queueRetryAt) return this.run.sleepUntil(Math.min(this.queueRetryAt, this.nextStoreCallAt()));
    const { message } = head;
    const failure = await this.tryQueue(() => deadLetter(this.run.deps.queues, { ...message, queue: message.queue as SourceQueue }, reason, attempt));
    if (failure?.operation === 'send') return; // nothing reached the DLQ: it stays at the head
    this.buffer.shift();
    this.run.tally.deadLettered++;
    this.run.report({ type: 'dead-lettered', at: clock.now(), messageId: message.messageId, reason });
  }

  /**
   * Hands buffered, undispatched messages back to their queues so the next run need not wait out their visibility.
   * Those whose visibility has already run out are visible again; SQS refuses to change them (MessageNotInflight).
   * One whose hand-back fails reappears once its visibility runs out. A hand-back takes no receive, nor gives back
   * the one its message has taken.
   */
  async release(): Promise<void> {
    const now = this.run.deps.clock.now();
    for (const { message, receivedAt } of this.buffer) {
      if (receivedAt + this.run.settings.visibilityTimeoutMs > now) await this.tryQueue(() => this.run.deps.queues.changeVisibility(message.queue, message.receiptHandle, 0));
    }
    this.buffer = [];
  }

  /** Whether `queue` is the FIFO queue and this run reads it one message at a time (see {@link Intake.next}). */
  private fifoOneAtATime(queue: SourceQueue): boolean {
    return queue === 'fifo' && this.fifoGroupsRepeat;
  }

  /**
   * Of `received`, the first message of each FIFO group and every other message; the later messages of a group are
   * handed back (see {@link Intake.next}). One whose hand-back fails reappears once its visibility runs out.
   */
  private async firstOfEachGroup(received: readonly ReceivedMessage[]): Promise<ReceivedMessage[]> {
    const groups = new Set<string>();
    const kept: ReceivedMessage[] = [];
    for (const message of received) {
      const group = message.queue === 'fifo' ? message.groupId : undefined;
      if (group === undefined || !groups.has(group)) {
        if (group !== undefined) groups.add(group);
        kept.push(message);
      } else {
        this.fifoGroupsRepeat = true;
        await this.tryQueue(() => this.run.deps.queues.changeVisibility(message.queue, message.receiptHandle, 0));
      }
    }
    return kept;
  }

  /** Replaces the (empty) buffer with `messages`, received now. */
  private fill(messages: readonly ReceivedMessage[]): void {
    const receivedAt = this.run.deps.clock.now();
    this.buffer = messages.map((message) => ({ kind: 'received', message, receivedAt }));
  }

  /**
   * Runs a queue call; a {@link QueueUnavailableError} is reported and returned, and a failed receive or send backs
   * both off (until `queueRetryAt`). A failed delete or visibility change is not retried: that message reappears.
   */
  private async tryQueue(call: () => Promise<unknown>): Promise<QueueUnavailableError | undefined> {
    try {
      await call();
      this.queueRetry.reset();
      return undefined;
    } catch (error) {
      if (!(error instanceof QueueUnavailableError)) throw error;
      const now = this.run.deps.clock.now();
      const retried = error.operation === 'receive' || error.operation === 'send';
      if (retried) this.queueRetryAt = now + this.queueRetry.next();
      this.run.report({ type: 'queue-unavailable', at: now, operation: error.operation, queue: error.queue, error: error.message, retryAt: retried ? this.queueRetryAt : now });
      return error;
    }
  }

  /**
   * As many messages as one receive takes: as the tightest sliding tier lets through while a message's visibility
   * still covers a worker run and the run goes on, and as the quota has {@link Intake.room} for; at most 10.
   */
  private batchSize(): number {
    return this.sendable(MAX_RECEIVE);
  }

  /**
   * How many messages a refill of a standard queue takes: {@link PREFETCH_MS} of the tightest tier's rate, at least
   * one receive's {@link Intake.batchSize}, and never more than could be sent while they are held (see there).
   */
  private prefetchSize(): number {
    const rate = this.tightestRate();
    const prefetch = rate === undefined ? MAX_RECEIVE : Math.ceil(rate * PREFETCH_MS);
    return Math.max(this.batchSize(), Math.min(prefetch, this.sendable(MAX_RECEIVE * MAX_PARALLEL_RECEIVES)));
  }

  /** Of `most` messages received now, how many could be sent while held (at least one). */
  private sendable(most: number): number {
    const { settings, options } = this.run;
    const now = this.run.deps.clock.now();
    const window = Math.min(settings.visibilityTimeoutMs - settings.workerTimeoutMs, options.deadline - now);
    const rate = this.tightestRate();
    const perWindow = rate === undefined ? most : Math.floor(rate * window);
    return Math.max(1, Math.min(most, perWindow, this.room(now)));
  }

  /** The tightest sliding tier's rate in units per ms, or `undefined` when no tier sets a pace. */
  private tightestRate(): number | undefined {
    const rates = this.run.deps.config.quotas.flatMap((t) => t.steadyRate() ?? []).map((rate) => rate.units / rate.perMs);
    return rates.length === 0 ? undefined : Math.min(...rates);
  }
}
