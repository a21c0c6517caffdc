import { healthCheckDueAt, isDispatchAllowed, isHeld } from '../../domain/breaker/circuit';
import type { Circuit } from '../../domain/breaker/state';
import { circuitPolicyFrom, type CircuitPolicy } from '../../domain/breaker/policy';
import type { Pacer } from '../../domain/pacing/pacer';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError } from '../../errors';
import { applyCircuitEvent, loadCircuit, type CircuitUpdate, type OnCircuitTransition } from '../circuitUpdates';
import type { RunContext } from './runContext';
import type { StateLink } from './stateLink';
import type { GuardedStores, RunPorts } from './types';

/** The ports a circuit watch uses: the circuit store, the invoker and ids for health checks, jitter for pauses. */
export type CircuitWatchPorts = Pick<RunPorts, 'invoker' | 'newId' | 'random'> & {
  readonly stores: Pick<GuardedStores, 'circuit'>;
};

/** Whether the circuit as last read lets work through; dispatch starts a slow-start ramp on the way from `holding`. */
type DispatchGate = 'holding' | 'letting-through';

/**
 * The run's view of the circuit: reads it, hands its 429 pauses and slow-start ramps to the pacer, tells whether it
 * lets work through (closed, and not held by an operator), and sends the half-open health checks when they are due
 * (never while held). A check that is a job's trial (see `Trial`) is no health-check event: the run sends one job
 * alone as it (see {@link CircuitWatch.jobTrial}). A resume after a hold, like a close, restarts dispatch through
 * the slow start.
 */
export class CircuitWatch {
  private gate: DispatchGate;
  private lastSeenPause = 0;
  /** Whether {@link CircuitWatch.letsThrough} applied a 429 pause not yet told (see {@link CircuitWatch.takeNewPause}). */
  private newPause = false;
  /** When the circuit was last read (the rehydration counts). */
  private readAt: number;
  /** When the last read answered (see {@link CircuitWatch.staleForDispatch}). */
  private answeredAt: number;
  /** When the circuit opens and when it probes: built once from `config.circuit`, given to every circuit call. */
  private readonly policy: CircuitPolicy;
  /** The check whose job this run sent as its trial, so that it sends one job per check. */
  private trialSent: string | undefined;

  constructor(
    private readonly run: RunContext,
    private readonly link: StateLink,
    private readonly ports: CircuitWatchPorts,
    private readonly pacer: Pacer,
    /** The circuit as last read; kept while reads fail. */
    private circuit: Circuit,
  ) {
    this.gate = isDispatchAllowed(circuit) ? 'letting-through' : 'holding';
    this.policy = circuitPolicyFrom(run.config.circuit);
    this.readAt = run.clock.now();
    this.answeredAt = this.readAt;
    run.report({ type: 'circuit-seen', at: this.readAt, status: circuit.state.status });
  }

  /** Whether the circuit is due to be read again at `now`: `circuitPollMs` after the last read. */
  readDue(now: number): boolean {
    return now >= this.readAt + this.run.settings.circuitPollMs;
  }

  /**
   * Whether the circuit is to be read again before a dispatch at `now`: its last read answered `circuitPollMs` ago or
   * more. Counted from the answer, not from the request: a dispatch goes on a read however long it took to answer, and
   * one that read again whenever the last read had been sent that long ago would never dispatch while the table takes
   * `circuitPollMs` to answer.
   */
  staleForDispatch(now: number): boolean {
    return now >= this.answeredAt + this.run.settings.circuitPollMs;
  }

  /**
   * Slow start only after a recent close of the circuit (docs/circuit-breaker.md), carried over from the run that saw it
   * close. A start from idle goes at the full rate at once: the quota allows it, and full use is the point.
   */
  startRamps(): void {
    const now = this.run.clock.now();
    const { state } = this.circuit;
    if (
      state.status === 'closed' &&
      state.closedAt !== null &&
      now - state.closedAt < this.run.config.pacing.rampSeconds * 1000
    ) {
      this.pacer.startRamp(state.closedAt);
    }
  }

  /** Reads the circuit under {@link StateLink.attempt}; false when the store failed (the last one read stands). */
  async read(): Promise<boolean> {
    const startedAt = this.run.clock.now();
    const read = await this.link.attempt(() => loadCircuit(this.ports.stores.circuit, this.run.config.lane));
    if (read === undefined) return false;
    this.seen(read.value, startedAt);
    this.readAt = startedAt;
    this.answeredAt = this.run.clock.now();
    return true;
  }

