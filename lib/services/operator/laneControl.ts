import type { Circuit, OperatorEvent, OperatorHold } from '../../domain/breaker/state';
import { circuitPolicyFrom } from '../../domain/breaker/policy';
import { DEFAULT_BREAKER_SETTINGS } from '../../domain/breaker/settings';
import type { CircuitStore } from '../../ports/CircuitStore';
import type { Clock } from '../../ports/Clock';
import { applyCircuitEvent } from '../circuitUpdates';
import { circuitView, holdView, type CircuitView } from './laneStatus';
import { operatorName } from './operatorName';

/** What the lane-control services need. */
export interface LaneControlDeps {
  readonly circuits: CircuitStore;
  readonly clock: Clock;
  /** The lane (`ServiceConfig.lane`). */
  readonly lane: string;
}

/** An operator's action on a lane. */
export type LaneAction = 'pause' | 'resume' | 'circuit-open' | 'circuit-close';

/** What a lane-control call did, and the lane after it: plain JSON, times in epoch ms. */
export interface LaneControlResult {
  readonly lane: string;
  readonly action: LaneAction;
  /** When it was applied. */
  readonly at: number;
  /** False when the lane already was so: nothing was written (pausing a paused lane, closing a closed circuit). */
  readonly changed: boolean;
  /** One line for people, e.g. `lane 'default' paused by alice` or `lane 'default' was already paused by bob since 2026-…Z`. */
  readonly message: string;
  /** The hold after the call, or `null`. */
  readonly paused: OperatorHold | null;
  /** The circuit after the call. */
  readonly circuit: CircuitView;
}

/**
 * Pauses the lane for `by` (an operator's name): its orchestrator dispatches nothing, no job and no health check,
 * from its next circuit read on (within `circuitPollMs`), and hands the messages it buffered back to their queues.
 * Jobs already dispatched run on, and their results still move the circuit. A lane already paused is left as it is
 * (`changed: false`, the first hold kept).
 * @throws RangeError when `by` is blank or longer than `MAX_OPERATOR_NAME` (see `operatorName`).
 * @throws StateUnavailableError when the circuit stays contended; the store's own errors as they come.
 */
export async function pauseLane(deps: LaneControlDeps, by: string): Promise<LaneControlResult> {
  return control(
    deps,
    'pause',
    by,
    (name) => ({ type: 'operator-paused', by: name }),
    ({ after, changed }) =>
      changed
        ? `lane '${deps.lane}' ${pausedBy(after.hold)}: nothing is dispatched until it is resumed`
        : `lane '${deps.lane}' was already ${pausedBy(after.hold)}`,
  );
}

/**
 * Resumes a paused lane for `by`: dispatch restarts within `circuitPollMs`, through the pacer's slow start (if its
 * circuit is closed). A lane not paused is left as it is (`changed: false`).
 * @throws RangeError when `by` is blank or longer than `MAX_OPERATOR_NAME` (see `operatorName`).
 * @throws StateUnavailableError when the circuit stays contended; the store's own errors as they come.
 */
export async function resumeLane(deps: LaneControlDeps, by: string): Promise<LaneControlResult> {
  return control(
    deps,
    'resume',
    by,
    (name) => ({ type: 'operator-resumed', by: name }),
    ({ name, after, changed }) => {
      if (!changed) return `lane '${deps.lane}' was not paused`;
      const still =
        after.state.status === 'closed'
          ? ''
          : `, but its circuit is ${after.state.status} (${after.state.reason}): jobs wait until it closes`;
      return `lane '${deps.lane}' resumed by ${name}${still}`;
    },
  );
}

/**
 * Forces the lane's circuit `open` for `by` (reason `opened by operator (<by>)`; no job and no health check goes
 * until an operator closes it) or `closed` (from open, half-open or forced open; dispatch restarts through the slow
 * start, and the run of 4xx refusals starts over). A circuit already so is left as it is (`changed: false`); forcing
 * open a circuit the breaker opened makes it the operator's.
 * @throws RangeError when `by` is blank or longer than `MAX_OPERATOR_NAME` (see `operatorName`).
 * @throws StateUnavailableError when the circuit stays contended; the store's own errors as they come.
 */
export async function forceCircuit(
  deps: LaneControlDeps,
  to: 'open' | 'closed',
  by: string,
): Promise<LaneControlResult> {
  const circuit = `circuit of lane '${deps.lane}'`;
  if (to === 'open') {
    return control(
      deps,
      'circuit-open',
      by,
      (name) => ({ type: 'operator-opened', by: name }),
      ({ name, after, changed }) =>
        changed
          ? `${circuit} opened by ${name}: no job and no health check goes until an operator closes it`
          : `${circuit} was already open: ${reasonOf(after)}`,
    );
  }
  return control(
    deps,
    'circuit-close',
    by,
    (name) => ({ type: 'operator-closed', by: name }),
    ({ name, before, after, changed }) => {
      if (!changed) return `${circuit} was already closed`;
      const held = after.hold === null ? '' : `; the lane stays ${pausedBy(after.hold)} until it is resumed`;
      return `${circuit} closed by ${name} (it was ${before.state.status}: ${reasonOf(before)})${held}`;
    },
  );
}

/**
 * The policy {@link applyCircuitEvent} is given. Operator events never consult it (see `transition`), so the defaults
 * serve whatever the lane's settings are.
 */
const OPERATOR_POLICY = circuitPolicyFrom(DEFAULT_BREAKER_SETTINGS);

/** What a call did, for its message: the operator's name as stored, the circuit before and after, and whether it changed. */
interface Applied {
  readonly name: string;
  readonly before: Circuit;
  readonly after: Circuit;
  readonly changed: boolean;
}

/** Applies the event `eventFor` makes of the operator's name (`by`, trimmed) for `action`; `describe` words the message. */
async function control(
  deps: LaneControlDeps,
  action: LaneAction,
  by: string,
  eventFor: (name: string) => OperatorEvent,
  describe: (applied: Applied) => string,
): Promise<LaneControlResult> {
  const name = operatorName(by);
  const at = deps.clock.now();
  const { before, after, written } = await applyCircuitEvent(
    deps.circuits,
    deps.lane,
    eventFor(name),
    at,
    OPERATOR_POLICY,
  );
  return {
    lane: deps.lane,
    action,
    at,
    changed: written,
    message: describe({ name, before, after, changed: written }),
    paused: holdView(after),
    circuit: circuitView(after, at),
  };
}

/** `paused by <by> since <ISO time>`, or `not paused`. */
function pausedBy(hold: OperatorHold | null): string {
  return hold === null ? 'not paused' : `paused by ${hold.by} since ${new Date(hold.since).toISOString()}`;
}

/** Why `circuit` is not closed, or `closed`. */
function reasonOf(circuit: Circuit): string {
  return circuit.state.status === 'closed' ? 'closed' : circuit.state.reason;
}
