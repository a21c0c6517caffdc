import { QueueUnavailableError } from '../../errors';
import { fifoGroupOf, READ_ORDER, type ReceivedMessage, type SourceQueue } from '../../ports/QueueReceiver';
import { deadLetter } from '../queueOutcomes';
import { Backoff } from './backoff';
import { BulkClass, LOOK_UP_MS } from './bulkClass';
import { MAX_RECEIVE, PREFETCH_MS, ReceiveSizing } from './receiveSizing';
import type { RunContext } from './runContext';
import type { GuardedQueues } from './types';

/**
 * How long refills pass an empty FIFO queue by, while other queues hold work: about a refill's span, so that a busy
 * main queue does not cost an empty FIFO receive per refill. When every queue is empty, the long poll still looks.
 */
export const FIFO_QUIET_MS = PREFETCH_MS;

/**
 * A message in the intake's buffer, received at `receivedAt`: as received, or `refused` by Lambda (its event is too
 * large), which sends it to its DLQ with `reason` without another invoke.
 */
export type Buffered =
  | { readonly kind: 'received'; readonly message: ReceivedMessage; readonly receivedAt: number }
  | {
      readonly kind: 'refused';
      readonly message: ReceivedMessage;
      readonly receivedAt: number;
      readonly reason: string;
    };

/**
 * Where the run's messages come from and go back to: receives requeue ▸ fifo ▸ main ▸ bulk into a buffer whose head
 * the run works on, dead-letters the head, backs the queues off after a failed receive or send, and hands the buffer
 * back at exit.
 *
 * **Bulk turns.** The bulk queue is read after the others, and the buffer is kept in the order its jobs go (see
 * `BulkTurns`, `PrioritySettings.bulkShare`): the others' in their order, with a bulk job wherever its share of the
 * dispatches falls due, received for it when none is buffered (see {@link Intake.giveBulkItsTurn}), and the others'
 * looked into again while bulk jobs go alone (see `BulkClass`).
 *
 * **Queue failures** never end the run. A failed receive, or a failed send to a dead-letter queue, backs the queues
 * off as the state store is (from `invokeBackoffMs`, doubling up to 10 s): the message stays at the head, and if its
 * visibility runs out meanwhile it is received again later. A message sent to its DLQ whose delete then fails is
 * received again after its visibility and dead-lettered again (a second copy in the DLQ, nothing lost). A failed
 * hand-back at exit is skipped: the message reappears after its visibility. Each is reported as `queue-unavailable`.
 */
export class Intake {
  private buffer: Buffered[] = [];
  /** No receive or dead-letter send before this instant, after a failed queue call. */
  private queueRetryAt = Number.NEGATIVE_INFINITY;
  /** Where in {@link READ_ORDER} the next refill starts: the queue whose receive failed, else the first. */
  private readFrom = 0;
  private readonly queueRetry: Backoff;
  private readonly sizing: ReceiveSizing;
  /** Whether the last refill found every queue empty, its long poll included. */
  private foundEmpty = false;
  /**
   * The queues that gave the last refill less than it asked for: the next reads each with one receive, not several.
   * The FIFO queue starts here, so that the run's first look into it takes at most one receive's messages.
   */
  private readonly sparse = new Set<SourceQueue>(['fifo']);
  /**
   * The most messages a FIFO receive takes: after a group's messages were handed back because fewer went in its batch
   * (see {@link Intake.handBackGroupsOf}), as many as went, so that a deep group's messages are not received and
   * handed back again and again; one more after a batch took all a receive brought of a group (with batches on: a
   * group's messages go together only in a batch).
   */
  private fifoReceiveMax = MAX_RECEIVE;
  /** Until when refills pass the FIFO queue by: its last read found it empty (see {@link FIFO_QUIET_MS}). */
  private fifoQuietUntil = Number.NEGATIVE_INFINITY;
  /** The queue the last refill that found anything read from: when all are empty, the long poll waits on it. */
  private lastFound: SourceQueue = 'main';
  /** Whose turn it is between the bulk class and the others, and when the bulk queue is read. */
  private readonly bulk: BulkClass;

  constructor(
    private readonly run: RunContext,
    private readonly queues: GuardedQueues,
    /** When the store is next called: a wait for the queues' back-off ends by then. */
    private readonly nextStoreCallAt: () => number,
    /** How many messages one receive may take at an instant (see `QuotaGate.room`). */
    room: (now: number) => number,
  ) {
    this.queueRetry = new Backoff(run.settings.invokeBackoffMs);
    this.sizing = new ReceiveSizing(run, room);
    this.bulk = new BulkClass(run.config.priorities.bulkShare);
  }

