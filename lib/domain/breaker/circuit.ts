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
 *   it, and the policy opens once the run is long enough. The run survives a close by a probe, since a health probe
 *   (another URL) cannot tell that the jobs' URL is wrong: the first 4xx after such a close opens the circuit again.
 * - **After a refusal of the caller, only evidence closes.** A probe of a health URL that needs no key answers 200 to
 *   a revoked key. So the policy marks such an opening `trial: 'job'`: its check is then one job, sent alone, whose
 *   worker claims the check as a probe's does (`health-check-started` with `trial`, which no probe's claim matches)
 *   and reports its call's result as the check's. Only its success closes the circuit. A refusal of the caller that
 *   arrives while the circuit is open for another reason turns its check into a job's too.
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
 * The circuit's types are in `state.ts`, beneath this file and the policy; `circuitJSON.ts` stores and reads it.
 */
import type { CircuitPolicy, ProbePolicy } from './policy';
import type {
  Circuit,
  CircuitEvent,
  CircuitState,
  ClosedState,
  HalfOpenState,
  OpenState,
  OperatorEvent,
  Trial,
} from './state';
import { isForcedOpen, MAX_TRANSITIONS_KEPT, transitionEntry } from './transitionLog';

/** The `nextCheckAt` of a circuit an operator forced open: never (the largest safe integer, which JSON and DynamoDB keep). */
export const NEVER_DUE = Number.MAX_SAFE_INTEGER;

/** A circuit never written: closed, no failures, never closed before, no client-error run, not held, no transitions, version 0. */
export const INITIAL_CIRCUIT: Circuit = freezeCircuit({
  state: { status: 'closed', failures: Object.freeze([]), closedAt: null, reopenStreak: 0 },
  pausedUntil: 0,
  clientErrorRun: 0,
  hold: null,
  transitions: [],
  version: 0,
});

/**
 * Applies `event` at instant `now` (epoch ms), with `policy` deciding when to open and when to probe. A change of
 * status, of the hold, or of who holds the circuit open is appended to `transitions` (see `transitionLog.ts`).
 *
 * While the lane is held, no health check is sent or started (the events change nothing); a check's result still
 * counts, as do jobs' results. A circuit an operator forced open sends no check; its check's result changes nothing.
 * @returns `circuit` itself when nothing changes; otherwise a new circuit with `version + 1`.
 * @throws RangeError for a `rate-limited` event whose `retryAt` is not finite, or an operator event whose `by` is blank.
 */
export function transition(circuit: Circuit, event: CircuitEvent, now: number, policy: CircuitPolicy): Circuit {
  const after = 'by' in event ? operate(circuit, event, now) : react(circuit, event, now, policy);
  const entry = transitionEntry(circuit, after, event, now);
  if (entry === undefined) return after;
  return freezeCircuit({ ...after, transitions: [...after.transitions, entry].slice(-MAX_TRANSITIONS_KEPT) });
}

