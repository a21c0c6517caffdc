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
 * - **429 pauses rather than opens.** A rate limit says the API is up and wants us to wait: it sets
 *   `pausedUntil` and leaves the state alone, so quota pressure never counts as an outage.
 * - **Policy passed in.** When to open and when to probe are the {@link CircuitPolicy}'s to decide (see
 *   `policy.ts`); the transitions only store its decisions, so changing either is changing the policy.
 *
 * Callers skip the store write when `transition` returns the same object; every real change has `version + 1`.
 */
import { StateFormatError } from '../../errors';
import { describeValue } from '../describeValue';
import type { CircuitPolicy, ProbePolicy } from './policy';

/** Where the circuit stands. Each variant carries only its own data; times are epoch ms. */
export type CircuitState =
  /** Jobs flow. `failures` are the instants of recent transient failures (ascending, within the window). */
  | { readonly status: 'closed'; readonly failures: readonly number[]; readonly closedAt: number | null; readonly reopenStreak: number }
  /** No job is dispatched; a health check may be sent from `nextCheckAt` on. */
  | { readonly status: 'open'; readonly openedAt: number; readonly nextCheckAt: number; readonly failedChecks: number; readonly reopenStreak: number }
  /** One health check (`checkId`) is in flight; no job is dispatched. */
  | { readonly status: 'half-open'; readonly openedAt: number; readonly checkId: string; readonly checkSentAt: number; readonly failedChecks: number; readonly reopenStreak: number };

/** The closed variant of {@link CircuitState}. */
export type ClosedState = Extract<CircuitState, { readonly status: 'closed' }>;

/** The half-open variant of {@link CircuitState}. */
export type HalfOpenState = Extract<CircuitState, { readonly status: 'half-open' }>;

/** A lane's circuit: its state, the rate-limit pause, and the version that guards conditional writes. */
export interface Circuit {
  readonly state: CircuitState;
  /** Epoch ms until which a 429 asked us to wait; 0 if never. Enforced by the dispatcher, not by the state. */
  readonly pausedUntil: number;
  /** Grows by exactly 1 with every change. */
  readonly version: number;
}

/** What can happen to a circuit. */
export type CircuitEvent =
  /** A job failed with a 5xx, a timeout or a network error. */
  | { readonly type: 'transient-failure' }
  /** A job succeeded. */
  | { readonly type: 'success' }
  /** The API answered 429; `retryAt` (epoch ms, finite) is when it may be called again. Not an outage. */
  | { readonly type: 'rate-limited'; readonly retryAt: number }
  /** An orchestrator wants to send health check `checkId`. Apply, write, and send only if the write succeeds. */
  | { readonly type: 'health-check-sent'; readonly checkId: string }
  /** Health check `checkId` found the API healthy. */
  | { readonly type: 'health-check-ok'; readonly checkId: string }
  /** Health check `checkId` found the API still failing. */
  | { readonly type: 'health-check-failed'; readonly checkId: string };

/** A circuit as plain JSON, for the store. The store's conditional write compares `version`. */
export type CircuitJSON = { readonly version: number; readonly state: CircuitState; readonly pausedUntil: number };

/** A circuit never written: closed, no failures, never closed before, version 0. */
export const INITIAL_CIRCUIT: Circuit = make({ status: 'closed', failures: Object.freeze([]), closedAt: null, reopenStreak: 0 }, 0, 0);

/**
 * Applies `event` at instant `now` (epoch ms), with `policy` deciding when to open and when to probe.
 * @returns `circuit` itself when nothing changes; otherwise a new circuit with `version + 1`.
 * @throws RangeError for a `rate-limited` event whose `retryAt` is not finite.
 */
export function transition(circuit: Circuit, event: CircuitEvent, now: number, policy: CircuitPolicy): Circuit {
  const { state } = circuit;
  if (event.type === 'rate-limited') {
    if (!Number.isFinite(event.retryAt)) throw new RangeError(`retryAt must be a finite epoch ms; got ${event.retryAt}`);
    return event.retryAt > circuit.pausedUntil ? make(state, event.retryAt, circuit.version + 1) : circuit;
  }
  const next = (to: CircuitState): Circuit => make(to, circuit.pausedUntil, circuit.version + 1);

  switch (state.status) {
    case 'closed': {
      if (event.type !== 'transient-failure') return circuit;
      const decision = policy.opening.onFailure([...state.failures, now].sort((a, b) => a - b), now);
      if (!decision.open) return next({ ...state, failures: decision.failures });
      const { nextCheckAt, reopenStreak } = policy.probe.onOpen(state, now);
      return next({ status: 'open', openedAt: now, nextCheckAt, failedChecks: 0, reopenStreak });
    }
    case 'open': {
      if (event.type !== 'health-check-sent' || now < state.nextCheckAt) return circuit;
      const { openedAt, failedChecks, reopenStreak } = state;
      return next({ status: 'half-open', openedAt, checkId: event.checkId, checkSentAt: now, failedChecks, reopenStreak });
    }
    case 'half-open': {
      const { openedAt, failedChecks, reopenStreak } = state;
      if (event.type === 'health-check-sent') {
        // The check in flight is presumed lost only after its timeout; until then it stays the one trial.
        if (now < policy.probe.checkTimeoutAt(state)) return circuit;
        return next({ ...state, checkId: event.checkId, checkSentAt: now, failedChecks: failedChecks + 1 });
      }
      if (!('checkId' in event) || event.checkId !== state.checkId) return circuit;
      if (event.type === 'health-check-ok') return next({ status: 'closed', failures: [], closedAt: now, reopenStreak });
      const nextCheckAt = policy.probe.afterFailedCheck(state, now);
      return next({ status: 'open', openedAt, nextCheckAt, failedChecks: failedChecks + 1, reopenStreak });
    }
  }
}

