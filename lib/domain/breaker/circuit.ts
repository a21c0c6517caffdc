/**
 * The circuit breaker of a lane, as pure data and a pure transition function `(circuit, event, now, policy)`.
 *
 * Why it is shaped this way:
 * - **Exactly one trial while recovering.** HALF_OPEN admits a single trial, the health check, never a job.
 *   A send is accepted only from OPEN once the cool-down is over (or from HALF_OPEN once the previous check has
 *   timed out), and each accepted send bumps `version`. The store writes iff the stored version is
 *   `next.version - 1`, so of many orchestrators racing to send a check, one wins and the others see HALF_OPEN.
 * - **No crowd on recovery.** Jobs flow again only after a check succeeds, and the closed circuit then restarts
 *   dispatch through the pacer's slow start, so a backlog does not hit a barely recovered API at once.
 * - **One probe at a time, claimed before it calls.** Lambda may start a health-check event late or deliver it
 *   twice, even after the first delivery ended. So the worker first claims the check (`health-check-started`): the
 *   write succeeds only for the current `checkId`, not yet started and not timed out, and records `probeStartedAt`.
 *   Only the winner probes; a delivery of a check that is no longer current (replaced, started, or the circuit
 *   closed or opened again) changes nothing and makes no call. From the claim on, the check's timeout counts from
 *   the probe's start, and the settings keep it above the API timeout, so a probe still calling is never replaced.
 * - **429 pauses rather than opens.** A rate limit says the API is up and wants us to wait: it sets
 *   `pausedUntil` and leaves the state alone, so quota pressure never counts as an outage.
 * - **A caller-level refusal opens at once.** A 401 or 403 says our key, not the job, is wrong: it opens the
 *   circuit with that reason, so the backlog waits instead of being dead-lettered. Another 4xx may be the job's own
 *   fault or the caller's (a wrong URL); `clientErrorRun` counts them in a row across workers, a job success resets
 *   it, and the policy opens once the run is long enough. The run survives a close, since a health probe (another
 *   URL) cannot tell that the jobs' URL is wrong: the first 4xx after such a close opens the circuit again.
 * - **Policy passed in.** When to open and when to probe are the {@link CircuitPolicy}'s to decide (see
 *   `policy.ts`); the transitions only store its decisions, so changing either is changing the policy.
 * - **Operators act through events too.** A pause (`operator-paused`) sets a hold beside the state: nothing is
 *   dispatched, no job and no health check, until `operator-resumed` clears it; a forced open (`operator-opened`)
 *   opens with `byOperator`, whose check is never due, until `operator-closed` closes the circuit from any state.
 *   They are written with the same conditional write as every other event, so a worker's concurrent transition
 *   neither loses nor undoes them. None consults the policy.
 * - **Recent transitions for operators.** Every change of status, of the hold, or of who holds the circuit open
 *   appends `{ at, from, to, reason }` to `transitions`, of which the last {@link MAX_TRANSITIONS_KEPT} are kept,
 *   except the probe cycles after a first failed check (see `isRepeatedProbe`), so an outage's opening stays.
 *
 * Callers skip the store write when `transition` returns the same object; every real change has `version + 1`.
 */
import { StateFormatError } from '../../errors';
import { describeValue } from '../describeValue';
import type { CircuitPolicy, ProbePolicy } from './policy';

/** Where the circuit stands. Each variant carries only its own data; times are epoch ms. */
export type CircuitState =
  /** Jobs flow. `failures` are the instants of recent transient failures (ascending, within the window). */
  | {
      readonly status: 'closed';
      readonly failures: readonly number[];
      readonly closedAt: number | null;
      readonly reopenStreak: number;
    }
  /**
   * No job is dispatched; a health check may be sent from `nextCheckAt` on. `reason` says why it opened, for operators.
   * `byOperator`: an operator forced it open, and it stays open until an operator closes it: its `nextCheckAt` is
   * {@link NEVER_DUE}, and it sends no check.
   */
  | {
      readonly status: 'open';
      readonly openedAt: number;
      readonly nextCheckAt: number;
      readonly failedChecks: number;
      readonly reopenStreak: number;
      readonly reason: string;
      readonly byOperator?: true;
    }
  /**
   * One health check (`checkId`) was sent; no job is dispatched. `probeStartedAt` is when a worker claimed it and
   * started probing, `null` while no worker has; `reason` is the open state's, kept for the next open.
   */
  | {
      readonly status: 'half-open';
      readonly openedAt: number;
      readonly checkId: string;
      readonly checkSentAt: number;
      readonly probeStartedAt: number | null;
      readonly failedChecks: number;
      readonly reopenStreak: number;
      readonly reason: string;
    };

