import type { ServiceConfig } from '../config';
import { healthCheckDueAt, isDispatchAllowed, type Circuit } from '../domain/breaker/circuit';
import { Pacer } from '../domain/pacing/pacer';
import { QuotaLedger, type Allowance } from '../domain/quota/ledger';
import { isSliding, tierRatePerMs, unitsFor } from '../domain/quota/tiers';
import { InvokeFailedError, InvokeThrottledError, LeaseLostError } from '../errors';
import type { Clock } from '../ports/Clock';
import type { Invoker } from '../ports/Invoker';
import { READ_ORDER, type QueueReceiver, type ReceivedMessage, type SourceQueue } from '../ports/QueueReceiver';
import type { Lease, StateStore } from '../ports/StateStore';
import { applyCircuitEvent, loadCircuit } from './circuitUpdates';
import { jobEventOf, parseJob } from './parseJob';
import { deadLetter } from './queueOutcomes';

/** What the orchestrator needs. */
export interface OrchestratorDeps {
  readonly clock: Clock;
  readonly store: StateStore;
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
  | { readonly type: 'flushed'; readonly at: number; readonly settlements: number };

/** Bounds of one run. */
export interface RunOptions {
  /** Epoch ms at which the run stops dispatching, flushes and exits (shortly before the Lambda timeout). */
  readonly deadline: number;
  /** Checked every step; true stops the run early (e.g. a simulation that is done). */
  readonly shouldStop?: () => boolean;
}

/** How a run went. */
export interface RunSummary {
  /** `held-elsewhere`: another orchestrator holds the lease, nothing was done; `lost`: the lease was taken over mid-run. */
  readonly lease: 'acquired' | 'held-elsewhere' | 'lost';
  readonly dispatched: number;
  readonly deadLettered: number;
  readonly healthChecks: number;
  readonly invokeFailures: number;
}

const MAX_INVOKE_BACKOFF_MS = 10_000;

/**
 * One orchestrator run (steps 1–4 of DESIGN's architecture): take the lease, rehydrate ledger and circuit, then
 * until the deadline read the circuit before every dispatch — sending only health checks while it is not closed —
 * receive requeue ▸ fifo ▸ main, wait for each pacing slot and invoke a worker; flush the ledger every
 * `flushIntervalMs` and at exit, and release the lease. It never dispatches without the lease: a flush that finds
 * the lease lost ends the run at once.
 */
export async function runOrchestrator(deps: OrchestratorDeps, options: RunOptions): Promise<RunSummary> {
  const { clock, store, config } = deps;
  const lease = await store.acquireLease(config.lane, deps.owner, clock.now(), config.orchestrator.leaseTtlMs);
  if (lease === null) return { lease: 'held-elsewhere', dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 };
  const saved = await store.loadLedger(config.lane);
  const ledger = saved === undefined ? new QuotaLedger(config.quotas, { timeZone: config.timeZone }) : QuotaLedger.fromJSON(config.quotas, saved, { timeZone: config.timeZone });
  const run = new OrchestratorRun(deps, options, lease, new Pacer(ledger, config.pacing));
  return run.execute();
}

interface Buffered {
  readonly message: ReceivedMessage;
  readonly receivedAt: number;
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

  constructor(
    private readonly deps: OrchestratorDeps,
    private readonly options: RunOptions,
    private lease: Lease,
    private readonly pacer: Pacer,
  ) {
    this.lastFlushAt = deps.clock.now();
    this.invokeBackoffMs = deps.config.orchestrator.invokeBackoffMs;
  }

  private get settings() {
    return this.deps.config.orchestrator;
  }

