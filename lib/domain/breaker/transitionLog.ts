/**
 * What a circuit keeps of its changes for operators (`Circuit.transitions`): which changes are recorded, and the
 * reason each is recorded with. `circuit.ts` asks it after every transition; it decides nothing about the circuit.
 */
import type { Circuit, CircuitEvent, CircuitState, CircuitTransition } from './state';

/** How many transitions a circuit keeps (see {@link Circuit.transitions}). */
export const MAX_TRANSITIONS_KEPT = 10;

/**
 * The longest reason a kept transition holds; a longer one is cut, ending in `…`. With {@link MAX_TRANSITIONS_KEPT}
 * it keeps the circuit item within the 4 KB that one strongly consistent read costs.
 */
export const MAX_TRANSITION_REASON = 160;

/**
 * The entry `event` at `now` adds to the transitions on its way from `before` to `after`, or `undefined` when it adds
 * none: a change of status, of the hold, or of who holds the circuit open is recorded, except the probe cycles after
 * a first failed check (see {@link isRepeatedProbe}).
 */
export function transitionEntry(
  before: Circuit,
  after: Circuit,
  event: CircuitEvent,
  now: number,
): CircuitTransition | undefined {
  if (after === before || !isTransition(before, after) || isRepeatedProbe(before, event)) return undefined;
  return {
    at: now,
    from: before.state.status,
    to: after.state.status,
    reason: bounded(transitionReason(event, before, after)),
  };
}

/** Whether `state` is open because an operator forced it. */
export function isForcedOpen(state: CircuitState): boolean {
  return state.status === 'open' && state.byOperator === true;
}

/**
 * Whether `event` sends or fails a health check after one has failed already in this outage. Such probe cycles are
 * not recorded: a long outage probes every `healthCheckSeconds`, and would push its opening out of the kept
 * transitions. An outage shows as its opening, its first check sent and failed, and the check that closed it.
 */
function isRepeatedProbe(before: Circuit, event: CircuitEvent): boolean {
  const { state } = before;
  return (
    (event.type === 'health-check-sent' || event.type === 'health-check-failed') &&
    state.status !== 'closed' &&
    state.failedChecks > 0
  );
}

/** Whether `after` differs from `before` in what {@link Circuit.transitions} records: the status, the hold, a forced open. */
function isTransition(before: Circuit, after: Circuit): boolean {
  return (
    before.state.status !== after.state.status ||
    (before.hold === null) !== (after.hold === null) ||
    isForcedOpen(before.state) !== isForcedOpen(after.state)
  );
}

/** Why `event` made the transition from `before` to `after`, for {@link Circuit.transitions}. */
function transitionReason(event: CircuitEvent, before: Circuit, after: Circuit): string {
  switch (event.type) {
    case 'operator-paused':
      return `paused by operator (${event.by})`;
    case 'operator-resumed':
      return `resumed by operator (${event.by})`;
    case 'operator-closed':
      return `closed by operator (${event.by})`;
    case 'health-check-sent':
      return `${checkName(after.state)} ${event.checkId} sent`;
    case 'health-check-ok':
      return `${checkName(before.state)} ${event.checkId} passed`;
    case 'health-check-failed':
      return `${checkName(before.state)} ${event.checkId} failed`;
    default:
      // The rest only ever open a closed circuit (a forced open included), or turn a half-open circuit's check into a
      // job's, with the reason they store.
      return after.state.status === 'closed' ? event.type : after.state.reason;
  }
}

/** What the check of a circuit in `state` is called: a job's trial, or a health check. */
function checkName(state: CircuitState): string {
  return state.status !== 'closed' && state.trial === 'job' ? 'trial job' : 'health check';
}

/** `reason` cut to {@link MAX_TRANSITION_REASON} characters. */
function bounded(reason: string): string {
  return reason.length <= MAX_TRANSITION_REASON ? reason : `${reason.slice(0, MAX_TRANSITION_REASON - 1)}…`;
}