  /**
   * The head of the buffer, refilled from requeue ▸ fifo ▸ main ▸ bulk when empty, with a bulk job at its head when
   * its turn is due (see {@link Intake.giveBulkItsTurn}). A queue is read with up to
   * `MAX_PARALLEL_RECEIVES` receives at once, for {@link PREFETCH_MS} of the tightest tier's rate (see
   * {@link ReceiveSizing}): at high rates one receive of 10 a turn cannot keep up, and a batch takes what the buffer
   * holds. A queue that gave the last refill less than it asked for (the requeue queue, mostly) gets one receive:
   * several would mostly come back empty.
   * When all are empty it long-polls the main queue briefly (the FIFO queue if the last messages found came from it)
   * and returns `undefined`; after a failed receive it waits out the back-off instead.
   *
   * While the main queue gives all it is asked for, the buffer is topped up to a refill's size when it is a receive
   * or more short of it, the same way and behind what it holds: a batch then takes as many jobs as its window holds,
   * not what the last refill left. A top-up never waits: when it finds nothing or fails, the head is returned all the
   * same.
   *
   * One FIFO receive may bring several messages of a group, in order: message k+1 must not be called until k has
   * ended, so the buffer puts every group's first message before any group's second (and so on), and a group's later
   * messages go only in the batch of its first, each after the one before has ended (see `Dispatcher`). Those left
   * out of it are handed back (see {@link Intake.handBackGroupsOf}): SQS holds a group's messages back while one is
   * in flight, and keeps their order.
   */
  async next(): Promise<Buffered | undefined> {
    if (this.buffer.length > 0) {
      const topUp = this.topUpSize();
      if (topUp >= MAX_RECEIVE) await this.readRound(topUp);
      else if (this.run.clock.now() >= this.queueRetryAt && this.bulk.lookUpDue(this.buffer, this.run.clock.now()))
        await this.readRound(this.sizing.prefetchSize(), 'bulk');
      await this.giveBulkItsTurn();
      return this.buffer[0];
    }
    this.foundEmpty = false;
    const { clock } = this.run;
    if (clock.now() < this.queueRetryAt) {
      await this.run.sleepUntil(Math.min(this.queueRetryAt, this.nextStoreCallAt()));
      return undefined;
    }
    const found = await this.readRound(this.sizing.prefetchSize());
    if (found === 'found') await this.giveBulkItsTurn();
    if (found !== 'empty') return this.buffer[0];
    // A FIFO group whose message is in flight is held back until that message is deleted: the poll then waits on the
    // FIFO queue, which answers as soon as the group's next message can go.
    const waitMs = Math.max(0, Math.min(this.run.settings.idleWaitMs, this.run.options.deadline - clock.now()));
    const pollOn = this.lastFound === 'fifo' ? 'fifo' : 'main';
    const polled = await this.receive(pollOn, this.receiveSize(pollOn), waitMs);
    this.fill(polled ?? []);
    this.foundEmpty = polled?.length === 0;
    return undefined;
  }

  /**
   * One round of reads, requeue ▸ fifo ▸ main ▸ bulk (up to `before`, when given), that stops at the first queue with
   * messages and adds them to the buffer: `prefetch` from a queue that gave its last read all it asked for, one receive
   * from the others.
   * @returns `found`, `empty` when every queue read was empty, or `failed` when a receive failed (the queues are
   *   backed off, and the next round resumes at that queue).
   */
  private async readRound(prefetch: number, before?: SourceQueue): Promise<'found' | 'empty' | 'failed'> {
    const { clock } = this.run;
    // After a failed receive the round resumes at that queue: the ones before it were just found empty, and starting
    // over could keep hitting a failure that strikes every few calls.
    for (const [i, queue] of READ_ORDER.entries()) {
      if (queue === before) break;
      if (i < this.readFrom || (queue === 'fifo' && clock.now() < this.fifoQuietUntil)) continue;
      const size =
        this.sparse.has(queue) || (queue === 'fifo' && this.fifoReceiveMax < MAX_RECEIVE)
          ? this.receiveSize(queue)
          : prefetch;
      // Bulk jobs received while the others' queues are empty wait at bulk's share of the rate once they are not:
      // no more than that share sends while they are held.
      const wanted = queue === 'bulk' ? this.sizing.sendable(size, this.bulk.share) : size;
      const received = await this.receive(queue, wanted, 0);
      if (received === undefined) {
        this.readFrom = i;
        return 'failed';
      }
      this.readFrom = 0;
      if (queue === 'fifo')
        this.fifoQuietUntil = received.length === 0 ? clock.now() + FIFO_QUIET_MS : Number.NEGATIVE_INFINITY;
      if (queue === 'bulk') this.bulk.found(received.length, clock.now());
      if (received.length < wanted) this.sparse.add(queue);
      else this.sparse.delete(queue);
      if (received.length > 0) {
        this.lastFound = queue;
        this.fill(received);
        return 'found';
      }
    }
    return 'empty';
  }

