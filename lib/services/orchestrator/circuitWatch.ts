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
 * (never while held). A resume after a hold, like a close, restarts dispatch through the slow start.
 */
export class CircuitWatch {
  private gate: DispatchGate;
  private lastSeenPause = 0;
  /** When the circuit was last read (the rehydration counts). */
  private readAt: number;
  /** When the circuit opens and when it probes: built once from `config.circuit`, given to every circuit call. */
  private readonly policy: CircuitPolicy;

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
    run.report({ type: 'circuit-seen', at: this.readAt, status: circuit.state.status });
  }

  /** Whether the circuit is due to be read again at `now`: `circuitPollMs` after the last read. */
  readDue(now: number): boolean {
    return now >= this.readAt + this.run.settings.circuitPollMs;
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
    return true;
  }

  /** Takes `circuit` as the one last read at `at`, and reports its status if it differs from the one before. */
  private seen(circuit: Circuit, at: number): void {
    const status = circuit.state.status;
    const previous = this.circuit.state.status;
    if (status !== previous) this.run.report({ type: 'circuit-seen', at, status, previous });
    this.circuit = circuit;
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

  /**
   * Sends the half-open trial when it is due and this orchestrator wins the conditional write. Returns when the next
   * one is due; after a failed circuit write (the outage policy takes over), `undefined`.
   */
  async sendHealthCheckIfDue(now: number): Promise<number | undefined> {
    const { config } = this.run;
    const { stores, invoker } = this.ports;
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
    if (written && after.state.status === 'half-open' && after.state.checkId === checkId) {
      try {
        await invoker.invoke({ kind: 'health-check', lane: config.lane, checkId, sentAt: now });
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
    return healthCheckDueAt(after, this.policy.probe);
  }
}