  /** Takes `circuit` as the one last read at `at`, and reports its status if it differs from the one before. */
  private seen(circuit: Circuit, at: number): void {
    const status = circuit.state.status;
    const previous = this.circuit.state.status;
    if (status !== previous) this.run.report({ type: 'circuit-seen', at, status, previous });
    this.circuit = circuit;
  }

  /** Whether dispatch let work through when the circuit was last asked (see {@link CircuitWatch.letsThrough}). */
  get lettingThrough(): boolean {
    return this.gate === 'letting-through';
  }

  /** Whether an operator held the lane in the circuit as last read: nothing goes, no job and no health check. */
  get held(): boolean {
    return isHeld(this.circuit);
  }

  /**
   * Whether the circuit as last read lets work through at `now`. Applies a new 429 pause to the pacer first, and
   * starts the slow-start ramp when the circuit starts to let work through again.
   */
  letsThrough(now: number): boolean {
    const { circuit } = this;
    if (circuit.pausedUntil > this.lastSeenPause) {
      this.lastSeenPause = circuit.pausedUntil;
      this.newPause = true;
      this.pacer.pause(circuit.pausedUntil, this.ports.random);
    }
    if (!isDispatchAllowed(circuit)) {
      this.gate = 'holding';
      return false;
    }
    if (this.gate === 'holding') {
      this.gate = 'letting-through';
      this.pacer.startRamp(now);
    }
    return true;
  }

  /** Whether {@link CircuitWatch.letsThrough} applied a new 429 pause since this was last asked: true once a pause. */
  takeNewPause(): boolean {
    const seen = this.newPause;
    this.newPause = false;
    return seen;
  }

  /**
   * The check of the circuit as last read whose job this run is to send now, alone, as its trial: the circuit is
   * half-open with a job's trial that no worker has claimed, that has not timed out, and that this run has not sent
   * (see {@link CircuitWatch.trialDispatched}); never while held. `undefined` otherwise. A job of the same check that
   * another run sent as well cannot call too: only one worker's claim of the check is written.
   */
  jobTrial(now: number): string | undefined {
    const { state } = this.circuit;
    if (state.status !== 'half-open' || state.trial !== 'job' || this.held) return undefined;
    if (state.probeStartedAt !== null || state.checkId === this.trialSent) return undefined;
    return now < this.policy.probe.checkTimeoutAt(state) ? state.checkId : undefined;
  }

  /** Tells the watch that a worker was invoked with the job of check `checkId` (see {@link CircuitWatch.jobTrial}). */
  trialDispatched(checkId: string): void {
    this.trialSent = checkId;
  }

  /**
   * Sends the half-open trial when it is due and this orchestrator wins the conditional write: a health-check event,
   * or, for a job's trial, nothing yet (see {@link CircuitWatch.jobTrial}). Returns when the next one is due; after a
   * failed circuit write (the outage policy takes over), `undefined`.
   */
  async sendHealthCheckIfDue(now: number): Promise<number | undefined> {
    const { config } = this.run;
    const { stores } = this.ports;
    const due = healthCheckDueAt(this.circuit, this.policy.probe);
    if (due === undefined || due > now) return due;
    const checkId = this.ports.newId();
    const reportTransition: OnCircuitTransition = (transition) =>
      this.run.report({ type: 'circuit-transition', ...transition });
    const update = await this.link.attempt<CircuitUpdate>(() =>
      applyCircuitEvent(
        stores.circuit,
        config.lane,
        { type: 'health-check-sent', checkId },
        now,
        this.policy,
        reportTransition,
      ),
    );
    if (update === undefined) return undefined;
    const { after, written } = update.value;
    this.seen(after, now);
    const { state } = after;
    if (written && state.status === 'half-open' && state.checkId === checkId && state.trial !== 'job')
      await this.invokeCheck(checkId, now);
    return healthCheckDueAt(after, this.policy.probe);
  }

  /** Invokes a worker with health check `checkId`, sent at `now`. */
  private async invokeCheck(checkId: string, now: number): Promise<void> {
    try {
      await this.ports.invoker.invoke({ kind: 'health-check', lane: this.run.config.lane, checkId, sentAt: now });
      this.run.tally.healthChecks++;
      this.run.report({ type: 'health-check-sent', at: now, checkId });
    } catch (error) {
      // The check never started; the circuit lets another go once this one times out.
      if (!(
        error instanceof InvokeThrottledError ||
        error instanceof InvokeFailedError ||
        error instanceof InvokeRejectedError
      ))
        throw error;
      this.run.tally.invokeFailures++;
      this.run.report({ type: 'invoke-failed', at: now, error: error.message });
    }
  }
}