/** Where a circuit stands, in one word. */
export type CircuitStatus = CircuitState['status'];

/** An operator's hold on a lane (see the `operator-paused` event): who paused it, and since when (epoch ms). */
export interface OperatorHold {
  readonly since: number;
  readonly by: string;
}

/**
 * One change of a circuit's status or hold, kept for operators: at `at` (epoch ms) the status went from `from` to
 * `to` (the same for a hold, a release or an operator's forcing of an open circuit) because of `reason`.
 */
export interface CircuitTransition {
  readonly at: number;
  readonly from: CircuitStatus;
  readonly to: CircuitStatus;
  readonly reason: string;
}

/** The closed variant of {@link CircuitState}. */
export type ClosedState = Extract<CircuitState, { readonly status: 'closed' }>;

/** The half-open variant of {@link CircuitState}. */
export type HalfOpenState = Extract<CircuitState, { readonly status: 'half-open' }>;

/** A lane's circuit: its state, the rate-limit pause, the operator's hold, its recent transitions, and the version that guards conditional writes. */
export interface Circuit {
  readonly state: CircuitState;
  /** Epoch ms until which a 429 asked us to wait; 0 if never. Enforced by the dispatcher, not by the state. */
  readonly pausedUntil: number;
  /** Job results in a row, across workers and states, that were a 4xx other than 401, 403, 408, 425 and 429; a job success resets it. */
  readonly clientErrorRun: number;
  /** An operator's pause: while set, nothing is dispatched, no job and no health check. `null` when the lane is not paused. */
  readonly hold: OperatorHold | null;
  /** The last {@link MAX_TRANSITIONS_KEPT} transitions, oldest first. */
  readonly transitions: readonly CircuitTransition[];
  /** Grows by exactly 1 with every change. */
  readonly version: number;
}

/** What can happen to a circuit. */
export type CircuitEvent =
  /** A job failed with a 5xx, a timeout or a network error. */
  | { readonly type: 'transient-failure' }
  /** A job succeeded. */
  | { readonly type: 'success' }
  /** The API refused a job's call for a reason that names the caller, not the job (401, 403): `reason` says which. */
  | { readonly type: 'caller-rejected'; readonly reason: string }
  /** The API refused a job's call with another 4xx (`reason`): the job's fault, or the caller's if many jobs get it. */
  | { readonly type: 'client-error'; readonly reason: string }
  /** The API answered 429; `retryAt` (epoch ms, finite) is when it may be called again. Not an outage. */
  | { readonly type: 'rate-limited'; readonly retryAt: number }
  /** An orchestrator wants to send health check `checkId`. Apply, write, and send only if the write succeeds. */
  | { readonly type: 'health-check-sent'; readonly checkId: string }
  /** A worker wants to probe for health check `checkId`. Apply, write, and probe only if the write succeeds. */
  | { readonly type: 'health-check-started'; readonly checkId: string }
  /** Health check `checkId` found the API healthy. */
  | { readonly type: 'health-check-ok'; readonly checkId: string }
  /** Health check `checkId` found the API still failing. */
  | { readonly type: 'health-check-failed'; readonly checkId: string }
  /** An operator (`by`) pauses the lane: nothing is dispatched, no job and no health check, until a resume. */
  | { readonly type: 'operator-paused'; readonly by: string }
  /** An operator (`by`) resumes a paused lane. */
  | { readonly type: 'operator-resumed'; readonly by: string }
  /** An operator (`by`) forces the circuit open: no health check goes until an operator closes it. */
  | { readonly type: 'operator-opened'; readonly by: string }
  /** An operator (`by`) closes the circuit from any state; the client-error run starts over. */
  | { readonly type: 'operator-closed'; readonly by: string };

