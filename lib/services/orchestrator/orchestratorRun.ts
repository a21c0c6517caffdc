import type { Circuit } from '../../domain/breaker/state';
import { LeaseLostError } from '../../errors';
import type { Lease } from '../../ports/LeaseStore';
import { CircuitWatch } from './circuitWatch';
import { Dispatcher } from './dispatcher';
import { Intake } from './intake';
import { LedgerSync } from './ledgerSync';
import { QuotaGate } from './quotaGate';
import type { RunContext } from './runContext';
import { StateLink } from './stateLink';
import { LanePools } from './lanePools';
import type { RunPorts, RunQuota, RunSummary } from './types';

/**
 * The loop of a run that holds the lease, its ledger and its circuit read (step 3 of the architecture, then step 4).
 * Until the deadline it reads the circuit before a dispatch when its last read answered more than `circuitPollMs`
 * ago (a worker's change, an open circuit or a 429 pause, reaches dispatch within that), and every `circuitPollMs`
 * while it holds work back, sending only health checks while it is not closed (a check that is a job's trial is the
 * one job it sends then, alone: see `CircuitWatch.jobTrial`), and nothing while an operator holds the lane (see
 * `pauseLane`: the buffered messages go back to their queues, the lease is kept and flushed);
 * otherwise it receives requeue ▸ fifo ▸ main, waits for each pacing slot and invokes a worker. It flushes the ledger
 * every `flushIntervalMs` and at exit, and releases the lease.
 *
 * Each step syncs the state, then either waits on a circuit that holds work back (sending the health checks that are
 * due), or waits while the quota gate is shut (nothing received could be sent while it is held: what is buffered goes
 * back), or takes the intake's head one step on. It stops at the deadline, when `shouldStop` says so, or once it has
 * had nothing to do for `idleStopMs` (every queue empty, the circuit and the quota letting work through): the next
 * tick starts the next run. It never dispatches without the lease: a flush that finds the lease lost ends the run at
 * once.
 */
export class OrchestratorRun {
  private readonly link: StateLink;
  private readonly ledger: LedgerSync;
  private readonly circuit: CircuitWatch;
  private readonly intake: Intake;
  private readonly dispatcher: Dispatcher;
  private readonly gate: QuotaGate;
  /** Since when the run has had nothing to do: every queue empty, with the circuit and the quota letting work through. */
  private idleSince: number | undefined;
  /** Set once the run has had nothing to do for `idleStopMs`, and no queue holds a message in flight or delayed. */
  private idleDone = false;

  /**
   * Each room gets the ports it uses, of `ports`; `lease`, `quota` and `circuit` are what the run started from, `pools`
   * the pools the lane draws from.
   */
  constructor(
    private readonly run: RunContext,
    ports: RunPorts,
    lease: Lease,
    quota: RunQuota,
    circuit: Circuit,
    private readonly pools: LanePools = LanePools.NONE,
  ) {
    const { stores, queues, invoker, newId, random } = ports;
    const { pacer, slots } = quota;
    this.link = new StateLink(run);
    this.ledger = new LedgerSync(
      run,
      this.link,
      { lease: stores.lease, ledger: stores.ledger, limits: stores.limits },
      quota,
      lease,
    );
    this.circuit = new CircuitWatch(
      run,
      this.link,
      { stores: { circuit: stores.circuit }, invoker, newId, random },
      pacer,
      circuit,
    );
    this.gate = new QuotaGate(run, pacer, pools);
    // On a lane with maxInFlight, a refill takes no more than the free slots and one more round of them: a message
    // received waits at most about one call for its slot, well within its visibility. A job's trial takes one: the
    // circuit is open, and each message received counts a receive.
    this.intake = new Intake(
      run,
      queues,
      () => this.ledger.nextStoreCallAt(),
      (now) =>
        this.circuit.jobTrial(now) !== undefined
          ? 1
          : Math.min(this.gate.room(now), slots === undefined ? Number.POSITIVE_INFINITY : slots.cap + slots.free(now)),
    );
    this.dispatcher = new Dispatcher(
      run,
      { invoker, newId },
      this.intake,
      this.ledger,
      this.link,
      pacer,
      this.gate,
      (now) => this.readCircuitIfDue(now),
      pools,
    );
  }

  /**
   * Runs until the deadline, then hands the buffer back, makes the final flush and releases the lease.
   * @throws StateFormatError, and any error that is no store, queue or invoke failure (see `runOrchestrator`).
   */
  async execute(): Promise<RunSummary> {
    try {
      this.circuit.startRamps();
      await this.ledger.tryFlush();
      while (!this.stopping()) await this.step();
      await this.intake.release();
      // A ledger that could not be saved keeps the lease until it expires: a successor cannot miss what it holds.
      if (await this.ledger.tryFlush({ final: true })) await this.link.attempt(() => this.ledger.releaseLease());
      return { lease: 'acquired', ...this.run.tally };
    } catch (error) {
      if (error instanceof LeaseLostError) return { lease: 'lost', ...this.run.tally };
      throw error;
    }
  }

