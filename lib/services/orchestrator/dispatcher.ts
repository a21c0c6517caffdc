import { ownValue } from '../../domain/ownValue';
import type { Hold, Pacer } from '../../domain/pacing/pacer';
import { unitsFor, type Costs, type Tier } from '../../domain/quota/tiers';
import { handsBack } from '../../domain/usage/unitSettings';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError } from '../../errors';
import type { Reservation } from '../../domain/quota/ledger';
import { batchJobDispatchId, type JobEvent } from '../../ports/Invoker';
import { fifoGroupOf, type ReceivedMessage } from '../../ports/QueueReceiver';
import { jobEventOf, parseJob, type ParsedJob } from '../parseJob';
import { Backoff } from './backoff';
import type { Buffered, Intake } from './intake';
import { LanePools } from './lanePools';
import type { LedgerSync } from './ledgerSync';
import { holdLabel, type QuotaGate } from './quotaGate';
import type { RunContext } from './runContext';
import { BATCH_REACH_OF_WORKER_TIMEOUT } from './rehydrate';
import type { StateLink } from './stateLink';
import type { RunPorts } from './types';

/** The ports a dispatcher uses: the invoker, and the dispatch ids. */
export type DispatcherPorts = Pick<RunPorts, 'invoker' | 'newId'>;

/** The check of an open circuit that a job is sent as (see `CircuitWatch.jobTrial`), and whom to tell once it is. */
export interface TrialDispatch {
  readonly checkId: string;
  /** Told once a worker was invoked with the job. */
  readonly sent: () => void;
}

/**
 * Reads the circuit before a dispatch at `now` if its last read is `circuitPollMs` old (see `OrchestratorRun`): true
 * when it read, and the head is to be looked at again in the light of what it found, at the time it answered.
 */
export type CircuitRefresh = (now: number) => Promise<boolean>;

/**
 * Takes the intake's head message one step on: dead-letters what can never go, hides what cannot go while it is held
 * (see `QuotaGate`) until its slot, waits until the lead (see `DispatchLead`) before its pacing slot, has the ledger
 * sync persist a larger allowance when it needs one, and invokes a worker once the quota and the state-outage policy
 * let it go.
 * Quota is reserved at the slot, and the worker waits for it: the call reaches the API within the arrival margin of
 * its slot, whatever the worker's start delay (see `JobEvent.callBy`).
 */