/** The events of operators, which {@link transition} applies without consulting the policy. */
export type OperatorEvent = Extract<CircuitEvent, { readonly by: string }>;

/**
 * A circuit as plain JSON, for the store. The store's conditional write compares `version`. `clientErrorRun` is
 * written only when it is not 0, `hold` only while there is one, and `transitions` only when there are any, so a
 * circuit without them stores what it stored before they existed.
 */
export type CircuitJSON = {
  readonly version: number;
  readonly state: CircuitState;
  readonly pausedUntil: number;
  readonly clientErrorRun?: number;
  readonly hold?: OperatorHold;
  readonly transitions?: readonly CircuitTransition[];
};

/** How many transitions a circuit keeps (see {@link Circuit.transitions}). */
export const MAX_TRANSITIONS_KEPT = 10;

/**
 * The longest reason a kept transition holds; a longer one is cut, ending in `…`. With {@link MAX_TRANSITIONS_KEPT}
 * it keeps the circuit item within the 4 KB that one strongly consistent read costs.
 */
export const MAX_TRANSITION_REASON = 160;

/** The `nextCheckAt` of a circuit an operator forced open: never (the largest safe integer, which JSON and DynamoDB keep). */
export const NEVER_DUE = Number.MAX_SAFE_INTEGER;

/** A circuit never written: closed, no failures, never closed before, no client-error run, not held, no transitions, version 0. */
export const INITIAL_CIRCUIT: Circuit = make({
  state: { status: 'closed', failures: Object.freeze([]), closedAt: null, reopenStreak: 0 },
  pausedUntil: 0,
  clientErrorRun: 0,
  hold: null,
  transitions: [],
  version: 0,
});

/**
 * Why an open circuit stored before `reason` existed had opened: then only transient failures could open it.
 * Read in place of the missing field.
 */
export const LEGACY_OPEN_REASON = 'transient failures';

/**
 * Applies `event` at instant `now` (epoch ms), with `policy` deciding when to open and when to probe. A change of
 * status, of the hold, or of who holds the circuit open is appended to `transitions`.
 *
 * While the lane is held, no health check is sent or started (the events change nothing); a check's result still
 * counts, as do jobs' results. A circuit an operator forced open sends no check; its check's result changes nothing.
 * @returns `circuit` itself when nothing changes; otherwise a new circuit with `version + 1`.
 * @throws RangeError for a `rate-limited` event whose `retryAt` is not finite, or an operator event whose `by` is blank.
 */
export function transition(circuit: Circuit, event: CircuitEvent, now: number, policy: CircuitPolicy): Circuit {
  const after = 'by' in event ? operate(circuit, event, now) : react(circuit, event, now, policy);
  if (after === circuit || !isTransition(circuit, after) || isRepeatedProbe(circuit, event)) return after;
  const entry: CircuitTransition = {
    at: now,
    from: circuit.state.status,
    to: after.state.status,
    reason: bounded(transitionReason(event, after)),
  };
  return make({ ...after, transitions: [...after.transitions, entry].slice(-MAX_TRANSITIONS_KEPT) });
}

