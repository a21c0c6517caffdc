import { isDispatchAllowed } from '../../domain/breaker/circuit';
import { loadCircuit } from '../circuitUpdates';
import type { WorkerDeps } from './types';

/**
 * How long a reading of the circuit by a batch's checks stands in for the read that ends a run of refusals (see
 * `endRefusalRun`): as long as the eventually consistent read it spares may lag.
 */
const REFUSAL_RUN_READING_MS = 1_000;

/**
 * A worker event's view of the circuit. {@link CircuitView.allows} tells whether its jobs may still call: the circuit
 * closed and the lane paused neither by an operator nor by a 429, as read no longer than `circuitPollMs` ago (the orchestrator's reading when
 * it sent the event counts as the first). The lead grows to 1.5 s while workers start late, and a batch spans as long:
 * without this, jobs would go on calling a failing API after the circuit opened. So no job calls more than
 * `circuitPollMs` (and a read's time) after the circuit opened, as none is dispatched; at the configured lead a job
 * alone needs no read. The jobs of a batch share one read at a time. A read still unanswered at the slot, or one that
 * failed, leaves the last reading in force: the check never makes a call late, and a DynamoDB error does not stop the
 * work.
 */
export class CircuitView {
  private knownAt: number;
  private allowsNow = true;
  /** Whether a job of the event learned that the lane may not call now (see {@link CircuitView.stop}). */
  private stopped = false;
  private reading: Promise<void> | undefined;
  /** The run of 4xx refusals the last read found, and when it was read. */
  private refusals: { readonly run: number; readonly at: number } | undefined;

  constructor(
    sentAt: number,
    private readonly lane: string,
    private readonly deps: WorkerDeps,
  ) {
    this.knownAt = Number.isFinite(sentAt) ? sentAt : Number.NEGATIVE_INFINITY;
  }

  /** Whether a job whose slot is `slotAt` may still call (see {@link CircuitView}). */
  readonly allows = async (slotAt: number): Promise<boolean> => {
    const { clock, stores, config } = this.deps;
    if (this.stopped) return false;
    const readAt = clock.now();
    if (!this.allowsNow || readAt - this.knownAt <= config.orchestrator.circuitPollMs) return this.allowsNow;
    this.reading ??= loadCircuit(stores.circuit, this.lane)
      .then((circuit) => {
        this.knownAt = readAt;
        this.allowsNow = isDispatchAllowed(circuit) && circuit.pausedUntil <= clock.now();
        this.refusals = { run: circuit.clientErrorRun, at: readAt };
      })
      .catch(() => undefined)
      .finally(() => {
        this.reading = undefined;
      });
    await Promise.race([this.reading, clock.sleep(Math.max(0, slotAt - readAt))]);
    return this.allowsNow && !this.stopped;
  };

  /**
   * Tells the view that a job's call learned that the lane may not call now (a 429, or a circuit that opened on its
   * report): every later check says no, whatever a read in flight then finds. The jobs held back go back to their
   * queues, and the orchestrator dispatches them again once the pause or the outage is over.
   */
  readonly stop = (): void => {
    this.stopped = true;
  };

  /** The run of 4xx refusals as read less than {@link REFUSAL_RUN_READING_MS} before `now`, if a check read it. */
  refusalRunAt(now: number): number | undefined {
    return this.refusals !== undefined && now - this.refusals.at < REFUSAL_RUN_READING_MS
      ? this.refusals.run
      : undefined;
  }
}
