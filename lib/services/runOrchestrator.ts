import { isDeepStrictEqual } from 'node:util';
import type { ServiceConfig } from '../config';
import { healthCheckDueAt, isDispatchAllowed, type Circuit } from '../domain/breaker/circuit';
import { Pacer } from '../domain/pacing/pacer';
import { QuotaLedger, type Allowance, type Settlement } from '../domain/quota/ledger';
import { isSliding, slidingWindowMs, tierRatePerMs, unitsFor } from '../domain/quota/tiers';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError, LeaseLostError, QueueUnavailableError, StateUnavailableError } from '../errors';
import type { Clock } from '../ports/Clock';
import type { Invoker } from '../ports/Invoker';
import { READ_ORDER, type QueueReceiver, type ReceivedMessage, type SourceQueue } from '../ports/QueueReceiver';
import type { CircuitStore } from '../ports/CircuitStore';
import type { Lease, LeaseStore } from '../ports/LeaseStore';
import { MAX_PENDING_SETTLEMENTS, type LedgerStore } from '../ports/LedgerStore';
import { applyCircuitEvent, loadCircuit, type CircuitUpdate } from './circuitUpdates';
import { Backoff, GuardedQueues, guardStores, MAX_BACKOFF_MS } from './guardedPorts';
import { jobEventOf, parseJob } from './parseJob';
import { deadLetter } from './queueOutcomes';

/** The stores the orchestrator uses. */
export interface OrchestratorStores {
  readonly lease: LeaseStore;
  readonly ledger: LedgerStore;
  readonly circuit: CircuitStore;
}

/** What the orchestrator needs. */
export interface OrchestratorDeps {
  readonly clock: Clock;
  readonly stores: OrchestratorStores;
  readonly queues: QueueReceiver;
  readonly invoker: Invoker;
  readonly config: ServiceConfig;
  /** Randomness in [0, 1) for pause jitter. */
  readonly random: () => number;
  /** Unique name of this orchestrator instance (the lease owner). */
  readonly owner: string;
  /** A fresh unique id (dispatch and health-check ids). */
  readonly newId: () => string;
  /** Receives typed events for logs, metrics and reports; the loop never depends on it. */
  readonly onEvent?: (event: OrchestratorEvent) => void;
}

/** What the orchestrator reports as it goes. */
export type OrchestratorEvent =
  | { readonly type: 'dispatched'; readonly at: number; readonly messageId: string; readonly queue: string; readonly cost: number }
  | { readonly type: 'dead-lettered'; readonly at: number; readonly messageId: string; readonly reason: string }
  | { readonly type: 'health-check-sent'; readonly at: number; readonly checkId: string }
  | { readonly type: 'invoke-failed'; readonly at: number; readonly error: string }
  /** The ledger was saved and the lease renewed; `settlements` were folded into the ledger since the last `flushed`. */
  | { readonly type: 'flushed'; readonly at: number; readonly settlements: number }
  /** A state-store call failed (see the state-outage policy of {@link runOrchestrator}); the next try is at `retryAt`. */
  | { readonly type: 'state-unavailable'; readonly at: number; readonly operation: string; readonly error: string; readonly retryAt: number }
  /** The ledger was saved and the circuit read again after `unavailableMs` of failed state calls. */
  | { readonly type: 'state-recovered'; readonly at: number; readonly unavailableMs: number }
  /** A queue call failed; a failed receive or dead-letter send is tried again at `retryAt`. */
  | { readonly type: 'queue-unavailable'; readonly at: number; readonly operation: string; readonly queue: string; readonly error: string; readonly retryAt: number };

/** Bounds of one run. */
export interface RunOptions {
  /** Epoch ms at which the run stops dispatching, flushes and exits (shortly before the Lambda timeout). */
  readonly deadline: number;
  /** Checked every step; true stops the run early (e.g. a simulation that is done). */
  readonly shouldStop?: () => boolean;
}

