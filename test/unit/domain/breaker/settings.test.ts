import { DEFAULT_BREAKER_SETTINGS, parseBreakerSettings } from '../../../../lib/domain/breaker/settings';
import { ConfigError } from '../../../../lib/errors';
import { thrown } from '../../../helpers/thrown';

describe('parseBreakerSettings', () => {
  describe('defaults', () => {
    it('fills every key left out with its default', () => {
      expect(parseBreakerSettings({})).toEqual({
        failureThreshold: 5,
        windowSeconds: 30,
        openSeconds: 1,
        healthCheckSeconds: 2,
        maxOpenSeconds: 300,
        healthCheckTimeoutSeconds: 15,
        callerRejectThreshold: 10,
        probeChecksKey: false,
      });
      expect(parseBreakerSettings({})).toEqual(DEFAULT_BREAKER_SETTINGS);
    });

    it('returns the defaults when nothing is configured', () => {
      expect(parseBreakerSettings(undefined)).toEqual(DEFAULT_BREAKER_SETTINGS);
    });

    it('keeps given values and fills the rest', () => {
      expect(parseBreakerSettings({ failureThreshold: 3, windowSeconds: 2.5 })).toEqual({
        ...DEFAULT_BREAKER_SETTINGS,
        failureThreshold: 3,
        windowSeconds: 2.5,
      });
    });

    it('accepts every bound of every range', () => {
      const low = {
        failureThreshold: 1,
        windowSeconds: 1,
        openSeconds: 1,
        healthCheckSeconds: 1,
        maxOpenSeconds: 1,
        healthCheckTimeoutSeconds: 1,
        callerRejectThreshold: 1,
        probeChecksKey: false,
      };
      const high = {
        failureThreshold: 1000,
        windowSeconds: 3600,
        openSeconds: 3600,
        healthCheckSeconds: 3600,
        maxOpenSeconds: 86_400,
        healthCheckTimeoutSeconds: 900,
        callerRejectThreshold: 1000,
        probeChecksKey: true,
      };
      expect(parseBreakerSettings(low)).toEqual(low);
      expect(parseBreakerSettings(high)).toEqual(high);
    });

    it('returns a frozen object, and freezes the defaults too', () => {
      expect(Object.isFrozen(parseBreakerSettings({ openSeconds: 2 }))).toBe(true);
      expect(Object.isFrozen(DEFAULT_BREAKER_SETTINGS)).toBe(true);
    });
  });

  describe('ranges', () => {
    it.each([
      ['failureThreshold', 0, 'must be an integer from 1 to 1000; got 0'],
      ['failureThreshold', 1001, 'must be an integer from 1 to 1000; got 1001'],
      ['failureThreshold', 2.5, 'must be an integer from 1 to 1000; got 2.5'],
      ['windowSeconds', 0.5, 'must be a number from 1 to 3600; got 0.5'],
      ['windowSeconds', 3601, 'must be a number from 1 to 3600; got 3601'],
      ['openSeconds', 0, 'must be a number from 1 to 3600; got 0'],
      ['openSeconds', 3601, 'must be a number from 1 to 3600; got 3601'],
      ['healthCheckSeconds', 0, 'must be a number from 1 to 3600; got 0'],
      ['healthCheckSeconds', 3601, 'must be a number from 1 to 3600; got 3601'],
      ['maxOpenSeconds', 86_401, 'must be a number from 1 to 86400; got 86401'],
      ['healthCheckTimeoutSeconds', 0, 'must be a number from 1 to 900; got 0'],
      ['healthCheckTimeoutSeconds', 901, 'must be a number from 1 to 900; got 901'],
      ['callerRejectThreshold', 0, 'must be an integer from 1 to 1000; got 0'],
      ['callerRejectThreshold', 1001, 'must be an integer from 1 to 1000; got 1001'],
      ['callerRejectThreshold', 2.5, 'must be an integer from 1 to 1000; got 2.5'],
      ['probeChecksKey', 'yes', 'must be true or false; got "yes"'],
      ['probeChecksKey', 1, 'must be true or false; got 1'],
    ])('refuses %s = %p, naming the field and its range', (key, value, problem) => {
      const error = thrown(ConfigError, () => parseBreakerSettings({ [key]: value }));
      expect(error.field).toBe(`circuit.${key}`);
      expect(error.problem).toBe(problem);
      expect(error.message).toBe(`circuit.${key}: ${problem}`);
    });

    it.each([
      ['"5"', '5'],
      ['null', null],
      ['NaN', Number.NaN],
      ['Infinity', Number.POSITIVE_INFINITY],
    ])('refuses a non-number value (%s)', (_label, value) => {
      expect(thrown(ConfigError, () => parseBreakerSettings({ openSeconds: value })).field).toBe('circuit.openSeconds');
    });

    it('refuses maxOpenSeconds below openSeconds', () => {
      const error = thrown(ConfigError, () => parseBreakerSettings({ openSeconds: 60, maxOpenSeconds: 30 }));
      expect(error.message).toBe('circuit.maxOpenSeconds: must be a number from 60 (openSeconds) to 86400; got 30');
    });

    it('says when the default maxOpenSeconds is what falls below a raised openSeconds', () => {
      expect(thrown(ConfigError, () => parseBreakerSettings({ openSeconds: 600 })).message).toBe(
        'circuit.maxOpenSeconds: must be a number from 600 (openSeconds) to 86400; got 300 (the default)',
      );
    });

    it('accepts maxOpenSeconds equal to openSeconds', () => {
      expect(parseBreakerSettings({ openSeconds: 60, maxOpenSeconds: 60 }).maxOpenSeconds).toBe(60);
    });
  });

  describe('shape', () => {
    it('refuses an unknown key, naming it and the allowed keys', () => {
      const error = thrown(ConfigError, () => parseBreakerSettings({ threshold: 5 }));
      expect(error.field).toBe('circuit.threshold');
      expect(error.problem).toMatch(
        /unknown key; allowed keys are failureThreshold, windowSeconds, .*healthCheckTimeoutSeconds/,
      );
    });

    it.each([
      ['null', null],
      ['an array', [5]],
      ['a number', 5],
      ['a string', 'fast'],
    ])('refuses %s in place of the object', (_label, value) => {
      expect(thrown(ConfigError, () => parseBreakerSettings(value)).message).toMatch(
        /^circuit: must be an object with optional keys/,
      );
    });

    it('names errors after the field it is given', () => {
      expect(thrown(ConfigError, () => parseBreakerSettings({ windowSeconds: 0 }, 'lanes[1].circuit')).field).toBe(
        'lanes[1].circuit.windowSeconds',
      );
    });
  });
});