/** Applies an operator's event (see {@link OperatorEvent}). */
function operate(circuit: Circuit, event: OperatorEvent, now: number): Circuit {
  if (event.by.trim() === '')
    throw new RangeError(`an operator event needs a non-blank 'by'; got ${JSON.stringify(event.by)}`);
  const { state, hold, version } = circuit;
  const next = (changes: Partial<Circuit>): Circuit => make({ ...circuit, ...changes, version: version + 1 });
  switch (event.type) {
    case 'operator-paused':
      return hold === null ? next({ hold: { since: now, by: event.by } }) : circuit;
    case 'operator-resumed':
      return hold === null ? circuit : next({ hold: null });
    case 'operator-opened': {
      if (isForcedOpen(state)) return circuit;
      // A circuit already open stays open since it opened; a check in flight is dropped (its result changes nothing).
      const [openedAt, failedChecks] = state.status === 'closed' ? [now, 0] : [state.openedAt, state.failedChecks];
      const reason = `opened by operator (${event.by})`;
      return next({
        state: {
          status: 'open',
          openedAt,
          nextCheckAt: NEVER_DUE,
          failedChecks,
          reopenStreak: state.reopenStreak,
          reason,
          byOperator: true,
        },
      });
    }
    case 'operator-closed':
      // The operator vouches for the API and the caller: the client-error run starts over, unlike after a probe.
      return state.status === 'closed'
        ? circuit
        : next({
            state: { status: 'closed', failures: [], closedAt: now, reopenStreak: state.reopenStreak },
            clientErrorRun: 0,
          });
  }
}

