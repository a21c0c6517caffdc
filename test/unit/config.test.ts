import {
  DEFAULT_ORCHESTRATOR_SETTINGS,
  ORCHESTRATOR_RANGES,
  parseServiceConfig,
  STATE_OUTAGE_POLICIES,
} from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { thrown } from '../helpers/thrown';

const quotas = [{ limit: 10, per: 'second' }];

describe('parseServiceConfig', () => {
  it('fills every optional section with its defaults', () => {
    const config = parseServiceConfig({ quotas });
    expect(config.lane).toBe('default');
    expect(config.timeZone).toBe('UTC');
    expect(config.quotas).toEqual([{ limit: 10, per: 'second', unit: 'requests' }]);
    expect(config.orchestrator).toEqual(DEFAULT_ORCHESTRATOR_SETTINGS);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it.each([
    [
      { quotas, colour: 'red' },
      'colour',
      'unknown key; allowed keys are lane, quotas, timeZone, maxInFlight, units, usagePreset, pools, limits, priorities, pacing, circuit, retry, orchestrator',
    ],
    [{ quotas, lane: 'no spaces' }, 'lane', `must be 1 to 64 letters, digits, '-' or '_'; got "no spaces"`],
    [
      { quotas, timeZone: 'Mars/Olympus' },
      'timeZone',
      `must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"`,
    ],
    [{ quotas: [] }, 'quotas', 'must hold at least one tier, e.g. [{"limit":10,"per":"second"}]; got an empty list'],
    [
      { quotas, orchestrator: { leaseTtlMs: 1000 } },
      'orchestrator.leaseTtlMs',
      'must be an integer from 5000 to 900000; got 1000',
    ],
    [
      { quotas, orchestrator: { leaseTtlMs: 9000, flushIntervalMs: 4000 } },
      'orchestrator.flushIntervalMs',
      'must be at most a third of orchestrator.leaseTtlMs (9000), so the lease is renewed well before it can expire; got 4000',
    ],
    [
      { quotas, orchestrator: { visibilityTimeoutMs: 30000, workerTimeoutMs: 30000 } },
      'orchestrator.visibilityTimeoutMs',
      'must exceed orchestrator.workerTimeoutMs (30000), or a message could reappear while its worker still runs; got 30000',
    ],
    [
      // A day: a copy of a message can come back 22 days after its job's record (4 days in a source queue, 14 in a
      // dead-letter queue, 4 again after a redrive), and find it gone.
      { quotas, orchestrator: { idempotencyTtlMs: 86_400_000 } },
      'orchestrator.idempotencyTtlMs',
      'must be an integer from 1900800000 to 31536000000; got 86400000',
    ],
    [{ quotas, pacing: { burstFraction: 2 } }, 'pacing.burstFraction', 'must be a number from 0 to 1; got 2'],
    [
      { quotas, orchestrator: { stateOutage: 'stop' } },
      'orchestrator.stateOutage',
      `must be one of 'pace-in-memory', 'pause'; got "stop"`,
    ],
    [
      { quotas, orchestrator: { stateOutage: 1 } },
      'orchestrator.stateOutage',
      `must be one of 'pace-in-memory', 'pause'; got 1`,
    ],
    [
      { quotas, orchestrator: { leaseTTL: 1 } },
      'orchestrator.leaseTTL',
      'unknown key; allowed keys are leaseTtlMs, flushIntervalMs, circuitPollMs, visibilityTimeoutMs, workerTimeoutMs, idleWaitMs, idleStopMs, invokeBackoffMs, idempotencyTtlMs, stateOutage',
    ],
  ])('refuses %j naming the field and the allowed values', (input, field, problem) => {
    const error = thrown(ConfigError, () => parseServiceConfig(input));
    expect(error.field).toBe(field);
    expect(error.message).toBe(`${field}: ${problem}`);
  });

  describe('orchestrator.stateOutage', () => {
    it("defaults to 'pace-in-memory'", () => {
      expect(parseServiceConfig({ quotas }).orchestrator.stateOutage).toBe('pace-in-memory');
      expect(parseServiceConfig({ quotas, orchestrator: { leaseTtlMs: 60_000 } }).orchestrator).toEqual({
        ...DEFAULT_ORCHESTRATOR_SETTINGS,
        leaseTtlMs: 60_000,
      });
    });

    it("takes 'pause' beside numeric settings, and freezes the section", () => {
      const { orchestrator } = parseServiceConfig({
        quotas,
        orchestrator: { stateOutage: 'pause', flushIntervalMs: 1_000 },
      });
      expect(orchestrator).toEqual({ ...DEFAULT_ORCHESTRATOR_SETTINGS, stateOutage: 'pause', flushIntervalMs: 1_000 });
      expect(Object.isFrozen(orchestrator)).toBe(true);
    });

    it('offers every policy it accepts, and every numeric setting a range', () => {
      for (const stateOutage of STATE_OUTAGE_POLICIES)
        expect(parseServiceConfig({ quotas, orchestrator: { stateOutage } }).orchestrator.stateOutage).toBe(
          stateOutage,
        );
      expect(Object.keys(ORCHESTRATOR_RANGES).sort()).toEqual(
        Object.keys(DEFAULT_ORCHESTRATOR_SETTINGS)
          .filter((k) => k !== 'stateOutage')
          .sort(),
      );
    });
  });

  it('refuses a value that is not an object', () => {
    expect(thrown(ConfigError, () => parseServiceConfig('quotas')).field).toBe('config');
  });
});
