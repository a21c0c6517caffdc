import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import type { LedgerJSON } from '../../../../lib/domain/quota/ledgerJSON';
import { tierUsageAt } from '../../../../lib/domain/quota/tierUsage';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { StateFormatError } from '../../../../lib/errors';

const utc = (iso: string) => Date.parse(iso);

/** Noon UTC on 2026-06-01: a whole second, so it starts a bucket of every sliding tier. */
const T0 = utc('2026-06-01T12:00:00.000Z');

const TIERS = parseTiers([
  { limit: 5, per: 'second' },
  { limit: 100, per: 'minute', unit: 'cost' },
  { limit: 1_000, per: 'day' },
  { limit: 20_000, per: 'month' },
]);

/** The ledger after a dispatch of `cost` at each of `at`, as a run saves it. */
function savedAfter(timeZone: string, ...at: readonly [number, number][]): LedgerJSON {
  const ledger = new QuotaLedger(TIERS, { timeZone });
  for (const [t, cost] of at) ledger.reserve(t, { cost });
  return ledger.toJSON();
}

describe('tierUsageAt', () => {
  it('reads a ledger never saved as nothing used: every tier has its whole limit left', () => {
    expect(
      tierUsageAt(TIERS, undefined, T0, 'UTC').map(({ tier, used, remaining }) => [tier, used, remaining]),
    ).toEqual([
      ['5/second', 0, 5],
      ['100 cost/minute', 0, 100],
      ['1000/day', 0, 1_000],
      ['20000/month', 0, 20_000],
    ]);
  });

  describe('sliding tiers', () => {
    it('counts the units within the window that ends now, in units of the tier', () => {
      const saved = savedAfter('UTC', [T0, 7], [T0 + 500, 3], [T0 + 1_200, 10]);
      const [second, minute] = tierUsageAt(TIERS, saved, T0 + 1_300, 'UTC');
      // The second's window (T0 + 300, T0 + 1300] holds the last two calls; the minute's all three, by their cost.
      expect(second).toEqual({ tier: '5/second', per: 'second', unit: 'requests', limit: 5, used: 2, remaining: 3 });
      expect(minute).toEqual({
        tier: '100 cost/minute',
        per: 'minute',
        unit: 'cost',
        limit: 100,
        used: 20,
        remaining: 80,
      });
    });

    it('counts nothing once the window has passed every call', () => {
      const saved = savedAfter('UTC', [T0, 7]);
      expect(tierUsageAt(TIERS, saved, T0 + 60_500, 'UTC').map((u) => u.used)).toEqual([0, 0, 1, 1]);
    });

    it('has no reset instant: its quota comes back call by call', () => {
      expect(
        tierUsageAt(TIERS, undefined, T0, 'UTC')
          .slice(0, 2)
          .map((u) => u.resetsAt),
      ).toEqual([undefined, undefined]);
    });
  });

  describe('calendar tiers', () => {
    it('counts the current day and month, and says when each resets', () => {
      const saved = savedAfter('UTC', [T0, 1], [T0 + 1_000, 1], [T0 + 2_000, 1]);
      const [, , day, month] = tierUsageAt(TIERS, saved, T0 + 3_600_000, 'UTC');
      expect(day).toEqual({
        tier: '1000/day',
        per: 'day',
        unit: 'requests',
        limit: 1_000,
        used: 3,
        remaining: 997,
        resetsAt: utc('2026-06-02T00:00:00Z'),
      });
      expect(month).toEqual({
        tier: '20000/month',
        per: 'month',
        unit: 'requests',
        limit: 20_000,
        used: 3,
        remaining: 19_997,
        resetsAt: utc('2026-07-01T00:00:00Z'),
      });
    });

    it("counts a day saved before today's start as 0, and keeps the month", () => {
      const saved = savedAfter('UTC', [T0, 1]);
      const [, , day, month] = tierUsageAt(TIERS, saved, utc('2026-06-02T08:00:00Z'), 'UTC');
      expect(day).toMatchObject({ used: 0, remaining: 1_000, resetsAt: utc('2026-06-03T00:00:00Z') });
      expect(month).toMatchObject({ used: 1, resetsAt: utc('2026-07-01T00:00:00Z') });
    });

    it("counts the windows of the lane's time zone", () => {
      // 02:00 UTC on June 2 is still June 1 in New York (UTC−4): the day saved at noon UTC goes on until 04:00 UTC.
      const saved = savedAfter('America/New_York', [T0, 1]);
      const [, , day] = tierUsageAt(TIERS, saved, utc('2026-06-02T02:00:00Z'), 'America/New_York');
      expect(day).toMatchObject({ used: 1, resetsAt: utc('2026-06-02T04:00:00Z') });
    });

    it('never reports less than nothing remaining, however far a tier went over', () => {
      const saved: LedgerJSON = { v: 1, tiers: { 'day:requests': { w: '2026-06-01', u: 1_500 } } };
      expect(tierUsageAt(TIERS, saved, T0, 'UTC')[2]).toMatchObject({ used: 1_500, remaining: 0 });
    });
  });

  it('refuses a stored ledger that is not one, with a StateFormatError', () => {
    expect(() => tierUsageAt(TIERS, { v: 2 }, T0, 'UTC')).toThrow(StateFormatError);
  });
});
