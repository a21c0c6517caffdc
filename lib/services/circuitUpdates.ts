import { circuitFromJSON, circuitToJSON, INITIAL_CIRCUIT, transition, type Circuit, type CircuitEvent } from '../domain/breaker/circuit';
import type { CircuitPolicy } from '../domain/breaker/policy';
import { StateConflictError, StateUnavailableError } from '../errors';
import type { CircuitStore } from '../ports/CircuitStore';

/** Conditional writes tried before giving up on a contended circuit. */
const MAX_CIRCUIT_WRITE_TRIES = 8;

/** The lane's circuit as stored, or a fresh closed circuit. */
export async function loadCircuit(store: CircuitStore, lane: string): Promise<Circuit> {
  const json = await store.loadCircuit(lane);
  return json === undefined ? INITIAL_CIRCUIT : circuitFromJSON(json);
}

/** What {@link applyCircuitEvent} did. */
export interface CircuitUpdate {
  readonly before: Circuit;
  readonly after: Circuit;
  /** True when this call's write changed the stored circuit. */
  readonly written: boolean;
}

/**
 * Applies `event` to the stored circuit with a conditional write, re-reading and re-deciding when another writer
 * got there first. An event that changes nothing writes nothing.
 * @param policy decides when the circuit opens and when it probes (see `circuitPolicyFrom`).
 * @throws StateUnavailableError (caused by a StateConflictError) when the circuit stays contended for
 * {@link MAX_CIRCUIT_WRITE_TRIES} tries: like an unavailable store, it passes, so the orchestrator backs off.
 */
export async function applyCircuitEvent(store: CircuitStore, lane: string, event: CircuitEvent, now: number, policy: CircuitPolicy): Promise<CircuitUpdate> {
  for (let i = 0; i < MAX_CIRCUIT_WRITE_TRIES; i++) {
    const before = await loadCircuit(store, lane);
    const after = transition(before, event, now, policy);
    if (after === before) return { before, after, written: false };
    if (await store.saveCircuit(lane, circuitToJSON(after))) return { before, after, written: true };
  }
  const conflict = new StateConflictError(`circuit of lane '${lane}' stayed contended for ${MAX_CIRCUIT_WRITE_TRIES} conditional writes`);
  throw new StateUnavailableError('saveCircuit', { cause: conflict });
}