  /** At the deadline, when `shouldStop` says so, or once the run has had nothing to do (see {@link OrchestratorRun.step}). */
  private stopping(): boolean {
    const { clock, options } = this.run;
    return clock.now() >= options.deadline || (options.shouldStop?.() ?? false) || this.idleDone;
  }

  private async step(): Promise<void> {
    const { clock } = this.run;
    await this.syncState(clock.now());
    const now = clock.now();
    const lettingThrough = this.circuit.letsThrough(now);
    // A new 429 pause: what the API's answers said of its limits is folded in at once rather than at the next flush,
    // so that dispatch resumes at the limit the API announced with the 429, not at the one it just refused.
    if (this.circuit.takeNewPause()) await this.ledger.learnNow(clock.now());
    if (!lettingThrough) {
      this.idleSince = undefined;
      this.pools.withdraw();
      // An operator's hold may last long: what is buffered goes back now, as when the quota gate shuts.
      if (this.circuit.held) await this.intake.release();
      // A health check starts with a circuit write: it waits for the store to come back.
      const due = this.link.side.kind === 'in-sync' ? await this.circuit.sendHealthCheckIfDue(now) : undefined;
      if (await this.stepTrial(clock.now())) return;
      await this.run.sleepUntil(Math.min(due ?? Number.POSITIVE_INFINITY, now + this.run.settings.circuitPollMs));
      return;
    }
    const shutUntil = this.gate.shutUntil(now);
    if (shutUntil !== undefined) {
      this.idleSince = undefined;
      this.pools.withdraw();
      // Nothing buffered could be sent while it is held: it goes back now rather than at the run's end.
      await this.intake.release();
      await this.run.sleepUntil(Math.min(shutUntil, this.ledger.nextStoreCallAt()));
      return;
    }
    const next = await this.intake.next();
    this.idleSince = next === undefined && this.intake.empty ? (this.idleSince ?? now) : undefined;
    if (this.idleSince !== undefined && clock.now() - this.idleSince >= this.run.settings.idleStopMs) {
      // Nothing received for `idleStopMs`: the run ends, unless a queue still holds messages in flight or delayed (a
      // worker's retry, a job given back), which the next tick would leave waiting; then it looks again after
      // another `idleStopMs`.
      if (await this.intake.allDone()) this.idleDone = true;
      else this.idleSince = undefined;
    }
    if (next === undefined) return this.pools.withdraw();
    await this.dispatcher.handle(next);
  }

  /**
   * Takes the intake's head one step on as the job of the circuit's trial, when one is to be sent (see
   * `CircuitWatch.jobTrial`). @returns false when none is, or the queues had no message for it.
   */
  private async stepTrial(now: number): Promise<boolean> {
    const checkId = this.circuit.jobTrial(now);
    if (checkId === undefined) return false;
    const head = await this.intake.next();
    if (head === undefined) return false;
    await this.dispatcher.handle(head, { checkId, sent: () => this.circuit.trialDispatched(checkId) });
    return true;
  }

  /**
   * Brings the run's view of the store up to date: flushes each pool that is due (see `LanePools.flushIfDue`: a pool's
   * store stands apart from the lane's), then flushes the lane when due (on schedule, and in any case before the lease
   * could expire), then, while the circuit holds work back, reads it every `circuitPollMs`. While it lets work
   * through, the dispatcher has it read only before a dispatch, when the last read answered longer ago than that (see
   * {@link OrchestratorRun.readCircuitIfDue}): a run that waits for its quota or for call slots to free makes no read
   * it does not use (four a second, on a lane whose calls take seconds). During an outage it waits for the back-off,
   * then retries a failed flush (or a due one) and reads the circuit, and the outage ends once both succeed.
   */
  private async syncState(now: number): Promise<void> {
    await this.pools.flushIfDue(now);
    if (this.link.waiting(now)) return;
    if (this.ledger.flushDue(now) && !(await this.ledger.tryFlush())) return;
    if (this.link.side.kind === 'in-sync' && (this.circuit.lettingThrough || !this.circuit.readDue(now))) return;
    if (await this.circuit.read()) this.link.recovered();
  }

  /**
   * Reads the circuit before a dispatch at `now` when its last read answered `circuitPollMs` ago or more (see
   * {@link CircuitWatch.staleForDispatch}), so that a worker's change (an opened circuit, a 429 pause, an operator's
   * hold) reaches dispatch within that. During a state outage the state sync reads it at each retry (see
   * {@link OrchestratorRun.syncState}), and dispatch goes on the last read meanwhile.
   * @returns true when it read: the head is looked at again, in the light of what the read found and at the time it
   * answered (its slot and lead taken afresh).
   */
  private async readCircuitIfDue(now: number): Promise<boolean> {
    if (this.link.side.kind !== 'in-sync' || !this.circuit.staleForDispatch(now)) return false;
    await this.circuit.read();
    return true;
  }
}
