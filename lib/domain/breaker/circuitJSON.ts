/**
 * A circuit as plain JSON for the store, and back: {@link circuitToJSON} writes only what a circuit holds beyond a
 * circuit stored before its later fields existed, and {@link circuitFromJSON} reads both, checking every field.
 */
import { StateFormatError } from '../../errors';
import { describeValue } from '../describeValue';
import { freezeCircuit } from './circuit';
import type {
  Circuit,
  CircuitState,
  CircuitStatus,
  CircuitTransition,
  ClosedState,
  HalfOpenState,
  OpenState,
  OperatorHold,
  Trial,
} from './state';
import { MAX_TRANSITIONS_KEPT } from './transitionLog';

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

/**
 * Why an open circuit stored before `reason` existed had opened: then only transient failures could open it.
 * Read in place of the missing field.
 */
export const LEGACY_OPEN_REASON = 'transient failures';

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
 * state without `reason` opened on {@link LEGACY_OPEN_REASON}, and one without `trial` is tried with a probe; a half-open state without `probeStartedAt` reads as
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
  return freezeCircuit({ state: stateOf(top.state), pausedUntil, clientErrorRun, hold, transitions, version });
}

/** Where the stored state is found, in error messages. */
const STATE = 'circuit.state';

/** The stored state `value`, read by its `status`. */
function stateOf(value: unknown): CircuitState {
  const raw = object(value, STATE);
  switch (raw.status) {
    case 'closed':
      return closedStateOf(raw);
    case 'open':
      return openStateOf(raw);
    case 'half-open':
      return halfOpenStateOf(raw);
    default:
      return fail(`${STATE}.status`, "must be 'closed', 'open' or 'half-open'", raw.status);
  }
}

function closedStateOf(raw: Record<string, unknown>): ClosedState {
  onlyKeys(raw, STATE, ['status', 'failures', 'closedAt', 'reopenStreak'], `the 'closed' state`);
  const { failures } = raw;
  if (!Array.isArray(failures) || !failures.every((t, i) => Number.isFinite(t) && (i === 0 || t >= failures[i - 1]))) {
    fail(`${STATE}.failures`, 'must be an ascending array of epoch ms', failures);
  }
  return {
    status: 'closed',
    failures: Object.freeze([...(failures as number[])]),
    closedAt: raw.closedAt === null ? null : time(raw, 'closedAt', STATE),
    reopenStreak: count(raw, 'reopenStreak', STATE),
  };
}

function openStateOf(raw: Record<string, unknown>): OpenState {
  onlyKeys(
    raw,
    STATE,
    ['status', 'openedAt', 'nextCheckAt', 'failedChecks', 'reopenStreak', 'reason', 'byOperator', 'trial'],
    `the 'open' state`,
  );
  if (raw.byOperator !== undefined && raw.byOperator !== true)
    fail(`${STATE}.byOperator`, 'must be true when present', raw.byOperator);
  return {
    status: 'open',
    openedAt: time(raw, 'openedAt', STATE),
    nextCheckAt: time(raw, 'nextCheckAt', STATE),
    failedChecks: count(raw, 'failedChecks', STATE),
    reopenStreak: count(raw, 'reopenStreak', STATE),
    reason: reasonOf(raw),
    ...(raw.byOperator === true ? { byOperator: true as const } : {}),
    ...trialOf(raw),
  };
}

function halfOpenStateOf(raw: Record<string, unknown>): HalfOpenState {
  onlyKeys(
    raw,
    STATE,
    [
      'status',
      'openedAt',
      'checkId',
      'checkSentAt',
      'probeStartedAt',
      'failedChecks',
      'reopenStreak',
      'reason',
      'trial',
    ],
    `the 'half-open' state`,
  );
  const { checkId } = raw;
  if (typeof checkId !== 'string' || checkId === '') fail(`${STATE}.checkId`, 'must be a non-empty string', checkId);
  const checkSentAt = time(raw, 'checkSentAt', STATE);
  return {
    status: 'half-open',
    openedAt: time(raw, 'openedAt', STATE),
    checkId,
    checkSentAt,
    probeStartedAt: probeStartOf(raw, checkSentAt),
    failedChecks: count(raw, 'failedChecks', STATE),
    reopenStreak: count(raw, 'reopenStreak', STATE),
    reason: reasonOf(raw),
    ...trialOf(raw),
  };
}

/** An open or half-open state's `trial`, when it has one (stored before it existed, none: a probe's). */
function trialOf(raw: Record<string, unknown>): { readonly trial?: Trial } {
  if (raw.trial === undefined) return {};
  if (raw.trial !== 'job') fail(`${STATE}.trial`, "must be 'job' when present", raw.trial);
  return { trial: 'job' };
}

/** A half-open state's `probeStartedAt`; stored before the probe claim existed, the check's send (`checkSentAt`). */
function probeStartOf(raw: Record<string, unknown>, checkSentAt: number): number | null {
  if (raw.probeStartedAt === undefined) return checkSentAt;
  return raw.probeStartedAt === null ? null : time(raw, 'probeStartedAt', STATE);
}

/** An open or half-open state's `reason`; stored before it existed, {@link LEGACY_OPEN_REASON}. */
function reasonOf(raw: Record<string, unknown>): string {
  const { reason } = raw;
  if (reason === undefined) return LEGACY_OPEN_REASON;
  if (typeof reason !== 'string' || reason === '') fail(`${STATE}.reason`, 'must be a non-empty string', reason);
  return reason;
}

const STATUSES: readonly string[] = ['closed', 'open', 'half-open'] satisfies readonly CircuitStatus[];

function holdOf(value: unknown): OperatorHold {
  const raw = object(value, 'circuit.hold');
  onlyKeys(raw, 'circuit.hold', ['since', 'by'], 'the hold');
  return { since: time(raw, 'since', 'circuit.hold'), by: text(raw, 'by', 'circuit.hold') };
}

function transitionsOf(value: unknown): CircuitTransition[] {
  if (!Array.isArray(value)) fail('circuit.transitions', 'must be an array', value);
  const read = value.map((entry: unknown, i): CircuitTransition => {
    const at = `circuit.transitions[${i}]`;
    const raw = object(entry, at);
    onlyKeys(raw, at, ['at', 'from', 'to', 'reason'], 'a transition');
    return {
      at: time(raw, 'at', at),
      from: status(raw, 'from', at),
      to: status(raw, 'to', at),
      reason: text(raw, 'reason', at),
    };
  });
  return read.slice(-MAX_TRANSITIONS_KEPT);
}

/** Refuses the first key of `raw` (found at `at`) that is not one of `keys`, the fields of `what`. */
function onlyKeys(raw: Record<string, unknown>, at: string, keys: readonly string[], what: string): void {
  const extra = Object.keys(raw).find((key) => !keys.includes(key));
  if (extra !== undefined) fail(`${at}.${extra}`, `is not a field of ${what}`, raw[extra]);
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
