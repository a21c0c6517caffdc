import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { ConfigError } from '../../../../lib/errors';
import { thrown } from '../../../helpers/thrown';

const DESIGN_EXAMPLE = '[{"limit":10,"per":"second"},{"limit":500,"per":"minute"},{"limit":20000,"per":"day"},{"limit":90000,"per":"minute","unit":"cost"}]';

describe('parseTiers', () => {
  describe('accepted tier sets', () => {
    it('accepts the DESIGN example and defaults unit to requests', () => {
      expect(parseTiers(JSON.parse(DESIGN_EXAMPLE))).toEqual([
        { limit: 10, per: 'second', unit: 'requests' },
        { limit: 500, per: 'minute', unit: 'requests' },
        { limit: 20000, per: 'day', unit: 'requests' },
        { limit: 90000, per: 'minute', unit: 'cost' },
      ]);
    });

    it('returns a frozen list of frozen tiers', () => {
      const tiers = parseTiers([{ limit: 1, per: 'hour' }]);
      expect(Object.isFrozen(tiers)).toBe(true);
      expect(Object.isFrozen(tiers[0])).toBe(true);
    });

    it('accepts every period and both bounds of the limit', () => {
      expect(
        parseTiers([
          { limit: 1, per: 'second' },
          { limit: 1e12, per: 'minute' },
          { limit: 7, per: 'hour', unit: 'requests' },
          { limit: 8, per: 'day', unit: 'cost' },
          { limit: 9, per: 'month' },
        ]),
      ).toEqual([
        { limit: 1, per: 'second', unit: 'requests' },
        { limit: 1e12, per: 'minute', unit: 'requests' },
        { limit: 7, per: 'hour', unit: 'requests' },
        { limit: 8, per: 'day', unit: 'cost' },
        { limit: 9, per: 'month', unit: 'requests' },
      ]);
    });

    it('accepts a requests tier and a cost tier of the same period', () => {
      expect(parseTiers([{ limit: 10, per: 'second' }, { limit: 100, per: 'second', unit: 'cost' }])).toHaveLength(2);
    });

    it('accepts request tiers when jobs carry no cost', () => {
      expect(parseTiers([{ limit: 10, per: 'second' }], { costsAvailable: false })).toEqual([{ limit: 10, per: 'second', unit: 'requests' }]);
    });
  });

  describe('refused tier sets', () => {
    it.each([
      ['a zero limit', [{ limit: 0, per: 'second' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got 0'],
      ['a negative limit', [{ limit: -5, per: 'second' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got -5'],
      ['a non-integer limit', [{ limit: 2.5, per: 'second' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got 2.5'],
      ['a limit above 1e12', [{ limit: 1e12 + 1, per: 'day' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got 1000000000001'],
      ['a string limit', [{ limit: '10', per: 'second' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got "10"'],
      ['a missing limit', [{ per: 'second' }], 'quotas[0].limit', 'quotas[0].limit: must be an integer from 1 to 1000000000000; got nothing'],
      [
        'an unknown per',
        [{ limit: 10, per: 'second' }, { limit: 5, per: 'week' }],
        'quotas[1].per',
        'quotas[1].per: must be one of second, minute, hour, day, month; got "week"',
      ],
      ['a missing per', [{ limit: 5 }], 'quotas[0].per', 'quotas[0].per: must be one of second, minute, hour, day, month; got nothing'],
      ['an unknown unit', [{ limit: 5, per: 'day', unit: 'tokens' }], 'quotas[0].unit', 'quotas[0].unit: must be one of requests, cost; got "tokens"'],
      ['an empty list', [], 'quotas', 'quotas: must hold at least one tier, e.g. [{"limit":10,"per":"second"}]; got an empty list'],
      ['an object instead of a list', { limit: 10, per: 'second' }, 'quotas', 'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got {"limit":10,"per":"second"}'],
      ['a string instead of a list', 'ten per second', 'quotas', 'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got "ten per second"'],
      ['nothing', undefined, 'quotas', 'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got nothing'],
      ['a number as a tier', [{ limit: 10, per: 'second' }, 42], 'quotas[1]', 'quotas[1]: must be an object {"limit", "per", "unit"?}; got 42'],
      ['null as a tier', [null], 'quotas[0]', 'quotas[0]: must be an object {"limit", "per", "unit"?}; got null'],
      ['a list as a tier', [[10, 'second']], 'quotas[0]', 'quotas[0]: must be an object {"limit", "per", "unit"?}; got [10,"second"]'],
      ['an unknown key', [{ limit: 10, per: 'second', burst: 5 }], 'quotas[0].burst', 'quotas[0].burst: unknown key; allowed keys are limit, per, unit'],
    ])('refuses %s, naming the field and the allowed values', (_what, input, field, message) => {
      const error = thrown(ConfigError, () => parseTiers(input));
      expect(error.field).toBe(field);
      expect(error.message).toBe(message);
      expect(error.code).toBe('CONFIG_INVALID');
    });

    it('refuses a duplicate tier, naming both entries', () => {
      const error = thrown(ConfigError, () =>
        parseTiers([
          { limit: 10, per: 'second' },
          { limit: 500, per: 'minute' },
          { limit: 20, per: 'second', unit: 'requests' },
        ]),
      );
      expect(error.field).toBe('quotas[2]');
      expect(error.message).toBe("quotas[2]: duplicates quotas[0] (per 'second', unit 'requests'); keep one tier per period and unit");
    });

    it('refuses a cost tier when jobs carry no cost, and says which units are allowed', () => {
      const error = thrown(ConfigError, () => parseTiers(JSON.parse(DESIGN_EXAMPLE), { costsAvailable: false }));
      expect(error.field).toBe('quotas[3].unit');
      expect(error.message).toBe("quotas[3].unit: 'cost' needs jobs that carry a cost, and these jobs carry none; use unit 'requests' or give the jobs a cost");
    });

    it('names the configured field in its messages', () => {
      const error = thrown(ConfigError, () => parseTiers([{ limit: 0, per: 'second' }], { field: 'QUOTAS' }));
      expect(error.field).toBe('QUOTAS[0].limit');
      expect(error.message).toBe('QUOTAS[0].limit: must be an integer from 1 to 1000000000000; got 0');
    });

    it('shortens a long rejected value in the message', () => {
      const error = thrown(ConfigError, () => parseTiers([{ limit: 10, per: 'x'.repeat(100) }]));
      expect(error.message).toBe(`quotas[0].per: must be one of second, minute, hour, day, month; got "${'x'.repeat(56)}...`);
    });
  });
});