/** Applies an operator's event (see {@link OperatorEvent}). */
function operate(circuit: Circuit, event: OperatorEvent, now: number): Circuit {
  if (event.by.trim() === '')
    throw new RangeError(`an operator event needs a non-blank 'by'; got ${JSON.stringify(event.by)}`);
  const { state, hold, version } = circuit;
  const next = (changes: Partial<Circuit>): Circuit => freezeCircuit({ ...circuit, ...changes, version: version + 1 });
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

/** The event of a job or a check: every event but an operator's and a 429. */
type JobOrCheckEvent = Exclude<CircuitEvent, OperatorEvent | { readonly type: 'rate-limited' }>;

/** Applies the event of a job, a check or a 429 (every event but an operator's). */
function react(
  circuit: Circuit,
  event: Exclude<CircuitEvent, OperatorEvent>,
  now: number,
  policy: CircuitPolicy,
): Circuit {
  const { state, clientErrorRun, hold } = circuit;
  if (event.type === 'rate-limited') return rateLimited(circuit, event.retryAt);
  if (hold !== null && (event.type === 'health-check-sent' || event.type === 'health-check-started')) return circuit;
  // A job's result moves the run in every state: jobs dispatched before an open still report.
  if (event.type === 'success' && clientErrorRun > 0) return moved(circuit, state, 0);
  const run = event.type === 'client-error' ? clientErrorRun + 1 : clientErrorRun;
  const tried = state.status === 'closed' ? undefined : triedByJob(state, event, run, now, policy);
  if (tried !== undefined) return moved(circuit, tried, run);
  switch (state.status) {
    case 'closed':
      return reactClosed(circuit, state, event, run, now, policy);
    case 'open':
      return reactOpen(circuit, state, event, run, now);
    case 'half-open':
      return reactHalfOpen(circuit, state, event, run, now, policy.probe);
  }
}

/**
 * Applies a 429 asking to wait until `retryAt`: the pause moves later, never earlier, and the state stays.
 * @throws RangeError when `retryAt` is not finite.
 */
function rateLimited(circuit: Circuit, retryAt: number): Circuit {
  if (!Number.isFinite(retryAt)) throw new RangeError(`retryAt must be a finite epoch ms; got ${retryAt}`);
  return retryAt > circuit.pausedUntil
    ? freezeCircuit({ ...circuit, pausedUntil: retryAt, version: circuit.version + 1 })
    : circuit;
}

/** On the closed circuit: the opening policy decides whether to open; otherwise the failures and the run are kept. */
function reactClosed(
  circuit: Circuit,
  state: ClosedState,
  event: JobOrCheckEvent,
  run: number,
  now: number,
  policy: CircuitPolicy,
): Circuit {
  const opening = openingDecision(state, event, run, now, policy);
  if (opening?.open === false && opening.failures !== undefined)
    return moved(circuit, { ...state, failures: opening.failures }, run);
  if (opening?.open !== true) return counted(circuit, run);
  const { nextCheckAt, reopenStreak } = policy.probe.onOpen(state, now);
  const { reason, trial } = opening;
  return moved(
    circuit,
    { status: 'open', openedAt: now, nextCheckAt, failedChecks: 0, reopenStreak, reason, ...trialOf(trial) },
    run,
  );
}

/**
 * The open state a circuit open or half-open for another reason goes to on a refusal of the caller (`event`, the
 * client-error run `run` included) that the opening policy says only a job can vouch for; `undefined` for any other
 * event, or when the check is a job's already or an operator holds the circuit open. An open circuit keeps its
 * check's time; a half-open one sends the job at once, and the result of its probe, no longer current, changes
 * nothing.
 */
function triedByJob(
  state: OpenState | HalfOpenState,
  event: JobOrCheckEvent,
  run: number,
  now: number,
  policy: CircuitPolicy,
): OpenState | undefined {
  if (state.trial === 'job' || isForcedOpen(state)) return undefined;
  if (event.type !== 'caller-rejected' && event.type !== 'client-error') return undefined;
  const decision =
    event.type === 'caller-rejected'
      ? policy.opening.onCallerRejected(event.reason)
      : policy.opening.onClientError(run, event.reason);
  if (!decision.open || decision.trial !== 'job') return undefined;
  const { openedAt, failedChecks, reopenStreak } = state;
  const nextCheckAt = state.status === 'open' ? state.nextCheckAt : now;
  return { status: 'open', openedAt, nextCheckAt, failedChecks, reopenStreak, reason: decision.reason, trial: 'job' };
}

/** On the open circuit: a health check sent once due makes it the one trial, half-open; a job's result only counts. */
function reactOpen(circuit: Circuit, state: OpenState, event: JobOrCheckEvent, run: number, now: number): Circuit {
  if (event.type !== 'health-check-sent' || now < state.nextCheckAt) return counted(circuit, run);
  const { openedAt, failedChecks, reopenStreak, reason, trial } = state;
  return moved(circuit, {
    status: 'half-open',
    openedAt,
    checkId: event.checkId,
    checkSentAt: now,
    probeStartedAt: null,
    failedChecks,
    reopenStreak,
    reason,
    ...trialOf(trial),
  });
}

/**
 * On the half-open circuit: a check that timed out is replaced; the current check is claimed, by a probe or by its
 * job as its `trial` says, then closes or reopens the circuit by its result; another check's events change nothing,
 * and a job's result only counts. A job's trial that passed ends the client-error run: its job succeeded.
 */
function reactHalfOpen(
  circuit: Circuit,
  state: HalfOpenState,
  event: JobOrCheckEvent,
  run: number,
  now: number,
  probe: ProbePolicy,
): Circuit {
  const { openedAt, failedChecks, reopenStreak, reason, trial } = state;
  if (event.type === 'health-check-sent') {
    // A check is presumed lost only at its timeout (see ProbePolicy.checkTimeoutAt); until then it stays the one trial.
    if (now < probe.checkTimeoutAt(state)) return circuit;
    return moved(circuit, {
      ...state,
      checkId: event.checkId,
      checkSentAt: now,
      probeStartedAt: null,
      failedChecks: failedChecks + 1,
    });
  }
  if (!('checkId' in event)) return counted(circuit, run);
  if (event.checkId !== state.checkId) return circuit;
  if (event.type === 'health-check-started') {
    // The claim: the one write that lets a worker probe. A second delivery finds it started; a late one finds it
    // timed out (and so replaceable, or already replaced under another checkId): neither calls.
    // A probe cannot claim a job's trial, nor a job a probe's.
    if (event.trial !== trial || state.probeStartedAt !== null || now >= probe.checkTimeoutAt(state)) return circuit;
    return moved(circuit, { ...state, probeStartedAt: now });
  }
  if (event.type === 'health-check-ok')
    return moved(circuit, { status: 'closed', failures: [], closedAt: now, reopenStreak }, trial === 'job' ? 0 : run);
  const nextCheckAt = probe.afterFailedCheck(state, now);
  return moved(circuit, {
    status: 'open',
    openedAt,
    nextCheckAt,
    failedChecks: failedChecks + 1,
    reopenStreak,
    reason,
    ...trialOf(trial),
  });
}

/** The `trial` field of an open or half-open state: none for a probe's. */
function trialOf(trial: Trial | undefined): { readonly trial?: Trial } {
  return trial === undefined ? {} : { trial };
}

/** `circuit` moved to state `to` with the client-error run `run` (its own by default), one version on. */
function moved(circuit: Circuit, to: CircuitState, run = circuit.clientErrorRun): Circuit {
  return freezeCircuit({ ...circuit, state: to, clientErrorRun: run, version: circuit.version + 1 });
}

/** `circuit` with the client-error run `run`: itself when the run is unchanged, else one version on. */
function counted(circuit: Circuit, run: number): Circuit {
  return run === circuit.clientErrorRun ? circuit : moved(circuit, circuit.state, run);
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
  | { readonly open: true; readonly reason: string; readonly trial?: Trial }
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

/**
 * `circuit` as a new frozen object; its state, hold and transitions are frozen in place, so a circuit shares them with
 * the next. Every circuit the transitions and the JSON codec return is made by it.
 */
export function freezeCircuit(circuit: Circuit): Circuit {
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