/** How a run went. */
export interface RunSummary {
  /**
   * `held-elsewhere`: another orchestrator holds the lease, nothing was done; `lost`: the lease was taken over
   * mid-run; `unavailable`: the state store failed until the deadline before the run could start (take the lease,
   * read the ledger and the circuit), nothing was dispatched.
   */
  readonly lease: 'acquired' | 'held-elsewhere' | 'lost' | 'unavailable';
  readonly dispatched: number;
  readonly deadLettered: number;
  readonly healthChecks: number;
  readonly invokeFailures: number;
}

/**
 * Most ledger saves per flush, each removing at most {@link MAX_PENDING_SETTLEMENTS} settlements: a flush folds up to
 * 1 000 settlements, and a backlog beyond waits for the next flush rather than keep the lease from being renewed.
 */
const MAX_SAVES_PER_FLUSH = 10;

const NOTHING_DONE = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 } as const;

/**
 * One orchestrator run (steps 1–4 of DESIGN's architecture): take the lease, rehydrate ledger and circuit, then
 * until the deadline read the circuit before every dispatch — sending only health checks while it is not closed —
 * receive requeue ▸ fifo ▸ main, wait for each pacing slot and invoke a worker; flush the ledger every
 * `flushIntervalMs` and at exit, and release the lease. It never dispatches without the lease: a flush that finds
 * the lease lost ends the run at once.
 *
 * Only a lost lease ({@link LeaseLostError}), a corrupt stored item ({@link StateFormatError}: retrying cannot mend
 * it, and a ledger that cannot be read cannot bound a dispatch, so it surfaces as the run's error for the alarms)
 * and genuine bugs end a run early. Everything the AWS services may throw after the SDK's own retries is absorbed:
 *
 * **State-outage policy** (`orchestrator.stateOutage`). A failed state-store call (DynamoDB unavailable or
 * throttled, a timeout) does not end the run: it keeps its in-memory ledger and the last circuit it read (an open
 * circuit or a 429 pause still holds), reports `state-unavailable`, and tries again with back-off (from
 * `invokeBackoffMs`, doubling up to 10 s, never past the deadline): it retries a failed flush (only the renewal if
 * the ledger was saved), then reads the circuit; once both succeed it reports `state-recovered`. Meanwhile, under
 * `pace-in-memory` (the default), a message goes only if, for every tier, either
 * - its units fit the allowance the last *saved* ledger holds (see `flush`), which a successor counts; or
 * - the tier slides and `now + arrivalMarginMs + window <= lease.expiresAt`: a successor may only dispatch from the
 *   expiry of the last renewed lease, so no window of its dispatches can hold this one.
 *
 * Day, month and long sliding tiers therefore never go past quota already reserved, short tiers keep being paced on
 * the in-memory ledger, and nothing goes at or after `lease.expiresAt` (a renewal that succeeds later resumes the
 * run; one that finds the lease taken over ends it). Under `pause`, nothing is dispatched from the first failed
 * state call until recovery. Health checks wait for recovery too (they need a circuit write). A run
 * whose final save fails keeps the lease until it expires, so the next run cannot miss what this one dispatched.
 * At start, a failed lease, ledger or circuit read is retried the same way; at the deadline the run returns
 * `unavailable`.
 *
 * **Queues.** A failed receive, or a failed send to a dead-letter queue, backs off the same way (the message stays at
 * the head; if its visibility runs out meanwhile it is received again later). A message sent to its DLQ whose
 * delete then fails is received again after its visibility and dead-lettered again (a second copy in the DLQ, nothing
 * lost). A failed hand-back at exit is
 * skipped: the message reappears after its visibility. Each is reported as `queue-unavailable`.
 *
 * **Invokes.** A throttled or refused invoke refunds its quota and backs off; one that failed but may have started
 * (a 5xx, a timeout: `InvokeFailedError.mayHaveStarted`) keeps its quota and backs off; one Lambda refuses for the
 * event itself ({@link InvokeRejectedError}, e.g. over the async payload limit) dead-letters the message with that
 * reason.
 *
 * @throws StateFormatError when a stored ledger or circuit cannot be read; any error that is none of the above.
 */
