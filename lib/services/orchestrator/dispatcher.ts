import type { Hold, Pacer } from '../../domain/pacing/pacer';
import { unitsFor } from '../../domain/quota/tiers';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError } from '../../errors';
import type { ReceivedMessage } from '../../ports/QueueReceiver';
import { Backoff } from '../guardedPorts';
import { jobEventOf, parseJob, type ParsedJob } from '../parseJob';
import type { Buffered, Intake } from './intake';
import type { LedgerSync } from './ledgerSync';
import { holdLabel, type QuotaGate } from './quotaGate';
import type { RunContext } from './runContext';
import type { StateLink } from './stateLink';

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

  constructor(
    private readonly run: RunContext,
    private readonly intake: Intake,
    private readonly ledger: LedgerSync,
    private readonly link: StateLink,
    private readonly pacer: Pacer,
    private readonly gate: QuotaGate,
  ) {
    this.invokeRetry = new Backoff(run.settings.invokeBackoffMs);
  }

  /** One step on the head message `head`: it may be dispatched, dead-lettered, dropped, hidden, or waited for. */
  async handle(head: Buffered): Promise<void> {
    const { message, receivedAt } = head;
    const { config } = this.run.deps;
    const now = this.run.deps.clock.now();
    const parsed = parseJob(message);
    if (!parsed.ok) return this.intake.deadLetterHead(parsed.reason, 1);
    const { job } = parsed;
    if (head.kind === 'refused') return this.intake.deadLetterHead(head.reason, job.attempt);
    // The earliest slot a worker invoked now can make: one that is already due would be reached late (a warm start
    // takes tens of ms) and given back, so a run behind its schedule reserves the configured lead ahead. The lead
    // that grew for late starts only dispatches earlier: a slot it leaves behind would be lost, a hole in the schedule.
    const slot = this.pacer.nextSlot(now + config.pacing.dispatchLeadMs, job.cost);
    if (!Number.isFinite(slot)) {
      const tier = config.quotas.find((t) => unitsFor(t, job.cost) > t.limit);
      return this.intake.deadLetterHead(`cost ${job.cost} exceeds the limit ${tier?.limit} per ${tier?.per} of a quota tier, so it can never be sent`, job.attempt);
    }
    const hold = slot > now ? this.pacer.blockedUntil(now, job.cost) : undefined;
    if (hold !== undefined && hold.until > this.gate.sendBy(receivedAt)) return this.holdBack(head, job, hold, now);
    const dispatchAt = slot - this.pacer.lead.ms;
    if (dispatchAt > now) return this.run.sleepUntil(Math.min(dispatchAt, this.ledger.nextStoreCallAt()));
    if (receivedAt + this.run.settings.visibilityTimeoutMs - slot < this.run.settings.workerTimeoutMs) {
      this.intake.shift(); // its visibility no longer covers a worker's run from its slot: leave it to reappear
      return;
    }
    // Judged at the slot, the instant the call is counted at: the allowance and the lease must cover it.
    const units = config.quotas.map((tier) => unitsFor(tier, job.cost));
    const allowed = this.ledger.allowed(slot, units);
    const side = this.link.side;
    if (side.kind === 'in-sync' && !allowed.every(Boolean)) {
      await this.ledger.tryFlush({ need: units }); // persist a larger allowance before using it
      return;
    }
    if (!this.ledger.mayDispatch(slot, allowed)) {
      // Held by the outage or an expired lease: wait for the next try of the store (or the flush that renews).
      if (side.kind === 'outage') await this.run.sleepUntil(side.retryAt);
      return;
    }
    await this.invoke(message, job, units, now, slot);
  }

  /**
   * Hides the head, which `hold` keeps from being sent while it is held (its cost may need more than the one unit
   * the receive gate asked for), until its slot: holding it to the end of the run would cost it a receive per run.
   */
  private async holdBack({ message, receivedAt }: Buffered, job: ParsedJob, hold: Hold, now: number): Promise<void> {
    await this.intake.hideHead(this.gate.hideMs(receivedAt, hold.until, now));
    this.run.report({ type: 'message-held', at: now, messageId: message.messageId, queue: message.queue, cost: job.cost, tier: holdLabel(hold), until: hold.until });
  }

  /**
   * Reserves the quota of `job` (`units` per tier) at its `slot` and invokes its worker at `now`. A throttled or
   * failed invoke keeps the message at the head and backs off; one Lambda refuses for the event itself dead-letters it.
   */
  private async invoke(message: ReceivedMessage, job: ParsedJob, units: readonly number[], now: number, slot: number): Promise<void> {
    const { pacing } = this.run.deps.config;
    // Counted before the invoke: a run killed while invoking may have dispatched, and the saved ledger must hold it.
    this.ledger.use(units);
    const reservation = this.pacer.dispatch(slot, job.cost);
    const refund = () => {
      // Nothing started: the quota flows back.
      this.pacer.settle({ reservation, actualCost: null }, this.run.deps.clock.now());
      this.ledger.giveBack(units);
    };
    try {
      const callBy = slot + pacing.arrivalMarginMs - pacing.callAllowanceMs;
      await this.run.deps.invoker.invoke(jobEventOf(this.run.deps.config.lane, message, job, this.run.deps.newId(), reservation, callBy, now));
    } catch (error) {
      if (error instanceof InvokeRejectedError) {
        refund();
        this.intake.refuseHead(error.message);
        return this.intake.deadLetterHead(error.message, job.attempt);
      }
      if (!(error instanceof InvokeThrottledError || error instanceof InvokeFailedError)) throw error;
      // The message stays at the head, and we back off. An invoke that may have started keeps its quota: its worker
      // may be calling the API, and the next dispatch of the message then finds its idempotency record.
      if (!(error instanceof InvokeFailedError && error.mayHaveStarted)) refund();
      this.run.tally.invokeFailures++;
      this.run.report({ type: 'invoke-failed', at: now, error: error.message });
      await this.run.sleepUntil(this.run.deps.clock.now() + this.invokeRetry.next());
      return;
    }
    this.invokeRetry.reset();
    this.intake.shift();
    this.run.tally.dispatched++;
    this.run.report({ type: 'dispatched', at: now, messageId: message.messageId, queue: message.queue, cost: job.cost });
  }
}
