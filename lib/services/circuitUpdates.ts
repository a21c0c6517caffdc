import { INITIAL_CIRCUIT, transition } from '../domain/breaker/circuit';
import { circuitFromJSON, circuitToJSON } from '../domain/breaker/circuitJSON';
import type { Circuit, CircuitEvent, CircuitTransition } from '../domain/breaker/state';
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

/** A transition of a lane's circuit (see `Circuit.transitions`) that a write of this process made: what logs and metrics are told. */
export type LaneCircuitTransition = CircuitTransition & { readonly lane: string };

/** Told of each transition that {@link applyCircuitEvent} wrote. */
export type OnCircuitTransition = (transition: LaneCircuitTransition) => void;

/**
 * The transitions `transition` recorded going from `before` to `after` (a change of status, of the operator's hold, or
 * of who holds the circuit open, with its reason): at most one, none when the change was of another kind (a failure
 * counted, a 429 pause, a check claimed).
 */
export function circuitTransitionsOf(lane: string, before: Circuit, after: Circuit): LaneCircuitTransition[] {
  return after.transitions.filter((entry) => !before.transitions.includes(entry)).map((entry) => ({ lane, ...entry }));
}

/**
 * Applies `event` to the stored circuit with a conditional write, re-reading and re-deciding when another writer
 * got there first. An event that changes nothing writes nothing.
 * @param policy decides when the circuit opens and when it probes (see `circuitPolicyFrom`).
 * @param onTransition told of the transition this call's write recorded, if any (see {@link circuitTransitionsOf}),
 * after the write: the transitions other writers made are theirs to report.
 * @throws StateUnavailableError (caused by a StateConflictError) when the circuit stays contended for
 * {@link MAX_CIRCUIT_WRITE_TRIES} tries: like an unavailable store, it passes, so the orchestrator backs off.
 */
export async function applyCircuitEvent(
  store: CircuitStore,
  lane: string,
  event: CircuitEvent,
  now: number,
  policy: CircuitPolicy,
  onTransition?: OnCircuitTransition,
): Promise<CircuitUpdate> {
  for (let i = 0; i < MAX_CIRCUIT_WRITE_TRIES; i++) {
    const before = await loadCircuit(store, lane);
    const after = transition(before, event, now, policy);
    if (after === before) return { before, after, written: false };
    if (await store.saveCircuit(lane, circuitToJSON(after))) {
      for (const changed of circuitTransitionsOf(lane, before, after)) onTransition?.(changed);
      return { before, after, written: true };
    }
  }
  const conflict = new StateConflictError(
    `circuit of lane '${lane}' stayed contended for ${MAX_CIRCUIT_WRITE_TRIES} conditional writes`,
  );
  throw new StateUnavailableError('saveCircuit', { cause: conflict });
}
