/**
 * The breaker's data, as types only: a lane's {@link Circuit}, the states it can be in, and the events that move it.
 * Everything else in the breaker (the state machine in `circuit.ts`, the policy, the JSON codec) stands on these and
 * imports them with `import type`; this file imports nothing. Times are epoch ms.
 */

/** Jobs flow. `failures` are the instants of recent transient failures (ascending, within the window). */
export interface ClosedState {
  readonly status: 'closed';
  readonly failures: readonly number[];
  readonly closedAt: number | null;
  readonly reopenStreak: number;
}

/**
 * What may close an open circuit: `'job'`, one job sent alone whose call succeeds, after a refusal of the caller that
 * a health probe cannot vouch for (see `BreakerSettings.probeChecksKey`). Absent: a health check's probe.
 */
export type Trial = 'job';

/**
 * No job is dispatched; a health check may be sent from `nextCheckAt` on. `reason` says why it opened, for operators.
 * `byOperator`: an operator forced it open, and it stays open until an operator closes it: its `nextCheckAt` is
 * `NEVER_DUE`, and it sends no check. `trial`: the check is a job's call, not a probe.
 */
export interface OpenState {
  readonly status: 'open';
  readonly openedAt: number;
  readonly nextCheckAt: number;
  readonly failedChecks: number;
  readonly reopenStreak: number;
  readonly reason: string;
  readonly byOperator?: true;
  readonly trial?: Trial;
}

/**
 * One health check (`checkId`) was sent; no job is dispatched, but the check's own job when `trial` is `'job'`.
 * `probeStartedAt` is when a worker claimed it and started probing (or calling), `null` while no worker has; `reason`
 * and `trial` are the open state's, kept for the next open.
 */
export interface HalfOpenState {
  readonly status: 'half-open';
  readonly openedAt: number;
  readonly checkId: string;
  readonly checkSentAt: number;
  readonly probeStartedAt: number | null;
  readonly failedChecks: number;
  readonly reopenStreak: number;
  readonly reason: string;
  readonly trial?: Trial;
}

/** Where the circuit stands. Each variant carries only its own data. */
export type CircuitState = ClosedState | OpenState | HalfOpenState;

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

/** A lane's circuit: its state, the rate-limit pause, the operator's hold, its recent transitions, and the version that guards conditional writes. */
export interface Circuit {
  readonly state: CircuitState;
  /** Epoch ms until which a 429 asked us to wait; 0 if never. Enforced by the dispatcher, not by the state. */
  readonly pausedUntil: number;
  /** Job results in a row, across workers and states, that were a 4xx other than 401, 403, 408, 425 and 429; a job success resets it. */
  readonly clientErrorRun: number;
  /** An operator's pause: while set, nothing is dispatched, no job and no health check. `null` when the lane is not paused. */
  readonly hold: OperatorHold | null;
  /** The last `MAX_TRANSITIONS_KEPT` transitions, oldest first. */
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
  /**
   * A worker wants to probe for health check `checkId`, or, with `trial`, to make the call of the job sent as that
   * check. Apply, write, and probe (or call) only if the write succeeds.
   */
  | { readonly type: 'health-check-started'; readonly checkId: string; readonly trial?: Trial }
  /** Health check `checkId` found the API healthy (its job's call succeeded, for a job's trial). */
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

/** The events of operators, which the transitions apply without consulting the policy. */
export type OperatorEvent = Extract<CircuitEvent, { readonly by: string }>;