/** Applies the event of a job, a check or a 429 (every event but an operator's). */
function react(
  circuit: Circuit,
  event: Exclude<CircuitEvent, OperatorEvent>,
  now: number,
  policy: CircuitPolicy,
): Circuit {
  const { state, pausedUntil, clientErrorRun, hold, version } = circuit;
  if (event.type === 'rate-limited') {
    if (!Number.isFinite(event.retryAt))
      throw new RangeError(`retryAt must be a finite epoch ms; got ${event.retryAt}`);
    return event.retryAt > pausedUntil
      ? make({ ...circuit, pausedUntil: event.retryAt, version: version + 1 })
      : circuit;
  }
  if (hold !== null && (event.type === 'health-check-sent' || event.type === 'health-check-started')) return circuit;
  const next = (to: CircuitState, run = clientErrorRun): Circuit =>
    make({ ...circuit, state: to, clientErrorRun: run, version: version + 1 });
  // A job's result moves the run in every state: jobs dispatched before an open still report.
  if (event.type === 'success' && clientErrorRun > 0) return next(state, 0);
  const run = event.type === 'client-error' ? clientErrorRun + 1 : clientErrorRun;

  switch (state.status) {
    case 'closed': {
      const opening = openingDecision(state, event, run, now, policy);
      if (opening?.open === false && opening.failures !== undefined)
        return next({ ...state, failures: opening.failures }, run);
      if (opening?.open !== true) return run === clientErrorRun ? circuit : next(state, run);
      const { nextCheckAt, reopenStreak } = policy.probe.onOpen(state, now);
      return next(
        { status: 'open', openedAt: now, nextCheckAt, failedChecks: 0, reopenStreak, reason: opening.reason },
        run,
      );
    }
    case 'open': {
      if (event.type !== 'health-check-sent' || now < state.nextCheckAt)
        return run === clientErrorRun ? circuit : next(state, run);
      const { openedAt, failedChecks, reopenStreak, reason } = state;
      return next({
        status: 'half-open',
        openedAt,
        checkId: event.checkId,
        checkSentAt: now,
        probeStartedAt: null,
        failedChecks,
        reopenStreak,
        reason,
      });
    }
    case 'half-open': {
      const { openedAt, failedChecks, reopenStreak, reason } = state;
      if (event.type === 'health-check-sent') {
        // A check is presumed lost only at its timeout (see ProbePolicy.checkTimeoutAt); until then it stays the one trial.
        if (now < policy.probe.checkTimeoutAt(state)) return circuit;
        return next({
          ...state,
          checkId: event.checkId,
          checkSentAt: now,
          probeStartedAt: null,
          failedChecks: failedChecks + 1,
        });
      }
      if (!('checkId' in event)) return run === clientErrorRun ? circuit : next(state, run);
      if (event.checkId !== state.checkId) return circuit;
      if (event.type === 'health-check-started') {
        // The claim: the one write that lets a worker probe. A second delivery finds it started; a late one finds it
        // timed out (and so replaceable, or already replaced under another checkId): neither calls.
        if (state.probeStartedAt !== null || now >= policy.probe.checkTimeoutAt(state)) return circuit;
        return next({ ...state, probeStartedAt: now });
      }
      if (event.type === 'health-check-ok')
        return next({ status: 'closed', failures: [], closedAt: now, reopenStreak });
      const nextCheckAt = policy.probe.afterFailedCheck(state, now);
      return next({ status: 'open', openedAt, nextCheckAt, failedChecks: failedChecks + 1, reopenStreak, reason });
    }
  }
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

/** Why `event` made the transition to `after`, for {@link Circuit.transitions}. */
function transitionReason(event: CircuitEvent, after: Circuit): string {
  switch (event.type) {
    case 'operator-paused':
      return `paused by operator (${event.by})`;
    case 'operator-resumed':
      return `resumed by operator (${event.by})`;
    case 'operator-closed':
      return `closed by operator (${event.by})`;
    case 'health-check-sent':
      return `health check ${event.checkId} sent`;
    case 'health-check-ok':
      return `health check ${event.checkId} passed`;
    case 'health-check-failed':
      return `health check ${event.checkId} failed`;
    default:
      // The rest only ever open a closed circuit (a forced open included), with the reason they store.
      return after.state.status === 'closed' ? event.type : after.state.reason;
  }
}

/** `reason` cut to {@link MAX_TRANSITION_REASON} characters. */
function bounded(reason: string): string {
  return reason.length <= MAX_TRANSITION_REASON ? reason : `${reason.slice(0, MAX_TRANSITION_REASON - 1)}…`;
}

/** Whether `state` is open because an operator forced it. */
function isForcedOpen(state: CircuitState): boolean {
  return state.status === 'open' && state.byOperator === true;
}

/**
 * What the opening policy says about `event` on the closed circuit `closed`, given the client-error run `run` that
 * includes the event; `undefined` for an event that is not the policy's to judge (a success, a health-check event).
 * A stay-closed decision without `failures` keeps the stored ones.
 */
function openingDecision(
  closed: ClosedState,
  event: CircuitEvent,
  run: number,
  now: number,
  policy: CircuitPolicy,
):
  | { readonly open: true; readonly reason: string }
  | { readonly open: false; readonly failures?: readonly number[] }
  | undefined {
  switch (event.type) {
    case 'transient-failure':
      return policy.opening.onFailure(
        [...closed.failures, now].sort((a, b) => a - b),
        now,
      );
    case 'caller-rejected':
      return policy.opening.onCallerRejected(event.reason);
    case 'client-error':
      return policy.opening.onClientError(run, event.reason);
    default:
      return undefined;
  }
}

/**
 * Whether jobs may be dispatched: only while closed and not held by an operator. The 429 pause (`pausedUntil`) is
 * checked by the dispatcher.
 */
export function isDispatchAllowed(circuit: Circuit): boolean {
  return circuit.state.status === 'closed' && circuit.hold === null;
}

/** Whether an operator has paused the lane (see {@link Circuit.hold}). */
export function isHeld(circuit: Circuit): boolean {
  return circuit.hold !== null;
}

/**
 * When the next health check may be sent (epoch ms): from OPEN at `nextCheckAt`; from HALF_OPEN once the check in
 * flight has timed out. `undefined` while closed, while an operator holds the lane, and while an operator holds the
 * circuit open.
 * @param probe the probe policy of the policy given to {@link transition}; the half-open timeout is not stored in
 * the state, so only the same policy agrees with the transitions about it.
 */
export function healthCheckDueAt(circuit: Circuit, probe: ProbePolicy): number | undefined {
  const { state } = circuit;
  if (circuit.hold !== null || isForcedOpen(state)) return undefined;
  if (state.status === 'open') return state.nextCheckAt;
  if (state.status === 'half-open') return probe.checkTimeoutAt(state);
  return undefined;
}

/** Whether the probe of a half-open circuit has started (a worker claimed the check): false in any other state. */
export function isProbeStarted(circuit: Circuit): boolean {
  return circuit.state.status === 'half-open' && circuit.state.probeStartedAt !== null;
}

/** The circuit as plain JSON for the store (a copy; nothing is shared with `circuit`). */
export function circuitToJSON(circuit: Circuit): CircuitJSON {
  const { state, pausedUntil, clientErrorRun, hold, transitions, version } = circuit;
  const copy = state.status === 'closed' ? { ...state, failures: [...state.failures] } : { ...state };
  return {
    version,
    state: copy,
    pausedUntil,
    ...(clientErrorRun === 0 ? {} : { clientErrorRun }),
    ...(hold === null ? {} : { hold: { ...hold } }),
    ...(transitions.length === 0 ? {} : { transitions: transitions.map((t) => ({ ...t })) }),
  };
}

/**
 * Reads a circuit back from the store. Keys beside `version`, `state`, `pausedUntil`, `clientErrorRun`, `hold` and
 * `transitions` at the top level are ignored (room for store bookkeeping); inside `state`, `hold` and each
 * transition, only their own keys are accepted. Of more than {@link MAX_TRANSITIONS_KEPT} transitions, the last are kept.
 *
 * Circuits stored before these fields existed stay readable: a missing `clientErrorRun` is 0, a missing `hold` is
 * none, missing `transitions` are none; an open or half-open
 * state without `reason` opened on {@link LEGACY_OPEN_REASON}; a half-open state without `probeStartedAt` reads as
 * started at `checkSentAt`, since the worker that received it then probed without a claim: it may be calling, so no
 * claim may start a second probe, and the check times out when it always did.
 * @throws StateFormatError naming the first malformed field.
 */
export function circuitFromJSON(json: unknown): Circuit {
  const top = object(json, 'circuit');
  const version = count(top, 'version', 'circuit');
  const pausedUntil = time(top, 'pausedUntil', 'circuit');
  const clientErrorRun = top.clientErrorRun === undefined ? 0 : count(top, 'clientErrorRun', 'circuit');
  const hold = top.hold === undefined ? null : holdOf(top.hold);
  const transitions = top.transitions === undefined ? [] : transitionsOf(top.transitions);
  const rest = { pausedUntil, clientErrorRun, hold, transitions, version };
  const raw = object(top.state, 'circuit.state');
  const at = 'circuit.state';
  const only = (...keys: string[]): void => {
    const extra = Object.keys(raw).find((key) => key !== 'status' && !keys.includes(key));
    if (extra !== undefined) fail(`${at}.${extra}`, `is not a field of the '${String(raw.status)}' state`, raw[extra]);
  };
  switch (raw.status) {
    case 'closed': {
      only('failures', 'closedAt', 'reopenStreak');
      const { failures } = raw;
      if (
        !Array.isArray(failures) ||
        !failures.every((t, i) => Number.isFinite(t) && (i === 0 || t >= failures[i - 1]))
      ) {
        fail(`${at}.failures`, 'must be an ascending array of epoch ms', failures);
      }
      const closedAt = raw.closedAt === null ? null : time(raw, 'closedAt', at);
      const state = {
        status: 'closed',
        failures: Object.freeze([...(failures as number[])]),
        closedAt,
        reopenStreak: count(raw, 'reopenStreak', at),
      } as const;
      return make({ state, ...rest });
    }
    case 'open': {
      only('openedAt', 'nextCheckAt', 'failedChecks', 'reopenStreak', 'reason', 'byOperator');
      if (raw.byOperator !== undefined && raw.byOperator !== true)
        fail(`${at}.byOperator`, 'must be true when present', raw.byOperator);
      const state = {
        status: 'open',
        openedAt: time(raw, 'openedAt', at),
        nextCheckAt: time(raw, 'nextCheckAt', at),
        failedChecks: count(raw, 'failedChecks', at),
        reopenStreak: count(raw, 'reopenStreak', at),
        reason: reasonOf(raw, at),
        ...(raw.byOperator === true ? { byOperator: true as const } : {}),
      } as const;
      return make({ state, ...rest });
    }
    case 'half-open': {
      only('openedAt', 'checkId', 'checkSentAt', 'probeStartedAt', 'failedChecks', 'reopenStreak', 'reason');
      const { checkId } = raw;
      if (typeof checkId !== 'string' || checkId === '') fail(`${at}.checkId`, 'must be a non-empty string', checkId);
      const checkSentAt = time(raw, 'checkSentAt', at);
      const state = {
        status: 'half-open',
        openedAt: time(raw, 'openedAt', at),
        checkId,
        checkSentAt,
        probeStartedAt:
          raw.probeStartedAt === undefined
            ? checkSentAt
            : raw.probeStartedAt === null
              ? null
              : time(raw, 'probeStartedAt', at),
        failedChecks: count(raw, 'failedChecks', at),
        reopenStreak: count(raw, 'reopenStreak', at),
        reason: reasonOf(raw, at),
      } as const;
      return make({ state, ...rest });
    }
    default:
      return fail(`${at}.status`, "must be 'closed', 'open' or 'half-open'", raw.status);
  }
}

/** `circuit` as a new frozen object; its state, hold and transitions are frozen in place, so a circuit shares them with the next. */
function make(circuit: Circuit): Circuit {
  const { state, pausedUntil, clientErrorRun, hold, transitions, version } = circuit;
  transitions.forEach((t) => Object.freeze(t));
  return Object.freeze({
    state: Object.freeze(state),
    pausedUntil,
    clientErrorRun,
    hold: hold === null ? null : Object.freeze(hold),
    transitions: Object.freeze(transitions),
    version,
  });
}

const STATUSES: readonly string[] = ['closed', 'open', 'half-open'] satisfies readonly CircuitStatus[];

function holdOf(value: unknown): OperatorHold {
  const raw = object(value, 'circuit.hold');
  const extra = Object.keys(raw).find((key) => key !== 'since' && key !== 'by');
  if (extra !== undefined) fail(`circuit.hold.${extra}`, 'is not a field of the hold', raw[extra]);
  return { since: time(raw, 'since', 'circuit.hold'), by: text(raw, 'by', 'circuit.hold') };
}

function transitionsOf(value: unknown): CircuitTransition[] {
  if (!Array.isArray(value)) fail('circuit.transitions', 'must be an array', value);
  const read = value.map((entry: unknown, i): CircuitTransition => {
    const at = `circuit.transitions[${i}]`;
    const raw = object(entry, at);
    const extra = Object.keys(raw).find((key) => !['at', 'from', 'to', 'reason'].includes(key));
    if (extra !== undefined) fail(`${at}.${extra}`, 'is not a field of a transition', raw[extra]);
    return {
      at: time(raw, 'at', at),
      from: status(raw, 'from', at),
      to: status(raw, 'to', at),
      reason: text(raw, 'reason', at),
    };
  });
  return read.slice(-MAX_TRANSITIONS_KEPT);
}

function status(record: Record<string, unknown>, key: string, at: string): CircuitStatus {
  const value = record[key];
  if (typeof value !== 'string' || !STATUSES.includes(value))
    fail(`${at}.${key}`, "must be 'closed', 'open' or 'half-open'", value);
  return value as CircuitStatus;
}

function text(record: Record<string, unknown>, key: string, at: string): string {
  const value = record[key];
  if (typeof value !== 'string' || value === '') fail(`${at}.${key}`, 'must be a non-empty string', value);
  return value;
}

function reasonOf(record: Record<string, unknown>, at: string): string {
  const { reason } = record;
  if (reason === undefined) return LEGACY_OPEN_REASON;
  if (typeof reason !== 'string' || reason === '') fail(`${at}.reason`, 'must be a non-empty string', reason);
  return reason;
}

function fail(field: string, problem: string, value: unknown): never {
  throw new StateFormatError(`stored ${field} ${problem}; got ${describeValue(value)}`);
}

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(field, 'must be an object', value);
  return value as Record<string, unknown>;
}

function time(record: Record<string, unknown>, key: string, at: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isFinite(value))
    fail(`${at}.${key}`, 'must be a finite number (epoch ms)', value);
  return value;
}

function count(record: Record<string, unknown>, key: string, at: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    fail(`${at}.${key}`, 'must be a non-negative integer', value);
  return value;
}