  async execute(): Promise<RunSummary> {
    try {
      await this.startRamps();
      await this.flush();
      while (!this.stopping()) await this.step();
      await this.releaseBuffer();
      await this.flush({ final: true });
      await this.deps.store.releaseLease(this.lease);
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
  private async startRamps(): Promise<void> {
    const now = this.deps.clock.now();
    const circuit = await loadCircuit(this.deps.store, this.deps.config.lane);
    this.dispatchAllowed = isDispatchAllowed(circuit);
    const { state } = circuit;
    if (state.status === 'closed' && state.closedAt !== null && now - state.closedAt < this.deps.config.pacing.rampSeconds * 1000) {
      this.pacer.startRamp(state.closedAt);
    }
  }

  private async step(): Promise<void> {
    const { clock, config } = this.deps;
    let now = clock.now();
    // Flush on schedule, and in any case before the lease could expire: a run never dispatches on an expired lease.
    if (now - this.lastFlushAt >= this.settings.flushIntervalMs || now >= this.lease.expiresAt - this.settings.flushIntervalMs) await this.flush();
    const circuit = await loadCircuit(this.deps.store, config.lane);
    now = clock.now();
    if (circuit.pausedUntil > this.lastSeenPause) {
      this.lastSeenPause = circuit.pausedUntil;
      this.pacer.pause(circuit.pausedUntil, this.deps.random);
    }
    if (!isDispatchAllowed(circuit)) {
      this.dispatchAllowed = false;
      const due = await this.sendHealthCheckIfDue(circuit, now);
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
    const slot = this.pacer.nextSlot(now, job.cost);
    if (!Number.isFinite(slot)) {
      const tier = this.deps.config.quotas.find((t) => unitsFor(t, job.cost) > t.limit);
      return this.deadLetterHead(`cost ${job.cost} exceeds the limit ${tier?.limit} per ${tier?.per} of a quota tier, so it can never be sent`, job.attempt);
    }
    if (slot > now) return this.sleepUntil(Math.min(slot, this.lastFlushAt + this.settings.flushIntervalMs));
    if (receivedAt + this.settings.visibilityTimeoutMs - now < this.settings.workerTimeoutMs) {
      this.buffer.shift(); // its visibility no longer covers a worker's run: leave it to reappear
      return;
    }
    const units = this.deps.config.quotas.map((tier) => unitsFor(tier, job.cost));
    if (now > this.allowance.until || units.some((u, i) => (this.usedSinceFlush[i] ?? 0) + u > (this.allowance.units[i] ?? 0))) {
      return this.flush({ need: units }); // persist a larger allowance before using it
    }
    // Counted before the invoke: a run killed while invoking may have dispatched, and the saved ledger must hold it.
    units.forEach((u, i) => (this.usedSinceFlush[i] = (this.usedSinceFlush[i] ?? 0) + u));
    const reservation = this.pacer.dispatch(now, job.cost);
    try {
      await this.deps.invoker.invoke(jobEventOf(this.deps.config.lane, message, job, this.deps.newId(), reservation));
    } catch (error) {
      if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError)) throw error;
      // Nothing started: the quota flows back, the message stays at the head, and we back off.
      this.pacer.ledger.settle({ reservation, actualCost: null });
      units.forEach((u, i) => (this.usedSinceFlush[i] = (this.usedSinceFlush[i] ?? 0) - u));
      this.summary.invokeFailures++;
      this.deps.onEvent?.({ type: 'invoke-failed', at: now, error: error.message });
      await this.deps.clock.sleep(this.invokeBackoffMs);
      this.invokeBackoffMs = Math.min(MAX_INVOKE_BACKOFF_MS, this.invokeBackoffMs * 2);
      return;
    }
    this.invokeBackoffMs = this.settings.invokeBackoffMs;
    this.buffer.shift();
    this.summary.dispatched++;
    this.deps.onEvent?.({ type: 'dispatched', at: now, messageId: message.messageId, queue: message.queue, cost: job.cost });
  }

  private async deadLetterHead(reason: string, attempt: number): Promise<void> {
    const head = this.buffer.shift();
    if (head === undefined) return;
    const { message } = head;
    await deadLetter(this.deps.queues, { ...message, queue: message.queue as SourceQueue }, reason, attempt);
    this.summary.deadLettered++;
    this.deps.onEvent?.({ type: 'dead-lettered', at: this.deps.clock.now(), messageId: message.messageId, reason });
  }

  /**
   * The head of the buffer, refilled from requeue ▸ fifo ▸ main when empty. FIFO is read one message at a time:
   * a batch could hold message k+1 of a group while k is still being worked on. When all are empty it long-polls
   * the main queue briefly and returns `undefined`.
   */
  private async nextMessage(): Promise<Buffered | undefined> {
    if (this.buffer.length > 0) return this.buffer[0];
    const { queues, clock } = this.deps;
    const visibilityMs = this.settings.visibilityTimeoutMs;
    for (const queue of READ_ORDER) {
      const max = queue === 'fifo' ? 1 : this.batchSize();
      const received = await queues.receive(queue, { max, visibilityMs, waitMs: 0 });
      if (received.length > 0) {
        const receivedAt = clock.now();
        this.buffer = received.map((message) => ({ message, receivedAt }));
        return this.buffer[0];
      }
    }
    const waitMs = Math.max(0, Math.min(this.settings.idleWaitMs, this.options.deadline - clock.now()));
    const received = await queues.receive('main', { max: this.batchSize(), visibilityMs, waitMs });
    const receivedAt = clock.now();
    this.buffer = received.map((message) => ({ message, receivedAt }));
    return undefined;
  }

  /** As many messages as the tightest sliding tier lets through while a message's visibility still covers a worker run. */
  private batchSize(): number {
    const window = this.settings.visibilityTimeoutMs - this.settings.workerTimeoutMs;
    const rates = this.deps.config.quotas.filter((t) => isSliding(t.per)).map(tierRatePerMs);
    const perWindow = rates.length === 0 ? 10 : Math.floor(Math.min(...rates) * window);
    return Math.max(1, Math.min(10, perWindow));
  }

  /** Sends the half-open trial when it is due and this orchestrator wins the conditional write. Returns when the next one is due. */
  private async sendHealthCheckIfDue(circuit: Circuit, now: number): Promise<number | undefined> {
    const { store, config, invoker } = this.deps;
    const due = healthCheckDueAt(circuit, config.circuit);
    if (due === undefined || due > now) return due;
    const checkId = this.deps.newId();
    const { after, written } = await applyCircuitEvent(store, config.lane, { type: 'health-check-sent', checkId }, now, config.circuit);
    if (written && after.state.status === 'half-open' && after.state.checkId === checkId) {
      try {
        await invoker.invoke({ kind: 'health-check', lane: config.lane, checkId, sentAt: now });
        this.summary.healthChecks++;
        this.deps.onEvent?.({ type: 'health-check-sent', at: now, checkId });
      } catch (error) {
        // The check never started; the circuit lets another go once this one times out.
        if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError)) throw error;
        this.summary.invokeFailures++;
      }
    }
    return healthCheckDueAt(after, config.circuit);
  }