export async function runOrchestrator(deps: OrchestratorDeps, options: RunOptions): Promise<RunSummary> {
  const { clock, config } = deps;
  const stores = guardStores(deps.stores);
  const retry = new Backoff(config.orchestrator.invokeBackoffMs);
  /** Calls `call` until it succeeds, backing off after each store failure; `undefined` once the deadline comes first. */
  const untilDeadline = async <T>(call: () => Promise<T>): Promise<{ readonly value: T } | undefined> => {
    for (;;) {
      try {
        const value = await call();
        retry.reset();
        return { value };
      } catch (error) {
        if (!(error instanceof StateUnavailableError)) throw error;
        const now = clock.now();
        const retryAt = now + retry.next();
        deps.onEvent?.({ type: 'state-unavailable', at: now, operation: error.operation, error: error.message, retryAt });
        if (retryAt >= options.deadline || (options.shouldStop?.() ?? false)) return undefined;
        await clock.sleep(retryAt - now);
      }
    }
  };

  const acquired = await untilDeadline(() => stores.lease.acquireLease(config.lane, deps.owner, clock.now(), config.orchestrator.leaseTtlMs));
  if (acquired === undefined) return { lease: 'unavailable', ...NOTHING_DONE };
  const lease = acquired.value;
  if (lease === null) return { lease: 'held-elsewhere', ...NOTHING_DONE };
  const saved = await untilDeadline(() => stores.ledger.loadLedger(config.lane));
  const circuit = saved === undefined ? undefined : await untilDeadline(() => loadCircuit(stores.circuit, config.lane));
  if (saved === undefined || circuit === undefined) {
    // Nothing was dispatched: the next run need not wait for the lease to expire, if the store lets it go.
    await stores.lease.releaseLease(lease).catch((error: unknown) => {
      if (!(error instanceof StateUnavailableError)) throw error;
    });
    return { lease: 'unavailable', ...NOTHING_DONE };
  }
  const ledger =
    saved.value === undefined ? new QuotaLedger(config.quotas, { timeZone: config.timeZone }) : QuotaLedger.fromJSON(config.quotas, saved.value, { timeZone: config.timeZone });
  const run = new OrchestratorRun({ ...deps, stores, queues: new GuardedQueues(deps.queues) }, options, lease, new Pacer(ledger, config.pacing), circuit.value);
  return run.execute();
}

interface Buffered {
  readonly message: ReceivedMessage;
  readonly receivedAt: number;
}

/** The state store has been failing since `since`; the next try is at `retryAt`. */
interface StateOutage {
  readonly since: number;
  readonly retryAt: number;
}

