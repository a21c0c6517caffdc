import { CalendarTier, parseTiers, SlidingTier, unitsFor, type Tier } from '../../../../lib/domain/quota/tiers';
import { ConfigError } from '../../../../lib/errors';
import { thrown } from '../../../helpers/thrown';

const DOCUMENTED_EXAMPLE =
  '[{"limit":10,"per":"second"},{"limit":500,"per":"minute"},{"limit":20000,"per":"day"},{"limit":90000,"per":"minute","unit":"cost"}]';

describe('parseTiers', () => {
  describe('accepted tier sets', () => {
    it('accepts the documented example and defaults unit to requests', () => {
      expect(parseTiers(JSON.parse(DOCUMENTED_EXAMPLE))).toEqual([
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

    it('gives each tier its kind, and sliding tiers their window', () => {
      const tiers = parseTiers(JSON.parse(DOCUMENTED_EXAMPLE));
      expect(tiers.map((t) => t.kind)).toEqual(['sliding', 'sliding', 'calendar', 'sliding']);
      expect(tiers.map((t) => (t.kind === 'sliding' ? t.windowMs : undefined))).toEqual([
        1_000,
        60_000,
        undefined,
        60_000,
      ]);
      expect(
        parseTiers([
          { limit: 1, per: 'hour' },
          { limit: 1, per: 'month' },
        ]).map((t) => [t.constructor, t.kind]),
      ).toEqual([
        [SlidingTier, 'sliding'],
        [CalendarTier, 'calendar'],
      ]);
    });

    it('returns tiers that serialise to their configured form and parse back unchanged', () => {
      const tiers = parseTiers(JSON.parse(DOCUMENTED_EXAMPLE));
      expect(JSON.parse(JSON.stringify(tiers))).toEqual([
        { limit: 10, per: 'second', unit: 'requests' },
        { limit: 500, per: 'minute', unit: 'requests' },
        { limit: 20000, per: 'day', unit: 'requests' },
        { limit: 90000, per: 'minute', unit: 'cost' },
      ]);
      expect(parseTiers(tiers)).toStrictEqual(tiers);
    });

    it('accepts a requests tier and a cost tier of the same period', () => {
      expect(
        parseTiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'second', unit: 'cost' },
        ]),
      ).toHaveLength(2);
    });

    it('accepts tiers of named units, such as input and output tokens', () => {
      expect(
        parseTiers([
          { limit: 40_000, per: 'minute', unit: 'input_tokens' },
          { limit: 8_000, per: 'minute', unit: 'output_tokens' },
        ]).map((t) => t.unit),
      ).toEqual(['input_tokens', 'output_tokens']);
    });

    it('accepts request tiers when jobs carry no cost', () => {
      expect(parseTiers([{ limit: 10, per: 'second' }], { costsAvailable: false })).toEqual([
        { limit: 10, per: 'second', unit: 'requests' },
      ]);
    });
  });

  describe('refused tier sets', () => {
    it.each([
      [
        'a zero limit',
        [{ limit: 0, per: 'second' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got 0',
      ],
      [
        'a negative limit',
        [{ limit: -5, per: 'second' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got -5',
      ],
      [
        'a non-integer limit',
        [{ limit: 2.5, per: 'second' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got 2.5',
      ],
      [
        'a limit above 1e12',
        [{ limit: 1e12 + 1, per: 'day' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got 1000000000001',
      ],
      [
        'a string limit',
        [{ limit: '10', per: 'second' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got "10"',
      ],
      [
        'a missing limit',
        [{ per: 'second' }],
        'quotas[0].limit',
        'quotas[0].limit: must be an integer from 1 to 1000000000000; got nothing',
      ],
      [
        'an unknown per',
        [
          { limit: 10, per: 'second' },
          { limit: 5, per: 'week' },
        ],
        'quotas[1].per',
        'quotas[1].per: must be one of second, minute, hour, day, month; got "week"',
      ],
      [
        'a missing per',
        [{ limit: 5 }],
        'quotas[0].per',
        'quotas[0].per: must be one of second, minute, hour, day, month; got nothing',
      ],
      [
        'a unit that is no SQS attribute name',
        [{ limit: 5, per: 'day', unit: 'my tokens' }],
        'quotas[0].unit',
        'quotas[0].unit: must be 1 to 256 of the characters A-Z, a-z, 0-9, _, - and . (an SQS message attribute name); got "my tokens"',
      ],
      [
        'a unit that is not a string',
        [{ limit: 5, per: 'day', unit: 42 }],
        'quotas[0].unit',
        "quotas[0].unit: must be 'requests' or the name of a unit such as 'cost', 'input_tokens' or 'output_tokens'; got 42",
      ],
      [
        'an empty list',
        [],
        'quotas',
        'quotas: must hold at least one tier, e.g. [{"limit":10,"per":"second"}]; got an empty list',
      ],
      [
        'an object instead of a list',
        { limit: 10, per: 'second' },
        'quotas',
        'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got {"limit":10,"per":"second"}',
      ],
      [
        'a string instead of a list',
        'ten per second',
        'quotas',
        'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got "ten per second"',
      ],
      [
        'nothing',
        undefined,
        'quotas',
        'quotas: must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got nothing',
      ],
      [
        'a number as a tier',
        [{ limit: 10, per: 'second' }, 42],
        'quotas[1]',
        'quotas[1]: must be an object {"limit", "per", "unit"?}; got 42',
      ],
      ['null as a tier', [null], 'quotas[0]', 'quotas[0]: must be an object {"limit", "per", "unit"?}; got null'],
      [
        'a list as a tier',
        [[10, 'second']],
        'quotas[0]',
        'quotas[0]: must be an object {"limit", "per", "unit"?}; got [10,"second"]',
      ],
      [
        'an unknown key',
        [{ limit: 10, per: 'second', burst: 5 }],
        'quotas[0].burst',
        'quotas[0].burst: unknown key; allowed keys are limit, per, unit',
      ],
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
      expect(error.message).toBe(
        "quotas[2]: duplicates quotas[0] (per 'second', unit 'requests'); keep one tier per period and unit",
      );
    });

    it('refuses a cost tier when jobs carry no cost, and says which units are allowed', () => {
      const error = thrown(ConfigError, () => parseTiers(JSON.parse(DOCUMENTED_EXAMPLE), { costsAvailable: false }));
      expect(error.field).toBe('quotas[3].unit');
      expect(error.message).toBe(
        "quotas[3].unit: 'cost' needs jobs that carry a cost, and these jobs carry none; use unit 'requests' or give the jobs a cost",
      );
    });

    it('names the configured field in its messages', () => {
      const error = thrown(ConfigError, () => parseTiers([{ limit: 0, per: 'second' }], { field: 'QUOTAS' }));
      expect(error.field).toBe('QUOTAS[0].limit');
      expect(error.message).toBe('QUOTAS[0].limit: must be an integer from 1 to 1000000000000; got 0');
    });

    it('shortens a long rejected value in the message', () => {
      const error = thrown(ConfigError, () => parseTiers([{ limit: 10, per: 'x'.repeat(100) }]));
      expect(error.message).toBe(
        `quotas[0].per: must be one of second, minute, hour, day, month; got "${'x'.repeat(56)}...`,
      );
    });
  });
});

const tier = (spec: object): Tier => parseTiers([spec])[0]!;
const utc = (iso: string) => Date.parse(iso);

describe('unitsFor', () => {
  it('takes one unit per request from a requests tier and the cost from a cost tier', () => {
    expect(unitsFor(tier({ limit: 10, per: 'second' }), { cost: 7 })).toBe(1);
    expect(unitsFor(tier({ limit: 10, per: 'day', unit: 'cost' }), { cost: 7 })).toBe(7);
  });
});

describe('SlidingTier', () => {
  describe('steadyRate', () => {
    it('is its limit per window', () => {
      expect(tier({ limit: 10, per: 'second' }).steadyRate()).toEqual({ units: 10, perMs: 1_000 });
      expect(tier({ limit: 500, per: 'minute', unit: 'cost' }).steadyRate()).toEqual({ units: 500, perMs: 60_000 });
      expect(tier({ limit: 7, per: 'hour' }).steadyRate()).toEqual({ units: 7, perMs: 3_600_000 });
    });
  });

  describe('countsUntil', () => {
    it('keeps a call for one window after it, whatever the time zone', () => {
      expect(tier({ limit: 10, per: 'minute' }).countsUntil(1_000, 'America/New_York')).toBe(61_000);
    });
  });

  describe('windowClosesBy', () => {
    it('closes one window length after the call, and not a ms sooner', () => {
      const second = tier({ limit: 10, per: 'second' });
      expect(second.windowClosesBy(5_000, 6_000)).toBe(true);
      expect(second.windowClosesBy(5_000, 5_999)).toBe(false);
    });
  });
});

describe('CalendarTier', () => {
  describe('steadyRate', () => {
    it('is undefined: its quota comes back all at once', () => {
      expect(tier({ limit: 100, per: 'day' }).steadyRate()).toBeUndefined();
      expect(tier({ limit: 100, per: 'month' }).steadyRate()).toBeUndefined();
    });
  });

  describe('countsUntil', () => {
    it('keeps a call until its calendar window ends in the time zone', () => {
      const day = tier({ limit: 10, per: 'day' });
      expect(day.countsUntil(utc('2026-01-15T23:59:59.999Z'), 'UTC')).toBe(utc('2026-01-16T00:00:00.000Z'));
      expect(day.countsUntil(utc('2026-01-16T00:00:00.000Z'), 'UTC')).toBe(utc('2026-01-17T00:00:00.000Z'));
      expect(day.countsUntil(utc('2026-01-15T12:00:00.000Z'), 'America/New_York')).toBe(
        utc('2026-01-16T05:00:00.000Z'),
      );
      expect(tier({ limit: 10, per: 'month' }).countsUntil(utc('2026-02-10T00:00:00.000Z'), 'UTC')).toBe(
        utc('2026-03-01T00:00:00.000Z'),
      );
    });
  });

  describe('windowClosesBy', () => {
    it('never takes its window to close, since where it ends depends on the time zone', () => {
      expect(tier({ limit: 10, per: 'day' }).windowClosesBy(0, Number.MAX_SAFE_INTEGER)).toBe(false);
    });
  });
});