  /**
   * Receives up to `wanted` messages of `queue` with several receives at once: what they took is kept even if one
   * failed (its failure backs the queues off); `undefined` when all failed or one failed and none took anything.
   */
  private async receive(queue: SourceQueue, wanted: number, waitMs: number): Promise<ReceivedMessage[] | undefined> {
    const { queues } = this;
    const visibilityMs = this.run.settings.visibilityTimeoutMs;
    const received: ReceivedMessage[] = [];
    const sizes = Array.from({ length: Math.ceil(wanted / MAX_RECEIVE) }, (_, i) =>
      Math.min(MAX_RECEIVE, wanted - i * MAX_RECEIVE),
    );
    const failures = await Promise.all(
      sizes.map((max) =>
        this.tryQueue(async () => received.push(...(await queues.receive(queue, { max, visibilityMs, waitMs })))),
      ),
    );
    return received.length > 0 || failures.every((failure) => failure === undefined) ? received : undefined;
  }

  /**
   * How many messages a top-up of a non-empty buffer would take: what a refill takes less what the buffer holds;
   * none unless the last messages came from the main queue and it gave all it was asked for (a FIFO queue's
   * messages wait on their groups), nor while the queues are backed off.
   */
  private topUpSize(): number {
    if (this.lastFound !== 'main' || this.sparse.has('main') || this.run.clock.now() < this.queueRetryAt) return 0;
    return this.sizing.prefetchSize() - this.buffer.length;
  }

  /** Whether every source queue is empty: nothing visible, in flight or delayed; false when a queue cannot say. */
  async allDone(): Promise<boolean> {
    for (const queue of READ_ORDER) {
      let held = 0;
      const failure = await this.tryQueue(async () => {
        held = await this.queues.messageCount(queue);
      });
      if (failure !== undefined || held > 0) return false;
    }
    return true;
  }

  /** Whether the last {@link Intake.next} found every queue empty, its long poll included (the buffer is empty then). */
  get empty(): boolean {
    return this.foundEmpty;
  }

  /**
   * The `i`-th buffered message after the head (the head is 0), without receiving: a batch's candidates. None where
   * only bulk jobs going alone are left, past {@link LOOK_UP_MS} of the rate (see `BulkClass.joinsBatch`).
   */
  peek(i: number): Buffered | undefined {
    const buffered = this.buffer[i];
    return i === 0 || this.bulk.joinsBatch(this.buffer, i, this.sizing.sentWithin(LOOK_UP_MS)) ? buffered : undefined;
  }

  /** How many buffered messages come after the head in its FIFO group (0 for a message of another queue). */
  followersOfHead(): number {
    const group = this.buffer[0] === undefined ? undefined : fifoGroupOf(this.buffer[0].message);
    return group === undefined ? 0 : this.buffer.filter(({ message }) => fifoGroupOf(message) === group).length - 1;
  }

  /** Takes the head out of the buffer: it was dispatched. */
  shift(): void {
    const head = this.buffer.shift();
    if (head === undefined) return;
    this.bulk.dispatched(head, this.buffer, this.run.clock.now());
    this.buffer = this.bulk.arrange(this.buffer);
  }

  /**
   * Receives the bulk jobs bulk's turns among the buffer's jobs need (see `BulkClass.missing`), to go where their
   * turns fall; nothing while the queues are backed off.
   */
  private async giveBulkItsTurn(): Promise<void> {
    const now = this.run.clock.now();
    const missing = this.bulk.missing(this.buffer, now);
    if (missing === 0 || now < this.queueRetryAt) return;
    const received = await this.receive('bulk', missing, 0);
    if (received === undefined) return;
    this.bulk.found(received.length, this.run.clock.now());
    this.fill(received);
  }

  /** Takes the head out of the buffer, to reappear after its visibility, and hands back the rest of its FIFO group. */
  async leaveHead(): Promise<void> {
    const head = this.buffer.shift();
    if (head !== undefined) await this.handBackGroupsOf([head.message]);
  }

  /**
   * Takes the head out of the buffer and hides it for `visibilityMs` more, so that no run receives it again before
   * it could be sent, and hands back the rest of its FIFO group. If the change fails, it reappears once its
   * visibility runs out, as a head left does.
   */
  async hideHead(visibilityMs: number): Promise<void> {
    const head = this.buffer.shift();
    if (head === undefined) return;
    await this.tryQueue(() =>
      this.queues.changeVisibility(head.message.queue, head.message.receiptHandle, visibilityMs),
    );
    await this.handBackGroupsOf([head.message]);
  }

