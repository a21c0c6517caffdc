import { parseNumberSettings, type NumberRange } from '../settings';

/** How dispatch is spread over time. */
export interface PacingSettings {
  /**
   * Fraction of each sliding tier's limit that may go back to back. 0 spaces every message evenly at the tightest
   * tier's rate; 1 lets a whole window's quota go at once. @default 0
   */
  readonly burstFraction: number;
  /** Rate fraction a slow-start ramp begins at. @default 0.25 */
  readonly rampStartFraction: number;
  /** How long a slow-start ramp takes to reach the full rate; 0 disables it. @default 30 */
  readonly rampSeconds: number;
  /** The most jitter added when a pause (a 429's `Retry-After`) is lifted, so callers do not resume in step. @default 1000 */
  readonly pauseJitterMs: number;
  /**
   * How much longer one call may take to reach the API than another (spread of invoke, start and network latency).
   * The API counts arrivals, the ledger counts dispatches: smoothing spaces dispatches as if every sliding window
   * were this much longer, so that arrivals up to this much late still fit every window. Costs
   * `arrivalMarginMs / W` of a tier's rate (10 % of a per-second tier for 100 ms). @default 0
   */
  readonly arrivalMarginMs: number;
}

/** Defaults of {@link PacingSettings}. */
export const DEFAULT_PACING_SETTINGS: PacingSettings = Object.freeze({
  burstFraction: 0,
  rampStartFraction: 0.25,
  rampSeconds: 30,
  pauseJitterMs: 1000,
  arrivalMarginMs: 0,
});

const PACING_RANGES: { readonly [K in keyof PacingSettings]: NumberRange } = {
  burstFraction: { min: 0, max: 1 },
  rampStartFraction: { min: 0.01, max: 1 },
  rampSeconds: { min: 0, max: 3600 },
  pauseJitterMs: { min: 0, max: 60_000 },
  arrivalMarginMs: { min: 0, max: 10_000 },
};

/**
 * Validates pacing settings (an object of optional keys) and fills in defaults.
 * @throws ConfigError naming the field and its allowed range, or an unknown key.
 */
export function parsePacingSettings(input: unknown, field = 'pacing'): PacingSettings {
  return parseNumberSettings(input, field, DEFAULT_PACING_SETTINGS, PACING_RANGES);
}