class OrchestratorRun {
  private readonly summary = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 };
  private buffer: Buffered[] = [];
  private lastFlushAt: number;
  private lastSeenPause = 0;
  private dispatchAllowed = false;
  private invokeBackoffMs: number;
  /** What the last saved ledger holds for this run (see {@link Allowance}), and what has been used of it since. */
  private allowance: Allowance = { until: Number.NEGATIVE_INFINITY, units: [] };
  private usedSinceFlush: number[] = [];
  /** Set while state-store calls fail; see the state-outage policy of {@link runOrchestrator}. */
  private outage: StateOutage | undefined;
  private readonly stateRetry: Backoff;
  /** The last flush failed: it is tried again before the outage can end. */
  private flushFailed = false;
  /** The last flush saved the ledger but could not renew the lease: the next one (unless final) only renews. */
  private savedUnrenewed = false;
  /**
   * The settlements the last read returned, all folded into the in-memory ledger, until a save removes them. A save
   * that fails leaves them pending as the oldest (only this run removes any), and the next read does not fold them again.
   */
  private foldedPending: readonly Settlement[] = [];
  /** Settlements folded since the last `flushed` event (a failed flush may have folded some). */
  private foldedUnreported = 0;
  /** No receive or dead-letter send before this instant, after a failed queue call. */
  private queueRetryAt = Number.NEGATIVE_INFINITY;
  /** Where in {@link READ_ORDER} the next refill starts: the queue whose receive failed, else the first. */
  private readFrom = 0;
  private readonly queueRetry: Backoff;
  /** The head message Lambda refused to take (its event is too large): it goes to its DLQ without another invoke. */
  private rejected: { readonly receiptHandle: string; readonly reason: string } | undefined;

  constructor(
    private readonly deps: OrchestratorDeps,
    private readonly options: RunOptions,
    private lease: Lease,
    private readonly pacer: Pacer,
    /** The circuit as last read; kept while reads fail. */
    private circuit: Circuit,
  ) {
    this.lastFlushAt = deps.clock.now();
    this.invokeBackoffMs = deps.config.orchestrator.invokeBackoffMs;
    this.stateRetry = new Backoff(deps.config.orchestrator.invokeBackoffMs);
    this.queueRetry = new Backoff(deps.config.orchestrator.invokeBackoffMs);
  }

  private get settings() {
    return this.deps.config.orchestrator;
  }

  async execute(): Promise<RunSummary> {
    try {
      this.startRamps();
      await this.tryFlush();
      while (!this.stopping()) await this.step();
      await this.releaseBuffer();
      // A ledger that could not be saved keeps the lease until it expires: a successor cannot miss what it holds.
      if (await this.tryFlush({ final: true })) await this.tryState(() => this.deps.stores.lease.releaseLease(this.lease));
      return { lease: 'acquired', ...this.summary };
    } catch (error) {
      if (error instanceof LeaseLostError) return { lease: 'lost', ...this.summary };
      throw error;
    }
  }

  private stopping(): boolean {
    return this.deps.clock.now() >= this.options.deadline || (this.options.shouldStop?.() ?? false);
  }

  /**
   * Slow start only after a recent close of the circuit (DESIGN semantics 4), carried over from the run that saw it
   * close. A start from idle goes at the full rate at once: the quota allows it, and full use is the point.
   */
  private startRamps(): void {
    const now = this.deps.clock.now();
    this.dispatchAllowed = isDispatchAllowed(this.circuit);
    const { state } = this.circuit;
    if (state.status === 'closed' && state.closedAt !== null && now - state.closedAt < this.deps.config.pacing.rampSeconds * 1000) {
      this.pacer.startRamp(state.closedAt);
    }
  }

  /**
   * Runs a state-store call; on {@link StateUnavailableError} starts or extends the outage (see the policy on
   * {@link runOrchestrator}) and returns `undefined`. Anything else, a lost lease included, is thrown.
   */
  private async tryState<T>(call: () => Promise<T>): Promise<{ readonly value: T } | undefined> {
    try {
      return { value: await call() };
    } catch (error) {
      if (!(error instanceof StateUnavailableError)) throw error;
      const now = this.deps.clock.now();
      const retryAt = now + this.stateRetry.next();
      this.outage = { since: this.outage?.since ?? now, retryAt };
      this.deps.onEvent?.({ type: 'state-unavailable', at: now, operation: error.operation, error: error.message, retryAt });
      return undefined;
    }
  }

  /** {@link OrchestratorRun.flush} under {@link OrchestratorRun.tryState}; false when the store failed. */
  private async tryFlush(options?: { final?: boolean; need?: readonly number[] }): Promise<boolean> {
    this.flushFailed = (await this.tryState(() => this.flush(options))) === undefined;
    return !this.flushFailed;
  }

  /**
   * Brings the run's view of the store up to date: flushes when due (on schedule, and in any case before the lease
   * could expire), then reads the circuit. During an outage it waits for the back-off, then retries a failed flush
   * (or a due one) and reads the circuit, and the outage ends once both succeed.
   */
  private async syncState(now: number): Promise<void> {
    if (this.outage !== undefined && now < this.outage.retryAt) return;
    const flushDue = this.flushFailed || now - this.lastFlushAt >= this.settings.flushIntervalMs || now >= this.lease.expiresAt - this.settings.flushIntervalMs;
    if (flushDue && !(await this.tryFlush())) return;
    if ((await this.tryState(() => this.readCircuit())) === undefined || this.outage === undefined) return;
    const at = this.deps.clock.now();
    this.deps.onEvent?.({ type: 'state-recovered', at, unavailableMs: at - this.outage.since });
    this.outage = undefined;
    this.stateRetry.reset();
  }

  private async readCircuit(): Promise<void> {
    this.circuit = await loadCircuit(this.deps.stores.circuit, this.deps.config.lane);
  }

  /** When the store is next called: the next flush, or the next try during an outage. */
  private nextStateCallAt(): number {
    return this.outage?.retryAt ?? this.lastFlushAt + this.settings.flushIntervalMs;
  }

  private async step(): Promise<void> {
    const { clock } = this.deps;
    await this.syncState(clock.now());
    const { circuit } = this;
    const now = clock.now();
    if (circuit.pausedUntil > this.lastSeenPause) {
      this.lastSeenPause = circuit.pausedUntil;
      this.pacer.pause(circuit.pausedUntil, this.deps.random);
    }
    if (!isDispatchAllowed(circuit)) {
      this.dispatchAllowed = false;
      // A health check starts with a circuit write: it waits for the store to come back.
      const due = this.outage === undefined ? await this.sendHealthCheckIfDue(circuit, now) : undefined;
      await this.sleepUntil(Math.min(due ?? Number.POSITIVE_INFINITY, now + this.settings.circuitPollMs));
      return;
    }
    if (!this.dispatchAllowed) {
      this.dispatchAllowed = true;
      this.pacer.startRamp(now);
    }
    const next = await this.nextMessage();
    if (next === undefined) return;
    await this.handle(next);
  }

  private async handle({ message, receivedAt }: Buffered): Promise<void> {
    const now = this.deps.clock.now();
    const parsed = parseJob(message);
    if (!parsed.ok) return this.deadLetterHead(parsed.reason, 1);
    const { job } = parsed;
    if (this.rejected?.receiptHandle === message.receiptHandle) return this.deadLetterHead(this.rejected.reason, job.attempt);
    const slot = this.pacer.nextSlot(now, job.cost);
    if (!Number.isFinite(slot)) {
      const tier = this.deps.config.quotas.find((t) => unitsFor(t, job.cost) > t.limit);
      return this.deadLetterHead(`cost ${job.cost} exceeds the limit ${tier?.limit} per ${tier?.per} of a quota tier, so it can never be sent`, job.attempt);
    }
    if (slot > now) return this.sleepUntil(Math.min(slot, this.nextStateCallAt()));
    if (receivedAt + this.settings.visibilityTimeoutMs - now < this.settings.workerTimeoutMs) {
      this.buffer.shift(); // its visibility no longer covers a worker's run: leave it to reappear
      return;
    }
    const units = this.deps.config.quotas.map((tier) => unitsFor(tier, job.cost));
    const allowed = units.map((u, i) => now <= this.allowance.until && (this.usedSinceFlush[i] ?? 0) + u <= (this.allowance.units[i] ?? 0));
    if (this.outage === undefined && !allowed.every(Boolean)) {
      await this.tryFlush({ need: units }); // persist a larger allowance before using it
      return;
    }
    if (!this.mayDispatch(now, allowed)) {
      // Held by the outage or an expired lease: wait for the next try of the store (or the flush that renews).
      if (this.outage !== undefined) await this.sleepUntil(this.outage.retryAt);
      return;
    }
    // Counted before the invoke: a run killed while invoking may have dispatched, and the saved ledger must hold it.
    units.forEach((u, i) => (this.usedSinceFlush[i] = (this.usedSinceFlush[i] ?? 0) + u));
    const reservation = this.pacer.dispatch(now, job.cost);
    const refund = () => {
      // Nothing started: the quota flows back.
      this.pacer.ledger.settle({ reservation, actualCost: null });
      units.forEach((u, i) => (this.usedSinceFlush[i] = (this.usedSinceFlush[i] ?? 0) - u));
    };
    try {
      await this.deps.invoker.invoke(jobEventOf(this.deps.config.lane, message, job, this.deps.newId(), reservation));
    } catch (error) {
      if (error instanceof InvokeRejectedError) {
        refund();
        this.rejected = { receiptHandle: message.receiptHandle, reason: error.message };
        return this.deadLetterHead(error.message, job.attempt);
      }
      if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError)) throw error;
      // The message stays at the head, and we back off. An invoke that may have started keeps its quota: its worker
      // may be calling the API, and the next dispatch of the message then finds its idempotency record.
      if (!(error instanceof InvokeFailedError && error.mayHaveStarted)) refund();
      this.summary.invokeFailures++;
      this.deps.onEvent?.({ type: 'invoke-failed', at: now, error: error.message });
      await this.sleepUntil(this.deps.clock.now() + this.invokeBackoffMs);
      this.invokeBackoffMs = Math.min(MAX_BACKOFF_MS, this.invokeBackoffMs * 2);
      return;
    }
    this.invokeBackoffMs = this.settings.invokeBackoffMs;
    this.buffer.shift();
    this.summary.dispatched++;
    this.deps.onEvent?.({ type: 'dispatched', at: now, messageId: message.messageId, queue: message.queue, cost: job.cost });
  }

  /**
   * Whether a message whose units fit the saved allowance on the tiers marked in `allowed` may go at `now`: never on
   * an expired lease, and during a state outage only as the state-outage policy of {@link runOrchestrator} allows.
   */
  private mayDispatch(now: number, allowed: readonly boolean[]): boolean {
    if (now >= this.lease.expiresAt) return false;
    if (this.outage === undefined) return true;
    if (this.settings.stateOutage === 'pause') return false;
    // A successor dispatches from lease.expiresAt on: a sliding window that closes by then (allowing for this call to
    // arrive up to arrivalMarginMs late) cannot hold its calls too.
    const closesBy = now + this.deps.config.pacing.arrivalMarginMs;
    return this.deps.config.quotas.every((tier, i) => allowed[i] === true || (isSliding(tier.per) && closesBy + slidingWindowMs(tier.per) <= this.lease.expiresAt));
  }

  /**
   * Sends the head message to its dead-letter queue with `reason`. A failed send leaves it at the head and backs the
   * queues off; a failed delete after the send leaves it to be received and dead-lettered again.
   */
  private async deadLetterHead(reason: string, attempt: number): Promise<void> {
    const head = this.buffer[0];
    if (head === undefined) return;
    const { clock } = this.deps;
    if (clock.now() < this.queueRetryAt) return this.sleepUntil(Math.min(this.queueRetryAt, this.nextStateCallAt()));
    const { message } = head;
    const failure = await this.tryQueue(() => deadLetter(this.deps.queues, { ...message, queue: message.queue as SourceQueue }, reason, attempt));
    if (failure?.operation === 'send') return; // nothing reached the DLQ: it stays at the head
    this.buffer.shift();
    if (this.rejected?.receiptHandle === message.receiptHandle) this.rejected = undefined;
    this.summary.deadLettered++;
    this.deps.onEvent?.({ type: 'dead-lettered', at: clock.now(), messageId: message.messageId, reason });
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
      const now = this.deps.clock.now();
      const retried = error.operation === 'receive' || error.operation === 'send';
      if (retried) this.queueRetryAt = now + this.queueRetry.next();
      this.deps.onEvent?.({ type: 'queue-unavailable', at: now, operation: error.operation, queue: error.queue, error: error.message, retryAt: retried ? this.queueRetryAt : now });
      return error;
    }
  }

  /**
   * The head of the buffer, refilled from requeue ▸ fifo ▸ main when empty. FIFO is read one message at a time:
   * a batch could hold message k+1 of a group while k is still being worked on. When all are empty it long-polls
   * the main queue briefly and returns `undefined`; after a failed receive it waits out the back-off instead.
   */
  private async nextMessage(): Promise<Buffered | undefined> {
    if (this.buffer.length > 0) return this.buffer[0];
    const { queues, clock } = this.deps;
    if (clock.now() < this.queueRetryAt) {
      await this.sleepUntil(Math.min(this.queueRetryAt, this.nextStateCallAt()));
      return undefined;
    }
    const visibilityMs = this.settings.visibilityTimeoutMs;
    const receive = async (queue: SourceQueue, max: number, waitMs: number): Promise<ReceivedMessage[] | undefined> => {
      const received: ReceivedMessage[] = [];
      const failure = await this.tryQueue(async () => received.push(...(await queues.receive(queue, { max, visibilityMs, waitMs }))));
      return failure === undefined ? received : undefined;
    };
    // After a failed receive the round resumes at that queue: the ones before it were just found empty, and starting
    // over could keep hitting a failure that strikes every few calls.
    for (const [i, queue] of READ_ORDER.entries()) {
      if (i < this.readFrom) continue;
      const received = await receive(queue, queue === 'fifo' ? 1 : this.batchSize(), 0);
      if (received === undefined) {
        this.readFrom = i;
        return undefined;
      }
      this.readFrom = 0;
      if (received.length > 0) {
        const receivedAt = clock.now();
        this.buffer = received.map((message) => ({ message, receivedAt }));
        return this.buffer[0];
      }
    }
    const waitMs = Math.max(0, Math.min(this.settings.idleWaitMs, this.options.deadline - clock.now()));
    const received = await receive('main', this.batchSize(), waitMs);
    const receivedAt = clock.now();
    this.buffer = (received ?? []).map((message) => ({ message, receivedAt }));
    return undefined;
  }

  /** As many messages as the tightest sliding tier lets through while a message's visibility still covers a worker run. */
  private batchSize(): number {
    const window = this.settings.visibilityTimeoutMs - this.settings.workerTimeoutMs;
    const rates = this.deps.config.quotas.filter((t) => isSliding(t.per)).map(tierRatePerMs);
    const perWindow = rates.length === 0 ? 10 : Math.floor(Math.min(...rates) * window);
    return Math.max(1, Math.min(10, perWindow));
  }

  /**
   * Sends the half-open trial when it is due and this orchestrator wins the conditional write. Returns when the next
   * one is due; after a failed circuit write (the outage policy takes over), `undefined`.
   */
  private async sendHealthCheckIfDue(circuit: Circuit, now: number): Promise<number | undefined> {
    const { stores, config, invoker } = this.deps;
    const due = healthCheckDueAt(circuit, config.circuit);
    if (due === undefined || due > now) return due;
    const checkId = this.deps.newId();
    const update = await this.tryState<CircuitUpdate>(() => applyCircuitEvent(stores.circuit, config.lane, { type: 'health-check-sent', checkId }, now, config.circuit));
    if (update === undefined) return undefined;
    const { after, written } = update.value;
    this.circuit = after;
    if (written && after.state.status === 'half-open' && after.state.checkId === checkId) {
      try {
        await invoker.invoke({ kind: 'health-check', lane: config.lane, checkId, sentAt: now });
        this.summary.healthChecks++;
        this.deps.onEvent?.({ type: 'health-check-sent', at: now, checkId });
      } catch (error) {
        // The check never started; the circuit lets another go once this one times out.
        if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError || error instanceof InvokeRejectedError)) throw error;
        this.summary.invokeFailures++;
        this.deps.onEvent?.({ type: 'invoke-failed', at: now, error: error.message });
      }
    }
    return healthCheckDueAt(after, config.circuit);
  }

  /**
   * Folds in workers' settlements, saves the ledger and renews the lease, all fenced by the lease token. Each save
   * also removes the settlements folded into it, so that a run killed at any instant leaves every settlement either
   * in the saved ledger or pending for its successor. A backlog larger than one save takes further saves, at most
   * {@link MAX_SAVES_PER_FLUSH} in all; the rest waits for the next flush.
   *
   * Unless `final`, the saved ledger also holds a fresh allowance for the next `2 × flushIntervalMs`: twice what
   * the run used since the last flush (so a steady run rarely flushes early), at least `need`, at least one unit.
   * A run killed before its next flush can only have dispatched within that allowance, which its successor counts.
   * The allowance takes effect only once the save succeeded; until then the previous one still bounds the run.
   * After a save whose lease renewal (or further save) failed, the next flush (unless final) only renews: the saved
   * ledger stands.
   */
  private async flush({ final = false, need = [] }: { final?: boolean; need?: readonly number[] } = {}): Promise<void> {
    const { config, clock } = this.deps;
    if (this.savedUnrenewed && !final) return this.renew();
    let settled = await this.foldSettlements();
    const allowance: Allowance | undefined = final
      ? undefined
      : {
          until: this.pacer.ledger.allowanceEnd(clock.now(), 2 * this.settings.flushIntervalMs),
          units: config.quotas.map((_, i) => Math.max(1, 2 * (this.usedSinceFlush[i] ?? 0), need[i] ?? 0)),
        };
    await this.save(allowance, settled);
    if (allowance !== undefined) {
      this.allowance = allowance;
      this.usedSinceFlush = config.quotas.map(() => 0);
    }
    this.savedUnrenewed = true;
    for (let saves = 1; settled === MAX_PENDING_SETTLEMENTS && saves < MAX_SAVES_PER_FLUSH; saves++) {
      settled = await this.foldSettlements();
      await this.save(allowance, settled);
    }
    await this.renew();
  }

  /** Saves the ledger holding `allowance`, removing the `settled` oldest pending settlements (folded into it). */
  private async save(allowance: Allowance | undefined, settled: number): Promise<void> {
    await this.deps.stores.ledger.saveLedger(this.deps.config.lane, this.pacer.ledger.snapshot(allowance), this.lease.token, settled);
    this.foldedPending = [];
  }

  private async renew(): Promise<void> {
    const now = this.deps.clock.now();
    this.lease = await this.deps.stores.lease.renewLease(this.lease, now, this.settings.leaseTtlMs);
    this.savedUnrenewed = false;
    this.lastFlushAt = now;
    this.deps.onEvent?.({ type: 'flushed', at: now, settlements: this.foldedUnreported });
    this.foldedUnreported = 0;
  }

  /**
   * Reads the oldest pending settlements and folds into the ledger those not folded before.
   * @returns how many were read: the next save removes them.
   */
  private async foldSettlements(): Promise<number> {
    const pending = await this.deps.stores.ledger.pendingSettlements(this.deps.config.lane);
    // Settlements folded for a save that failed are still pending, and the oldest. Unless the save did land and only
    // its answer was lost (a timeout): then they are gone, the list no longer starts with them, and all of it is new.
    const known = startsWith(pending, this.foldedPending) ? this.foldedPending.length : 0;
    for (const settlement of pending.slice(known)) this.pacer.ledger.settle(settlement);
    this.foldedPending = pending;
    this.foldedUnreported += pending.length - known;
    return pending.length;
  }

  /**
   * Hands buffered, undispatched messages back to their queues so the next run need not wait out their visibility.
   * Those whose visibility has already run out are visible again; SQS refuses to change them (MessageNotInflight).
   * One whose hand-back fails reappears once its visibility runs out.
   */
  private async releaseBuffer(): Promise<void> {
    const now = this.deps.clock.now();
    for (const { message, receivedAt } of this.buffer) {
      if (receivedAt + this.settings.visibilityTimeoutMs > now) await this.tryQueue(() => this.deps.queues.changeVisibility(message.queue, message.receiptHandle, 0));
    }
    this.buffer = [];
  }

  private async sleepUntil(at: number): Promise<void> {
    const { clock } = this.deps;
    await clock.sleep(Math.max(1, Math.min(at, this.options.deadline) - clock.now()));
  }
}

/** Whether `list` begins with the settlements of `prefix`, value for value. */
function startsWith(list: readonly Settlement[], prefix: readonly Settlement[]): boolean {
  return prefix.length <= list.length && prefix.every((settlement, i) => isDeepStrictEqual(settlement, list[i]));
}
