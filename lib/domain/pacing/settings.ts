import { ConfigError } from '../../errors';
import { FLAG, parseSettings, type SettingRanges } from '../settings';

/** How dispatch is spread over time. */
export interface PacingSettings {
  /**
   * Fraction of each sliding tier's limit that may go back to back. 0 spaces every message evenly at the tightest
   * tier's rate; 1 lets a whole window's quota go at once. @default 0
   */
  readonly burstFraction: number;
  /**
   * Whether sliding tiers longer than the shortest one are spread evenly over their windows too. Off, calls are
   * spaced at the shortest tier's rate and a longer tier is spent as fast as that allows while there is a backlog (an
   * hour tier of 120 with 6/s sends 120 calls in about 20 s, then waits for its window), so every job ends no later
   * than under spreading. On, for APIs that punish bursts. @default false
   */
  readonly spreadLongTiers: boolean;
  /** Rate fraction a slow-start ramp begins at. @default 0.25 */
  readonly rampStartFraction: number;
  /**
   * How long a slow-start ramp after the circuit closes takes to reach the full rate; 0 disables it. @default 5: the
   * quota is the rate the API has agreed to take, and a relapse re-opens the circuit within a few calls at any rate;
   * a short ramp only spares a just-recovered API a full-rate first second.
   */
  readonly rampSeconds: number;
  /** The most jitter added when a pause (a 429's `Retry-After`) is lifted, so callers do not resume in step. @default 1000 */
  readonly pauseJitterMs: number;
  /**
   * Width of the window in which each call reaches the API: from its slot (the instant its reservation counts it at)
   * to this much after. Workers wait for their slot and give up a call that would start too late (see
   * `callAllowanceMs`), so this covers only the worker's own time to the API and the clock skew between hosts, not
   * its start delay. The API counts arrivals: smoothing spaces slots as if every sliding window were this much longer,
   * the ledger counts each sliding window this much longer, and calendar tiers keep slots this far from their
   * boundaries. Costs `arrivalMarginMs / (W + arrivalMarginMs)` of a tier's rate (2.4 % of a per-second tier for
   * 25 ms). @default 25
   */
  readonly arrivalMarginMs: number;
  /**
   * The part of `arrivalMarginMs` a worker keeps for itself between reading its clock and its call reaching the API:
   * the request's network time and twice the clock skew between orchestrator and worker (it claims the job before it
   * waits for the slot). A worker starts its call no later than `slot + arrivalMarginMs − callAllowanceMs` (the
   * event's `callBy`); one that starts later gives its reservation back. At most `arrivalMarginMs`. @default 15
   */
  readonly callAllowanceMs: number;
  /**
   * How long before its slot a job is dispatched, so that its worker is running by then (Lambda's async invoke and a
   * warm start take tens of ms, the async queue sometimes more); the worker waits for the slot. A worker that starts
   * later than its slot allows gives its reservation back and its job is dispatched again. Costs no throughput, only
   * up to this much of a worker's time per job. The least lead: it grows while workers start too late (see
   * `maxDispatchLeadMs`). @default 250
   */
  readonly dispatchLeadMs: number;
  /**
   * The most the lead grows to while workers start too late (cold starts, Lambda's async queue holding events): a
   * run dispatches that much earlier as lets all but 1 % of its latest 1 000 workers start in time, then falls back
   * to `dispatchLeadMs` once the late starts are over. At least `dispatchLeadMs`. Costs up to this much of a
   * worker's time per job while it lasts, and spares the throughput each slot given back would cost. @default 1500
   */
  readonly maxDispatchLeadMs: number;
  /**
   * How close the slots of the jobs one worker invocation carries are: the buffered jobs whose slots come less than
   * this after the first one's go in one batch, each called at its own slot. One invoke, one worker's wait for the
   * lead and one write of its successes then serve them all. At 2 calls a second and slower each job has its own
   * worker, for whom a batch would only mean waiting; 0 sends one job per invocation at any rate. While late starts
   * have grown the lead past `dispatchLeadMs`, the window grows by as much: each worker then waits that long for its
   * first slot, and more jobs share the wait. @default 500
   */
  readonly batchWindowMs: number;
}

/** Defaults of {@link PacingSettings}. */
export const DEFAULT_PACING_SETTINGS: PacingSettings = Object.freeze({
  burstFraction: 0,
  spreadLongTiers: false,
  rampStartFraction: 0.25,
  rampSeconds: 5,
  pauseJitterMs: 1000,
  arrivalMarginMs: 25,
  callAllowanceMs: 15,
  dispatchLeadMs: 250,
  maxDispatchLeadMs: 1500,
  batchWindowMs: 500,
});

const PACING_RANGES: SettingRanges<PacingSettings> = {
  burstFraction: { min: 0, max: 1 },
  spreadLongTiers: FLAG,
  rampStartFraction: { min: 0.01, max: 1 },
  rampSeconds: { min: 0, max: 3600 },
  pauseJitterMs: { min: 0, max: 60_000 },
  arrivalMarginMs: { min: 0, max: 10_000 },
  callAllowanceMs: { min: 0, max: 10_000 },
  dispatchLeadMs: { min: 0, max: 10_000 },
  maxDispatchLeadMs: { min: 0, max: 10_000 },
  batchWindowMs: { min: 0, max: 10_000, integer: true },
};

/**
 * Validates pacing settings (an object of optional keys) and fills in defaults.
 * @throws ConfigError naming the field and its allowed range, or an unknown key; or when `callAllowanceMs` exceeds
 * `arrivalMarginMs`, or `dispatchLeadMs` exceeds `maxDispatchLeadMs`.
 */
export function parsePacingSettings(input: unknown, field = 'pacing'): PacingSettings {
  const settings = parseSettings(input, field, DEFAULT_PACING_SETTINGS, PACING_RANGES);
  if (settings.callAllowanceMs > settings.arrivalMarginMs) {
    throw new ConfigError(
      `${field}.callAllowanceMs`,
      `must be at most ${field}.arrivalMarginMs (${settings.arrivalMarginMs}), the window it is part of; got ${settings.callAllowanceMs}`,
    );
  }
  if (settings.dispatchLeadMs > settings.maxDispatchLeadMs) {
    throw new ConfigError(
      `${field}.maxDispatchLeadMs`,
      `must be at least ${field}.dispatchLeadMs (${settings.dispatchLeadMs}), the lead it grows from; got ${settings.maxDispatchLeadMs}`,
    );
  }
  return settings;
}
