import { isDispatchAllowed } from '../../domain/breaker/circuit';
import type { Circuit } from '../../domain/breaker/state';
import type { JobEvent } from '../../ports/Invoker';
import { loadCircuit } from '../circuitUpdates';
import { CircuitReadTimes } from './circuitReadTimes';
import type { CircuitCheck, WorkerDeps } from './types';

/** A read of the circuit: when it was sent, and the circuit it found (`undefined` if it failed). */
interface Reading {
  readonly sentAt: number;
  readonly circuit: Promise<Circuit | undefined>;
}

/**
 * A worker event's view of the circuit. {@link CircuitView.allows} tells whether a job may call at its slot: the
 * circuit closed, and the lane paused neither by an operator nor by a 429, as a strongly consistent read sent shortly
 * before the slot finds it: 50 ms, or as long as the container's recent reads took (see {@link CircuitReadTimes}). So a
 * 429's pause, once another worker has written it, binds every call that has not left yet, and so does an opened
 * circuit: not only the jobs dispatched after the orchestrator's next read, but those dispatched before it with later
 * slots (the lead grows to 1.5 s while workers start late, and a batch spans as long). Only the pause written in the
 * moments between a read and its call is missed.
 *
 * One read unit a call (the circuit item stays within 4 KB): the jobs of a batch share a read only when their slots
 * are as close, and the read's `clientErrorRun` spares the read a success makes to end a run of refusals (see
 * {@link CircuitView.refusalRun}). A job whose read failed does not call: it gives its job back, as one the circuit
 * holds back does, and the orchestrator dispatches it again. A read that answers after the job's `callBy` leaves the
 * job ready too late, given back with how late it was (see `processJob`), so that the dispatch lead grows, and the
 * container's next reads go earlier. Calling on the reading the orchestrator made when it sent the event would let a
 * call go seconds into a pause another worker had written (a worker that started late, its read then racing its
 * `callBy`); the worker has just claimed the job's key in the same table, so a read that fails is rare, and costs a
 * dispatch, never a call.
 */
export class CircuitView implements CircuitCheck {
  /** Whether every reading so far let calls go (a reading that did not stays in force for the event's later jobs). */
  private allowsNow = true;
  /** Whether a job of the event learned that the lane may not call now (see {@link CircuitView.stop}). */
  private stopped = false;
  private reading: Reading | undefined;
  /** The run of 4xx refusals the last read found. */
  private refusals: number | undefined;

  /** The container's read times (see {@link CircuitReadTimes}): `deps.circuitReads`, else the event's own. */
  private readonly times: CircuitReadTimes;

  constructor(
    private readonly lane: string,
    private readonly deps: WorkerDeps,
  ) {
    this.times = deps.circuitReads ?? new CircuitReadTimes();
  }

  /** How long before a job's slot its read of the circuit is sent. */
  aheadMs(): number {
    return this.times.aheadMs();
  }

  /** Told that another request to the state table took `ms` (see {@link CircuitReadTimes.record}). */
  tableRequestTook(ms: number): void {
    this.times.record(ms);
  }

  /**
   * Whether a job whose slot is `slotAt` may still call (see {@link CircuitView}), once the read answers: the caller
   * checks the job's `callBy` after it.
   */
  async allows({ slotAt }: Pick<JobEvent, 'slotAt'>): Promise<boolean> {
    const { clock } = this.deps;
    if (this.stopped || !this.allowsNow) return false;
    const now = clock.now();
    // A reading serves a later job of the batch only if it was sent at most the read's lead before that job's call
    // leaves: at its slot, or now when the job runs after its slot (a FIFO job that waited for the one before).
    if (this.reading === undefined || this.reading.sentAt < Math.max(slotAt, now) - this.aheadMs())
      this.reading = { sentAt: now, circuit: this.read() };
    const circuit = await this.reading.circuit;
    if (circuit === undefined) return false;
    this.allowsNow &&= isDispatchAllowed(circuit) && circuit.pausedUntil <= Math.max(slotAt, clock.now());
    return this.allowsNow && !this.stopped;
  }

  /**
   * Tells the view that a job's call learned that the lane may not call now (a 429, or a circuit that opened on its
   * report): every later check says no, whatever a read in flight then finds. The jobs held back go back to their
   * queues, and the orchestrator dispatches them again once the pause or the outage is over.
   */
  stop(): void {
    this.stopped = true;
  }

  /** The run of 4xx refusals as the last read before a call found it, if a check read the circuit. */
  refusalRun(): number | undefined {
    return this.refusals;
  }

  /** Reads the circuit, noting its run of refusals; `undefined` when the read failed. */
  private async read(): Promise<Circuit | undefined> {
    const { clock } = this.deps;
    const sentAt = clock.now();
    try {
      const circuit = await loadCircuit(this.deps.stores.circuit, this.lane);
      this.refusals = circuit.clientErrorRun;
      return circuit;
    } catch {
      return undefined;
    } finally {
      this.times.record(clock.now() - sentAt);
    }
  }
}