  /**
   * Hands back the buffered messages of the FIFO groups of `gone` (messages just dispatched, or left): each must wait
   * until the one before it has ended, which only its worker knows. SQS holds them back until then, and keeps their
   * order; each counts one more receive. FIFO receives then take no more than the messages of such a group that went
   * together (see {@link Intake.fifoReceiveMax}). One whose hand-back fails reappears once its visibility runs out.
   */
  async handBackGroupsOf(gone: readonly ReceivedMessage[]): Promise<void> {
    const went = new Map<string, number>();
    for (const message of gone) {
      const group = fifoGroupOf(message);
      if (group !== undefined) went.set(group, (went.get(group) ?? 0) + 1);
    }
    if (went.size === 0) return;
    const handedBack = this.buffer.filter(({ message }) => went.has(fifoGroupOf(message) ?? ''));
    for (const [group, n] of went) {
      if (handedBack.some(({ message }) => fifoGroupOf(message) === group))
        this.fifoReceiveMax = Math.min(this.fifoReceiveMax, n);
      else if (n >= this.fifoReceiveMax && this.run.config.pacing.batchWindowMs > 0)
        this.fifoReceiveMax = Math.min(MAX_RECEIVE, n + 1);
    }
    if (handedBack.length === 0) return;
    this.buffer = this.buffer.filter((buffered) => !handedBack.includes(buffered));
    for (const { message } of handedBack)
      await this.tryQueue(() => this.queues.changeVisibility(message.queue, message.receiptHandle, 0));
  }

  /** Marks the head as refused by Lambda for `reason`: it goes to its DLQ without another invoke. */
  refuseHead(reason: string): void {
    const head = this.buffer[0];
    if (head !== undefined)
      this.buffer[0] = { kind: 'refused', message: head.message, receivedAt: head.receivedAt, reason };
  }

  /**
   * Sends the head message to its dead-letter queue with `reason`. A failed send leaves it at the head and backs the
   * queues off; a failed delete after the send leaves it to be received and dead-lettered again.
   */
  async deadLetterHead(reason: string, attempt: number): Promise<void> {
    const head = this.buffer[0];
    if (head === undefined) return;
    const { clock } = this.run;
    if (clock.now() < this.queueRetryAt)
      return this.run.sleepUntil(Math.min(this.queueRetryAt, this.nextStoreCallAt()));
    const { message } = head;
    const failure = await this.tryQueue(() =>
      deadLetter(this.queues, { ...message, queue: message.queue as SourceQueue }, reason, attempt),
    );
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
    const now = this.run.clock.now();
    for (const { message, receivedAt } of this.buffer) {
      if (receivedAt + this.run.settings.visibilityTimeoutMs > now)
        await this.tryQueue(() => this.queues.changeVisibility(message.queue, message.receiptHandle, 0));
    }
    this.buffer = [];
  }

  /** Adds `messages`, received now, behind the buffer, each FIFO group's first of them first (see {@link Intake.next}). */
  private fill(messages: readonly ReceivedMessage[]): void {
    const receivedAt = this.run.clock.now();
    const rank = new Map<string, number>();
    const ranked = messages.map((message, i) => {
      const group = fifoGroupOf(message);
      const k = group === undefined ? 0 : (rank.get(group) ?? 0);
      if (group !== undefined) rank.set(group, k + 1);
      return { message, k, i };
    });
    ranked.sort((a, b) => a.k - b.k || a.i - b.i);
    this.buffer.push(...ranked.map(({ message }): Buffered => ({ kind: 'received', message, receivedAt })));
    this.buffer = this.bulk.arrange(this.buffer);
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
      const now = this.run.clock.now();
      const retried = error.operation === 'receive' || error.operation === 'send';
      if (retried) this.queueRetryAt = now + this.queueRetry.next();
      this.run.report({
        type: 'queue-unavailable',
        at: now,
        operation: error.operation,
        queue: error.queue,
        error: error.message,
        retryAt: retried ? this.queueRetryAt : now,
      });
      return error;
    }
  }

  /**
   * How many messages one receive of `queue` takes: a {@link ReceiveSizing.batchSize}, and for FIFO no more than
   * {@link Intake.fifoReceiveMax}.
   */
  private receiveSize(queue: SourceQueue): number {
    return queue === 'fifo' ? Math.min(this.fifoReceiveMax, this.sizing.batchSize()) : this.sizing.batchSize();
  }
}