  /**
   * Folds in workers' settlements, saves the ledger and renews the lease, all fenced by the lease token.
   *
   * Unless `final`, the saved ledger also holds a fresh allowance for the next `2 × flushIntervalMs`: twice what
   * the run used since the last flush (so a steady run rarely flushes early), at least `need`, at least one unit.
   * A run killed before its next flush can only have dispatched within that allowance, which its successor counts.
   */
  private async flush({ final = false, need = [] }: { final?: boolean; need?: readonly number[] } = {}): Promise<void> {
    const { store, config, clock } = this.deps;
    const settlements = await this.foldSettlements();
    const { ledger } = this.pacer;
    if (!final) {
      const until = ledger.allowanceEnd(clock.now(), 2 * this.settings.flushIntervalMs);
      this.allowance = { until, units: config.quotas.map((_, i) => Math.max(1, 2 * (this.usedSinceFlush[i] ?? 0), need[i] ?? 0)) };
      this.usedSinceFlush = config.quotas.map(() => 0);
    }
    await store.saveLedger(config.lane, ledger.snapshot(final ? undefined : this.allowance), this.lease.token);
    const now = clock.now();
    this.lease = await store.renewLease(this.lease, now, this.settings.leaseTtlMs);
    this.lastFlushAt = now;
    this.deps.onEvent?.({ type: 'flushed', at: now, settlements });
  }

  private async foldSettlements(): Promise<number> {
    const settlements = await this.deps.store.takeSettlements(this.deps.config.lane, this.lease.token);
    for (const settlement of settlements) this.pacer.ledger.settle(settlement);
    return settlements.length;
  }

  /**
   * Hands buffered, undispatched messages back to their queues so the next run need not wait out their visibility.
   * Those whose visibility has already run out are visible again; SQS refuses to change them (MessageNotInflight).
   */
  private async releaseBuffer(): Promise<void> {
    const now = this.deps.clock.now();
    for (const { message, receivedAt } of this.buffer) {
      if (receivedAt + this.settings.visibilityTimeoutMs > now) await this.deps.queues.changeVisibility(message.queue, message.receiptHandle, 0);
    }
    this.buffer = [];
  }

  private async sleepUntil(at: number): Promise<void> {
    const { clock } = this.deps;
    await clock.sleep(Math.max(1, Math.min(at, this.options.deadline) - clock.now()));
  }
}
