import { transition } from '../../lib/domain/breaker/circuit';
import { circuitPolicyFrom } from '../../lib/domain/breaker/policy';
import { parseBreakerSettings, type BreakerSettings } from '../../lib/domain/breaker/settings';
import type { Circuit, CircuitEvent, CircuitState } from '../../lib/domain/breaker/state';

// The defaults but with the cool-down and the check interval spread out, so the steps are easy to tell apart:
// 5 failures in 30 s open; first check after 10 s; checks every 5 s; cap 300 s; check timeout 15 s; 10 other 4xx in a
// row open.
export const S = parseBreakerSettings({ openSeconds: 10, healthCheckSeconds: 5 });
export const P = circuitPolicyFrom(S);
export const T0 = 1_700_000_000_000;

export const FAILURE: CircuitEvent = { type: 'transient-failure' };
export const started = (checkId: string): CircuitEvent => ({ type: 'health-check-started', checkId });
export const failures = (n: number): CircuitEvent[] => Array.from({ length: n }, () => FAILURE);

export const circuitIn = (state: CircuitState, pausedUntil = 0, clientErrorRun = 0): Circuit => ({
  state,
  pausedUntil,
  clientErrorRun,
  hold: null,
  transitions: [],
  version: 7,
});
export const OPENED_ON = '5 transient failures within 30 s';

/** Circuits and transitions at the instant `now()` gives (a test's clock). */
export function circuitsAt(now: () => number) {
  const apply = (circuit: Circuit, event: CircuitEvent, settings: BreakerSettings = S): Circuit =>
    transition(circuit, event, now(), circuitPolicyFrom(settings));
  const applyAll = (circuit: Circuit, events: readonly CircuitEvent[]): Circuit =>
    events.reduce((c, e) => apply(c, e), circuit);

  /** An open circuit whose first check is due 10 s from now. */
  const openCircuit = (extra: Partial<Extract<CircuitState, { status: 'open' }>> = {}): Circuit =>
    circuitIn({
      status: 'open',
      openedAt: now(),
      nextCheckAt: now() + 10_000,
      failedChecks: 0,
      reopenStreak: 0,
      reason: OPENED_ON,
      ...extra,
    });

  /** A half-open circuit whose check 'c1' was sent just now, not started by any worker yet. */
  const halfOpenCircuit = (extra: Partial<Extract<CircuitState, { status: 'half-open' }>> = {}): Circuit =>
    circuitIn({
      status: 'half-open',
      openedAt: now() - 10_000,
      checkId: 'c1',
      checkSentAt: now(),
      probeStartedAt: null,
      failedChecks: 0,
      reopenStreak: 0,
      reason: OPENED_ON,
      ...extra,
    });

  return { apply, applyAll, openCircuit, halfOpenCircuit };
}