/** Whether jobs may be dispatched: only while closed. The 429 pause (`pausedUntil`) is checked by the dispatcher. */
export function isDispatchAllowed(circuit: Circuit): boolean {
  return circuit.state.status === 'closed';
}

/**
 * When the next health check may be sent (epoch ms): from OPEN at `nextCheckAt`; from HALF_OPEN once the check in
 * flight has timed out. `undefined` while closed.
 * @param probe the probe policy of the policy given to {@link transition}; the half-open timeout is not stored in
 * the state, so only the same policy agrees with the transitions about it.
 */
export function healthCheckDueAt(circuit: Circuit, probe: ProbePolicy): number | undefined {
  const { state } = circuit;
  if (state.status === 'open') return state.nextCheckAt;
  if (state.status === 'half-open') return probe.checkTimeoutAt(state);
  return undefined;
}

/** The circuit as plain JSON for the store (a copy; nothing is shared with `circuit`). */
export function circuitToJSON(circuit: Circuit): CircuitJSON {
  const { state, pausedUntil, version } = circuit;
  return { version, state: state.status === 'closed' ? { ...state, failures: [...state.failures] } : { ...state }, pausedUntil };
}

/**
 * Reads a circuit back from the store. Keys beside `version`, `state` and `pausedUntil` at the top level are
 * ignored (room for store bookkeeping); inside `state`, only the variant's own keys are accepted.
 * @throws StateFormatError naming the first malformed field.
 */
export function circuitFromJSON(json: unknown): Circuit {
  const top = object(json, 'circuit');
  const version = count(top, 'version', 'circuit');
  const pausedUntil = time(top, 'pausedUntil', 'circuit');
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
      if (!Array.isArray(failures) || !failures.every((t, i) => Number.isFinite(t) && (i === 0 || t >= failures[i - 1]))) {
        fail(`${at}.failures`, 'must be an ascending array of epoch ms', failures);
      }
      const closedAt = raw.closedAt === null ? null : time(raw, 'closedAt', at);
      const state = { status: 'closed', failures: Object.freeze([...(failures as number[])]), closedAt, reopenStreak: count(raw, 'reopenStreak', at) } as const;
      return make(state, pausedUntil, version);
    }
    case 'open': {
      only('openedAt', 'nextCheckAt', 'failedChecks', 'reopenStreak');
      const state = {
        status: 'open',
        openedAt: time(raw, 'openedAt', at),
        nextCheckAt: time(raw, 'nextCheckAt', at),
        failedChecks: count(raw, 'failedChecks', at),
        reopenStreak: count(raw, 'reopenStreak', at),
      } as const;
      return make(state, pausedUntil, version);
    }
    case 'half-open': {
      only('openedAt', 'checkId', 'checkSentAt', 'failedChecks', 'reopenStreak');
      const { checkId } = raw;
      if (typeof checkId !== 'string' || checkId === '') fail(`${at}.checkId`, 'must be a non-empty string', checkId);
      const state = {
        status: 'half-open',
        openedAt: time(raw, 'openedAt', at),
        checkId,
        checkSentAt: time(raw, 'checkSentAt', at),
        failedChecks: count(raw, 'failedChecks', at),
        reopenStreak: count(raw, 'reopenStreak', at),
      } as const;
      return make(state, pausedUntil, version);
    }
    default:
      return fail(`${at}.status`, "must be 'closed', 'open' or 'half-open'", raw.status);
  }
}

function make(state: CircuitState, pausedUntil: number, version: number): Circuit {
  return Object.freeze({ state: Object.freeze(state), pausedUntil, version });
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
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${at}.${key}`, 'must be a finite number (epoch ms)', value);
  return value;
}

function count(record: Record<string, unknown>, key: string, at: string): number {
  const value = record[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(`${at}.${key}`, 'must be a non-negative integer', value);
  return value;
}
