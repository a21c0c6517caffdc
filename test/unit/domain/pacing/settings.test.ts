import { DEFAULT_PACING_SETTINGS, parsePacingSettings } from '../../../../lib/domain/pacing/settings';
import { ConfigError } from '../../../../lib/errors';
import { thrown } from '../../../helpers/thrown';

describe('parsePacingSettings', () => {
  it('returns the defaults when nothing is configured', () => {
    expect(parsePacingSettings(undefined)).toBe(DEFAULT_PACING_SETTINGS);
    expect(parsePacingSettings({})).toEqual({
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
  });

  it('keeps given values, fills the rest and freezes the result', () => {
    const parsed = parsePacingSettings({ burstFraction: 0.5, rampSeconds: 0 });
    expect(parsed).toEqual({ ...DEFAULT_PACING_SETTINGS, burstFraction: 0.5, rampSeconds: 0 });
    expect(Object.isFrozen(parsed)).toBe(true);
  });

  it('accepts both bounds of every range', () => {
    const low = {
      burstFraction: 0,
      spreadLongTiers: false,
      rampStartFraction: 0.01,
      rampSeconds: 0,
      pauseJitterMs: 0,
      arrivalMarginMs: 0,
      callAllowanceMs: 0,
      dispatchLeadMs: 0,
      maxDispatchLeadMs: 0,
      batchWindowMs: 0,
    };
    const high = {
      burstFraction: 1,
      spreadLongTiers: true,
      rampStartFraction: 1,
      rampSeconds: 3600,
      pauseJitterMs: 60_000,
      arrivalMarginMs: 10_000,
      callAllowanceMs: 10_000,
      dispatchLeadMs: 10_000,
      maxDispatchLeadMs: 10_000,
      batchWindowMs: 10_000,
    };
    expect(parsePacingSettings(low)).toEqual(low);
    expect(parsePacingSettings(high)).toEqual(high);
  });

  it('refuses an unknown key, listing the allowed ones', () => {
    const error = thrown(ConfigError, () => parsePacingSettings({ burst: 0.5 }));
    expect(error.field).toBe('pacing.burst');
    expect(error.message).toBe(
      'pacing.burst: unknown key; allowed keys are burstFraction, spreadLongTiers, rampStartFraction, rampSeconds, pauseJitterMs, arrivalMarginMs, callAllowanceMs, dispatchLeadMs, maxDispatchLeadMs, batchWindowMs',
    );
  });

  it('refuses a value that is not an object', () => {
    const error = thrown(ConfigError, () => parsePacingSettings([0.5]));
    expect(error.field).toBe('pacing');
    expect(error.message).toBe(
      'pacing: must be an object with optional keys burstFraction, spreadLongTiers, rampStartFraction, rampSeconds, pauseJitterMs, arrivalMarginMs, callAllowanceMs, dispatchLeadMs, maxDispatchLeadMs, batchWindowMs; got [0.5]',
    );
  });

  it.each([
    ['burstFraction', -0.1, 'must be a number from 0 to 1; got -0.1'],
    ['burstFraction', 1.5, 'must be a number from 0 to 1; got 1.5'],
    ['rampStartFraction', 0, 'must be a number from 0.01 to 1; got 0'],
    ['rampStartFraction', 1.01, 'must be a number from 0.01 to 1; got 1.01'],
    ['rampSeconds', -1, 'must be a number from 0 to 3600; got -1'],
    ['rampSeconds', 3601, 'must be a number from 0 to 3600; got 3601'],
    ['pauseJitterMs', -1, 'must be a number from 0 to 60000; got -1'],
    ['pauseJitterMs', 60_001, 'must be a number from 0 to 60000; got 60001'],
    ['pauseJitterMs', '500', 'must be a number from 0 to 60000; got "500"'],
    ['arrivalMarginMs', -1, 'must be a number from 0 to 10000; got -1'],
    ['arrivalMarginMs', 10_001, 'must be a number from 0 to 10000; got 10001'],
    ['spreadLongTiers', 'yes', 'must be true or false; got "yes"'],
    ['spreadLongTiers', 1, 'must be true or false; got 1'],
  ])('refuses %s = %p, naming the field and its range', (key, value, problem) => {
    const error = thrown(ConfigError, () => parsePacingSettings({ [key]: value }));
    expect(error.field).toBe(`pacing.${key}`);
    expect(error.message).toBe(`pacing.${key}: ${problem}`);
  });

  it('refuses a maxDispatchLeadMs below the dispatchLeadMs it grows from', () => {
    const error = thrown(ConfigError, () => parsePacingSettings({ dispatchLeadMs: 2000 }));
    expect(error.field).toBe('pacing.maxDispatchLeadMs');
    expect(error.message).toBe(
      'pacing.maxDispatchLeadMs: must be at least pacing.dispatchLeadMs (2000), the lead it grows from; got 1500',
    );
  });

  it('refuses a callAllowanceMs larger than the arrivalMarginMs it is part of', () => {
    const error = thrown(ConfigError, () => parsePacingSettings({ arrivalMarginMs: 20, callAllowanceMs: 21 }));
    expect(error.field).toBe('pacing.callAllowanceMs');
    expect(error.message).toBe(
      'pacing.callAllowanceMs: must be at most pacing.arrivalMarginMs (20), the window it is part of; got 21',
    );
  });

  it('names the configured field', () => {
    expect(thrown(ConfigError, () => parsePacingSettings({ rampSeconds: -1 }, 'PACING')).field).toBe(
      'PACING.rampSeconds',
    );
  });
});