export class Dispatcher {
  private readonly invokeRetry: Backoff;
  /** After Lambda refused a batch: the head goes alone next, and is dead-lettered if refused again. */
  private aloneNext = false;
  /** When a worker was last invoked: its calls may report until its slots' holds run out. */
  private lastInvokeAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly run: RunContext,
    private readonly ports: DispatcherPorts,
    private readonly intake: Intake,
    private readonly ledger: LedgerSync,
    private readonly link: StateLink,
    private readonly pacer: Pacer,
    private readonly gate: QuotaGate,
    private readonly refreshCircuit: CircuitRefresh,
    private readonly pools: LanePools = LanePools.NONE,
  ) {
    this.invokeRetry = new Backoff(run.settings.invokeBackoffMs);
  }

  /**
   * One step on the head message `head`: it may be dispatched, dead-lettered, dropped, hidden, or waited for. With
   * `trial`, it is dispatched alone, as the job of that check of the circuit (see `JobEvent.trial`).
   */
  async handle(head: Buffered, trial?: TrialDispatch): Promise<void> {
    const { message, receivedAt } = head;
    const { config } = this.run;
    const now = this.run.clock.now();
    const parsed = parseJob(message, config.units);
    if (!parsed.ok) return this.intake.deadLetterHead(parsed.reason, 1);
    const { job } = parsed;
    if (head.kind === 'refused') return this.intake.deadLetterHead(head.reason, job.attempt);
    // The earliest slot a worker invoked now can make: one that is already due would be reached late (a warm start
    // takes tens of ms) and given back, so a run behind its schedule reserves the configured lead ahead, or more
    // while most workers are late (a slow table makes every claim late: at the configured lead, every job would be
    // given back at every dispatch). The lead that grew for a tail of late starts only dispatches earlier: a slot it
    // left behind would be lost, a hole in the schedule.
    const slot = this.slotFor(now + this.pacer.lead.typicalMs, job.costs);
    if (!Number.isFinite(slot))
      return this.intake.deadLetterHead(neverFits([...config.quotas, ...this.pools.tiers], job.costs), job.attempt);
    const hold =
      slot > now ? this.pools.blockedUntil(now, this.pacer.blockedUntil(now, job.costs), job.costs) : undefined;
    if (hold !== undefined && hold.until > this.gate.sendBy(receivedAt)) return this.holdBack(head, job, hold, now);
    const dispatchAt = slot - this.pools.lead(this.pacer.lead.ms);
    if (dispatchAt > now)
      return this.expectsHandBack(hold, now)
        ? this.waitReadingReports(dispatchAt, now)
        : this.run.sleepUntil(Math.min(dispatchAt, this.ledger.nextStoreCallAt()));
    if (!this.slotFree(now))
      return this.waitReadingReports(this.pacer.slots?.nextExpiry() ?? Number.POSITIVE_INFINITY, now);
    // Its visibility no longer covers a worker's run from its slot: leave it to reappear.
    if (receivedAt + this.run.settings.visibilityTimeoutMs - slot < this.run.settings.workerTimeoutMs)
      return this.intake.leaveHead();
    // Judged at the slot, the instant the call is counted at: the allowance and the lease must cover it.
    const units = config.quotas.map((tier) => unitsFor(tier, job.costs));
    const allowed = this.ledger.allowed(slot, units);
    const side = this.link.side;
    // Enough for the messages of its FIFO group that may go in its batch, which can go in no other.
    const needSlots = 1 + this.intake.followersOfHead();
    const need = { units: units.map((u) => u * needSlots), slots: needSlots };
    const covered = () => this.ledger.covers(slot, need);
    if (side.kind === 'in-sync' && !covered()) {
      // Persist a larger allowance, reaching the slot, before using it. One that cannot reach it (the slot is in the
      // next window of a calendar tier) is waited out, not flushed again at once.
      if ((await this.ledger.tryFlush({ need, until: slot })) && !covered())
        await this.run.sleepUntil(Math.min(slot, this.ledger.nextStoreCallAt()));
      return;
    }
    if (!this.ledger.mayDispatch(slot, allowed) || !this.ledger.slotAllowed(slot, 1)) {
      // Held by the outage or an expired lease: wait for the next try of the store (or the flush that renews).
      if (side.kind === 'outage') await this.run.sleepUntil(side.retryAt);
      return;
    }
    if (!this.pools.ready(slot, job.costs, now, needSlots))
      return this.pools.prepare(this.run, slot, job.costs, needSlots);
    // The circuit as read within `circuitPollMs` lets it go: a pause or an opening a worker wrote meanwhile stops it.
    // A trial goes on the read that found it due (see `CircuitWatch.jobTrial`): the circuit is not closed.
    if (trial === undefined && (await this.refreshCircuit(now))) return;
    // Another lane's run may have taken the pools' room at the slot meanwhile.
    if (!this.pools.ready(slot, job.costs, this.run.clock.now())) return;
    const first = this.reserve(head, job, units, slot, now);
    if (trial === undefined) return this.invoke(this.batchFrom(first, now), now);
    await this.invoke([{ ...first, event: { ...first.event, trial: trial.checkId } }], now, trial.sent);
  }

  /** The earliest slot from `at` at which `costs` fit the lane's tiers and its pools' (see `LanePools.slot`). */
  private slotFor(at: number, costs: Costs): number {
    return this.pools.slot(at, costs, (from) => this.pacer.nextSlot(from, costs));
  }

  /** Whether a call slot is free at `now` (always, without a cap on calls in flight). */
  private slotFree(now: number): boolean {
    return (this.pacer.slots?.free(now) ?? 1) > 0;
  }

  /**
   * Whether what holds the head back (`hold`) may give way to the workers' next reports: it is a tier whose unit the
   * answers may hand back (see `handsBack`), and a call dispatched lately may still hand part of its estimate back.
   */
  private expectsHandBack(hold: Hold | undefined, now: number): boolean {
    const { config } = this.run;
    const reportsUntil = this.lastInvokeAt + config.pacing.arrivalMarginMs + config.orchestrator.workerTimeoutMs;
    return hold?.kind === 'tier' && handsBack(ownValue(config.units, hold.tier.unit)) && now < reportsUntil;
  }

  /**
   * Waits for `until` (a slot that runs out, the head's dispatch), reading the workers' latest reports meanwhile, at
   * most every `circuitPollMs`: a call slot that frees, or estimates handed back, may let the head go sooner than the
   * next flush would tell. Each read reads the lane's settlement shards.
   */
  private async waitReadingReports(until: number, now: number): Promise<void> {
    const readAt = this.ledger.lastReportsReadAt + this.run.settings.circuitPollMs;
    if (now >= readAt && this.link.side.kind === 'in-sync') return this.ledger.readReports();
    await this.run.sleepUntil(Math.min(Math.max(readAt, now + 1), until, this.ledger.nextStoreCallAt()));
  }

  /**
   * Hides the head, which `hold` keeps from being sent while it is held (its cost may need more than the one unit
   * the receive gate asked for), until its slot: holding it to the end of the run would cost it a receive per run.
   */
  private async holdBack({ message, receivedAt }: Buffered, job: ParsedJob, hold: Hold, now: number): Promise<void> {
    await this.intake.hideHead(this.gate.hideMs(receivedAt, hold.until, now));
    this.run.report({
      type: 'message-held',
      at: now,
      messageId: message.messageId,
      queue: message.queue,
      costs: job.costs,
      tier: holdLabel(hold),
      until: hold.until,
    });
  }

  /**
   * Reserves the quota of `job` (`units` per tier) at its `slot`, counted before the invoke: a run killed while
   * invoking may have dispatched, and the saved ledger must hold it.
   */
  private reserve(
    { message, receivedAt }: Buffered,
    job: ParsedJob,
    units: readonly number[],
    slot: number,
    now: number,
    dispatchId = this.ports.newId(),
    chained = false,
  ): Reserved {
    const { config } = this.run;
    this.ledger.use(units);
    const own = this.pacer.dispatch(slot, job.costs, chained);
    const pools = this.pools.reserve(slot, job.costs);
    const reservation = pools === undefined ? own : { ...own, pools };
    this.pacer.slots?.take(dispatchId, slot, now);
    const callBy = slot + config.pacing.arrivalMarginMs - config.pacing.callAllowanceMs;
    return {
      message,
      receivedAt,
      costs: job.costs,
      units,
      reservation,
      event: jobEventOf(config.lane, message, job, dispatchId, reservation, callBy, now),
    };
  }

  /**
   * The head's job `first`, then the buffered messages after it that can go in its invocation, reserved at their
   * slots: while each parses, is not refused, has a slot within the batch window that its visibility and the
   * allowance cover, and the batch stays within {@link MAX_BATCH_EVENT_BYTES}. After a batch Lambda refused, the head
   * goes alone once.
   *
   * The window is `batchWindowMs` after the first job's slot, widened by as much as the lead has grown past
   * `dispatchLeadMs`: a worker waits for its first slot about as long as the lead, so while late starts keep the lead
   * long, a batch spans as long and the wait is shared by that many more jobs (at 50/s and a lead of 1.5 s, about 85
   * instead of 24). A FIFO message whose group already has one in the batch (the worker calls it once that one has
   * ended) is slotted at least the chain gap (see `ChainGap`) after it, and its window starts there; every slot
   * stays within {@link BATCH_REACH_OF_WORKER_TIMEOUT} of a worker's time of now (which `rehydrate` relies on).
   */
  private batchFrom(first: Reserved, now: number): Reserved[] {
    const batch = [first];
    const { config } = this.run;
    const { batchWindowMs, dispatchLeadMs } = config.pacing;
    if (this.aloneNext || batchWindowMs === 0) return batch;
    const windowMs = batchWindowMs + Math.max(0, this.pacer.lead.ms - dispatchLeadMs);
    const latestInGroup = new Map<string, number>();
    const joined = ({ message, reservation }: Reserved) => {
      const group = fifoGroupOf(message);
      if (group !== undefined) latestInGroup.set(group, reservation.at);
    };
    joined(first);
    let bytes = eventBytes(first.event);
    for (let i = 1; ; i++) {
      const next = this.intake.peek(i);
      const parsed = next?.kind === 'received' ? parseJob(next.message, config.units) : undefined;
      if (next === undefined || parsed === undefined || !parsed.ok) return batch;
      const { job } = parsed;
      const after = latestInGroup.get(fifoGroupOf(next.message) ?? '');
      const windowFrom = after === undefined ? first.reservation.at : after + this.pacer.chainGap.ms;
      const earliest = now + this.pacer.lead.typicalMs;
      const slot = this.slotFor(after === undefined ? earliest : Math.max(earliest, windowFrom), job.costs);
      const units = config.quotas.map((tier) => unitsFor(tier, job.costs));
      const allowed = this.ledger.allowed(slot, units);
      const covered =
        next.receivedAt + this.run.settings.visibilityTimeoutMs - slot >= this.run.settings.workerTimeoutMs;
      const inWindow =
        slot < windowFrom + windowMs && slot - now <= BATCH_REACH_OF_WORKER_TIMEOUT * this.run.settings.workerTimeoutMs;
      if (
        !inWindow ||
        !covered ||
        !allowed.every(Boolean) ||
        !this.pools.ready(slot, job.costs, now) ||
        !this.ledger.mayDispatch(slot, allowed) ||
        !this.slotFree(now) ||
        !this.ledger.slotAllowed(slot, 1)
      )
        return batch;
      bytes += eventBytes(
        jobEventOf(config.lane, next.message, job, first.event.dispatchId, first.reservation, slot, now),
      );
      if (bytes > MAX_BATCH_EVENT_BYTES) return batch;
      const reserved = this.reserve(
        next,
        job,
        units,
        slot,
        now,
        batchJobDispatchId(first.event.dispatchId, batch.length),
        after !== undefined,
      );
      if (after !== undefined) this.pacer.chainGap.dispatched();
      joined(reserved);
      batch.push(reserved);
    }
  }

  /**
   * Invokes a worker at `now` with `batch` (one job event, or a batch event of several). A failed invoke keeps the
   * messages at the head of the buffer and backs off: a throttled or refused one gives their quota back; one that
   * failed but may have started (a 5xx, a timeout: `InvokeFailedError.mayHaveStarted`) keeps it. An event Lambda
   * refuses for itself ({@link InvokeRejectedError}, e.g. over the async payload limit) is dead-lettered with that
   * reason when it held one job, and its head tried alone otherwise. `sent` is told once the invoke was accepted.
   */
  private async invoke(batch: readonly Reserved[], now: number, sent?: () => void): Promise<void> {
    const { config, clock } = this.run;
    const { invoker } = this.ports;
    const refund = () => {
      // Nothing started: the quota flows back.
      for (const { reservation, units, event } of batch) {
        this.pacer.settle({ reservation, actual: null, id: event.dispatchId }, clock.now());
        this.ledger.giveBack(units);
        this.pools.giveBack(reservation);
      }
    };
    const [first] = batch;
    if (first === undefined) return;
    try {
      await invoker.invoke(
        batch.length === 1
          ? first.event
          : { kind: 'batch', lane: config.lane, jobs: batch.map((r) => r.event), sentAt: now },
      );
    } catch (error) {
      if (error instanceof InvokeRejectedError) {
        refund();
        if (batch.length > 1) {
          this.aloneNext = true;
          return;
        }
        this.intake.refuseHead(error.message);
        return this.intake.deadLetterHead(error.message, first.event.attempt);
      }
      if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError)) throw error;
      // The messages stay at the head, and we back off. An invoke that may have started keeps its quota: its worker
      // may be calling the API, and the next dispatch of the messages then finds their idempotency records.
      if (!(error instanceof InvokeFailedError && error.mayHaveStarted)) refund();
      this.run.tally.invokeFailures++;
      this.run.report({ type: 'invoke-failed', at: now, error: error.message });
      await this.run.sleepUntil(clock.now() + this.invokeRetry.next());
      return;
    }
    this.invokeRetry.reset();
    this.aloneNext = false;
    this.lastInvokeAt = now;
    sent?.();
    for (const { message, receivedAt, costs, event } of batch) {
      this.intake.shift();
      this.run.tally.dispatched++;
      const { dispatchId, idempotencyKey } = event;
      this.run.report({
        type: 'dispatched',
        at: now,
        messageId: message.messageId,
        dispatchId,
        idempotencyKey,
        queue: message.queue,
        costs,
        waitedMs: Math.max(0, now - receivedAt),
      });
    }
    await this.intake.handBackGroupsOf(batch.map(({ message }) => message));
  }
}

