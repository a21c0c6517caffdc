import type { PacingSettings } from '../../lib/domain/pacing/settings';

/**
 * Pacing that spaces jobs evenly and adds nothing of its own: no burst, no ramp, no jitter, no arrival margin or call
 * allowance, no dispatch lead, no batch window. `overrides` sets what a test varies.
 */
export function smoothPacing(overrides: Partial<PacingSettings> = {}): PacingSettings {
  return {
    burstFraction: 0,
    spreadLongTiers: false,
    rampStartFraction: 1,
    rampSeconds: 0,
    pauseJitterMs: 0,
    arrivalMarginMs: 0,
    callAllowanceMs: 0,
    dispatchLeadMs: 0,
    maxDispatchLeadMs: 0,
    batchWindowMs: 0,
    ...overrides,
  };
}