/** Why a message of `costs` can never go: the first tier whose limit its estimate exceeds, e.g. `cost 11 exceeds the limit 10 per minute …`. */
function neverFits(tiers: readonly Tier[], costs: Costs): string {
  const tier = tiers.find((t) => unitsFor(t, costs) > t.limit);
  return `${tier?.unit} ${tier === undefined ? '' : unitsFor(tier, costs)} exceeds the limit ${tier?.limit} per ${tier?.per} of a quota tier, so it can never be sent`;
}

/** A job reserved at its slot, and the event that dispatches it. */
interface Reserved {
  readonly message: ReceivedMessage;
  /** When this run received the message. */
  readonly receivedAt: number;
  readonly costs: Costs;
  /** Units reserved per tier. */
  readonly units: readonly number[];
  readonly reservation: Reservation;
  readonly event: JobEvent;
}

/**
 * The most a batch event may weigh: Lambda's limit on an asynchronous invocation's payload (256 KB), less room for
 * the batch's own fields. A single job's event is sent whatever its size, and dead-lettered if Lambda refuses it.
 */
const MAX_BATCH_EVENT_BYTES = 250_000;

/** The size of `event` as Lambda counts it: its JSON text in UTF-8. */
function eventBytes(event: JobEvent): number {
  return Buffer.byteLength(JSON.stringify(event), 'utf8');
}
