import { withoutHandBack } from '../../../../lib/domain/quota/handBack';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import type { LedgerJSON, SlidingTierJSON } from '../../../../lib/domain/quota/ledgerJSON';
import { BUCKETS_PER_WINDOW } from '../../../../lib/domain/quota/slidingCounter';
import { parseTiers, type Costs, type Tier } from '../../../../lib/domain/quota/tiers';
import { QuotaExceededError, StateFormatError } from '../../../../lib/errors';
import { thrown } from '../../../helpers/thrown';

const SECOND = 1_000;
const MINUTE = 60_000;
const utc = (iso: string) => Date.parse(iso);

/** Noon UTC on 2026-06-01: a whole second, so it starts a bucket of every sliding tier. */
const T0 = utc('2026-06-01T12:00:00.000Z');

const tiers = (json: unknown): readonly Tier[] => parseTiers(json);

/**
 * When units charged at `t` stop counting in a sliding window of `windowMs`: the ledger keeps them in bucket
 * `k = floor(t / g)`, `g = W / BUCKETS_PER_WINDOW`, as if they had arrived at the bucket's last ms.
 */
function bucketExpiry(t: number, windowMs: number): number {
  const g = windowMs / BUCKETS_PER_WINDOW;
  const k = Math.floor(t / g);
  return (k + 1) * g - 1 + windowMs;
}

function reserveMany(ledger: QuotaLedger, now: number, count: number, cost = 1): void {
  for (let i = 0; i < count; i++) ledger.reserve(now, { cost });
}

const used = (ledger: QuotaLedger, now: number) => ledger.usage(now).map((u) => u.used);

describe('QuotaLedger', () => {
  describe('earliestFit', () => {
    it('fits at once, with no binding tier, while every tier has room', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 3, per: 'day' },
        ]),
      );
      reserveMany(ledger, T0, 2);
      expect(ledger.earliestFit(T0, { cost: 1 })).toEqual({ at: T0, tier: -1 });
    });

    it('holds the 11th message of a full 10/second tier until the conservative bucket expiry, and not one ms less', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
      const t0 = T0 + 2; // mid-bucket: g = 1000 / 250 = 4 ms, so the bucket is [T0, T0 + 4)
      reserveMany(ledger, t0, 10);
      const expiry = bucketExpiry(t0, SECOND);
      expect(expiry).toBe(T0 + 4 - 1 + 1000); // the bucket's last ms, T0 + 3, plus the window
      expect(ledger.earliestFit(t0, { cost: 1 })).toEqual({ at: expiry, tier: 0 });
      expect(ledger.earliestFit(expiry - 1, { cost: 1 })).toEqual({ at: expiry, tier: 0 });
      expect(ledger.earliestFit(expiry, { cost: 1 })).toEqual({ at: expiry, tier: -1 });
    });

    it('holds a full 500/minute tier until its 240 ms bucket expires', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 500, per: 'minute' }]));
      const t0 = T0 + 100;
      reserveMany(ledger, t0, 500);
      const expiry = bucketExpiry(t0, MINUTE);
      expect(expiry).toBe(T0 + 240 - 1 + 60_000);
      expect(ledger.earliestFit(t0 + 30_000, { cost: 1 })).toEqual({ at: expiry, tier: 0 });
      expect(ledger.earliestFit(expiry, { cost: 1 })).toEqual({ at: expiry, tier: -1 });
    });

    it('frees history oldest bucket first, only as far as the cost needs', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second', unit: 'cost' }]));
      ledger.reserve(T0, { cost: 4 });
      ledger.reserve(T0 + 500, { cost: 6 });
      expect(ledger.earliestFit(T0 + 600, { cost: 4 })).toEqual({ at: bucketExpiry(T0, SECOND), tier: 0 });
      expect(ledger.earliestFit(T0 + 600, { cost: 5 })).toEqual({ at: bucketExpiry(T0 + 500, SECOND), tier: 0 });
      expect(bucketExpiry(T0, SECOND)).toBe(T0 + 1003);
      expect(bucketExpiry(T0 + 500, SECOND)).toBe(T0 + 1503);
    });

    it('fits a cost equal to a limit once the tier is empty', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 100, per: 'minute', unit: 'cost' }]));
      expect(ledger.earliestFit(T0, { cost: 100 })).toEqual({ at: T0, tier: -1 });
    });

    it('never fits a cost larger than a tier limit', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'minute', unit: 'cost' },
        ]),
      );
      expect(ledger.earliestFit(T0, { cost: 101 })).toEqual({ at: Number.POSITIVE_INFINITY, tier: 1 });
    });

    it('never fits a cost larger than a calendar cost tier limit', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 50, per: 'day', unit: 'cost' },
        ]),
      );
      expect(ledger.earliestFit(T0, { cost: 51 })).toEqual({ at: Number.POSITIVE_INFINITY, tier: 1 });
    });

    it('names the tier that holds the message back longest', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 15, per: 'minute' },
        ]),
      );
      reserveMany(ledger, T0, 10);
      expect(ledger.earliestFit(T0, { cost: 1 })).toEqual({ at: T0 + 1003, tier: 0 });
      reserveMany(ledger, T0 + 1003, 5); // the minute tier is now full too, and frees up later
      expect(ledger.earliestFit(T0 + 1003, { cost: 1 })).toEqual({ at: bucketExpiry(T0, MINUTE), tier: 1 });
      expect(bucketExpiry(T0, MINUTE)).toBe(T0 + 60_239);
    });

    it('holds a full UTC day tier until midnight UTC and counts afresh after it', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 3, per: 'day' }]));
      ledger.reserve(utc('2026-06-01T10:00:00.000Z'), { cost: 1 });
      ledger.reserve(utc('2026-06-01T11:00:00.000Z'), { cost: 1 });
      ledger.reserve(utc('2026-06-01T12:00:00.000Z'), { cost: 1 });
      const midnight = utc('2026-06-02T00:00:00.000Z');
      expect(ledger.earliestFit(utc('2026-06-01T12:00:00.000Z'), { cost: 1 })).toEqual({ at: midnight, tier: 0 });
      expect(ledger.earliestFit(midnight - 1, { cost: 1 })).toEqual({ at: midnight, tier: 0 });
      expect(ledger.earliestFit(midnight, { cost: 1 })).toEqual({ at: midnight, tier: -1 });
      expect(used(ledger, midnight)).toEqual([0]);
      reserveMany(ledger, midnight, 3);
      expect(ledger.earliestFit(midnight, { cost: 1 })).toEqual({ at: utc('2026-06-03T00:00:00.000Z'), tier: 0 });
    });

    it('holds a full month tier until the first of the next month, across a year end', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 2, per: 'month' }]));
      reserveMany(ledger, utc('2026-12-05T08:00:00.000Z'), 2);
      expect(ledger.earliestFit(utc('2026-12-31T23:59:59.999Z'), { cost: 1 })).toEqual({
        at: utc('2027-01-01T00:00:00.000Z'),
        tier: 0,
      });
      expect(ledger.earliestFit(utc('2027-01-01T00:00:00.000Z'), { cost: 1 })).toEqual({
        at: utc('2027-01-01T00:00:00.000Z'),
        tier: -1,
      });
    });

    it('holds a full day tier until local midnight in a configured time zone', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 3, per: 'day' }]), { timeZone: 'America/New_York' });
      reserveMany(ledger, utc('2026-01-15T20:00:00.000Z'), 3); // 15:00 EST on 15 January
      const localMidnight = utc('2026-01-16T05:00:00.000Z');
      // UTC midnight has passed, but it is still 15 January in New York.
      expect(ledger.earliestFit(utc('2026-01-16T00:30:00.000Z'), { cost: 1 })).toEqual({ at: localMidnight, tier: 0 });
      expect(ledger.earliestFit(localMidnight - 1, { cost: 1 })).toEqual({ at: localMidnight, tier: 0 });
      expect(ledger.earliestFit(localMidnight, { cost: 1 })).toEqual({ at: localMidnight, tier: -1 });
      expect(used(ledger, localMidnight)).toEqual([0]);
    });

    it('only reads: a probe of a later instant forgets nothing that still counts before it', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 2, per: 'second' },
          { limit: 3, per: 'day' },
        ]),
      );
      const midnight = utc('2026-06-02T00:00:00.000Z');
      ledger.reserve(T0, { cost: 1 });
      ledger.reserve(T0 + 100, { cost: 1 });
      // A probe after the first bucket expired, then one where both still count.
      expect(ledger.earliestFit(T0 + 1_050, { cost: 1 })).toEqual({ at: T0 + 1_050, tier: -1 });
      expect(ledger.earliestFit(T0 + 500, { cost: 1 })).toEqual({ at: bucketExpiry(T0, SECOND), tier: 0 });
      ledger.reserve(T0 + 1_050, { cost: 1 });
      // The day is spent: a probe of the next day finds room there, and the day before stays spent.
      expect(ledger.earliestFit(midnight, { cost: 1 })).toEqual({ at: midnight, tier: -1 });
      expect(ledger.earliestFit(T0 + 5_000, { cost: 1 })).toEqual({ at: midnight, tier: 1 });
      expect(used(ledger, T0 + 5_000)).toEqual([0, 3]);
    });
  });

  describe('limitTo', () => {
    it('holds a tier to a lower limit in force, and lets it back to the configured one', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
      ledger.limitTo([6]);
      reserveMany(ledger, T0, 6);

      const held = ledger.earliestFit(T0, { cost: 1 });
      ledger.limitTo([10]);

      expect(held).toEqual({ at: bucketExpiry(T0, SECOND), tier: 0 });
      expect(ledger.earliestFit(T0, { cost: 1 })).toEqual({ at: T0, tier: -1 });
    });

    it('never refuses for good a message the configured limit admits: one larger than the limit in force waits for an empty window', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 100, per: 'minute', unit: 'cost' }]));
      ledger.limitTo([0]);
      ledger.reserve(T0, { cost: 40 });

      expect(ledger.earliestFit(T0, { cost: 50 })).toEqual({ at: bucketExpiry(T0, MINUTE), tier: 0 });
      expect(ledger.earliestFit(T0, { cost: 101 }).at).toBe(Number.POSITIVE_INFINITY);
    });

    it('ignores a limit at or above the configured one, and holds calendar tiers too', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 5, per: 'day' },
        ]),
      );
      ledger.limitTo([50, 2]);
      reserveMany(ledger, T0, 2);

      expect(ledger.earliestFit(T0, { cost: 1 }).tier).toBe(1);
      expect(() => ledger.reserve(T0, { cost: 1 })).toThrow(QuotaExceededError);
    });
  });

  describe('reserve', () => {
    it('charges every tier, in requests or in cost units', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'minute', unit: 'cost' },
          { limit: 20, per: 'day' },
        ]),
      );
      ledger.reserve(T0, { cost: 7 });
      ledger.reserve(T0 + 10, { cost: 3 });
      expect(used(ledger, T0 + 10)).toEqual([2, 10, 2]);
    });

    it('returns the dispatch instant, the cost and the calendar window keys', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 20000, per: 'day' },
          { limit: 900, per: 'month', unit: 'cost' },
        ]),
      );
      expect(ledger.reserve(T0, { cost: 5 })).toEqual({
        at: T0,
        costs: { cost: 5 },
        windows: { 'day:requests': '2026-06-01', 'month:cost': '2026-06' },
      });
    });

    it('keys calendar windows in the configured time zone', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 20000, per: 'day' },
          { limit: 900, per: 'month' },
        ]),
        { timeZone: 'America/New_York' },
      );
      // 02:00Z on 1 July is still 30 June in New York.
      expect(ledger.reserve(utc('2026-07-01T02:00:00.000Z'), { cost: 1 }).windows).toEqual({
        'day:requests': '2026-06-30',
        'month:requests': '2026-06',
      });
    });

    it('carries no window keys when every tier slides', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'hour' },
        ]),
      );
      expect(ledger.reserve(T0, { cost: 1 }).windows).toEqual({});
    });

    it('throws QuotaExceededError with the binding tier and retryAt, and charges nothing', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 100, per: 'minute', unit: 'cost' },
          { limit: 10, per: 'second' },
          { limit: 50, per: 'day' },
        ]),
      );
      reserveMany(ledger, T0, 10);
      const before = JSON.stringify(ledger.toJSON());
      const error = thrown(QuotaExceededError, () => ledger.reserve(T0 + 500, { cost: 1 }));
      expect(error).toMatchObject({ tier: 1, retryAt: T0 + 1003, code: 'QUOTA_EXCEEDED', name: 'QuotaExceededError' });
      expect(error.message).toBe(`reservation does not fit quota tier #1; earliest fit at ${T0 + 1003}`);
      expect(JSON.stringify(ledger.toJSON())).toBe(before);
      expect(used(ledger, T0 + 500)).toEqual([10, 10, 10]);
    });

    it('throws with retryAt Infinity for a cost no tier can ever hold', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'minute', unit: 'cost' },
        ]),
      );
      expect(thrown(QuotaExceededError, () => ledger.reserve(T0, { cost: 101 }))).toMatchObject({
        tier: 1,
        retryAt: Number.POSITIVE_INFINITY,
      });
      expect(used(ledger, T0)).toEqual([0, 0]);
    });

    it('throws until a calendar window ends, and succeeds at its first ms', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 1, per: 'day' }]));
      ledger.reserve(utc('2026-06-01T23:00:00.000Z'), { cost: 1 });
      expect(
        thrown(QuotaExceededError, () => ledger.reserve(utc('2026-06-01T23:59:59.999Z'), { cost: 1 })),
      ).toMatchObject({ tier: 0, retryAt: utc('2026-06-02T00:00:00.000Z') });
      expect(ledger.reserve(utc('2026-06-02T00:00:00.000Z'), { cost: 1 }).windows).toEqual({
        'day:requests': '2026-06-02',
      });
    });
  });

  describe('settle', () => {
    const mixed = () =>
      tiers([
        { limit: 10, per: 'second' },
        { limit: 100, per: 'minute', unit: 'cost' },
        { limit: 20, per: 'day' },
      ]);

    it('gives back every tier when the call never reached the API, freeing a slot at once', () => {
      const ledger = new QuotaLedger(mixed());
      const reservations = Array.from({ length: 10 }, () => ledger.reserve(T0, { cost: 5 }));
      expect(ledger.earliestFit(T0 + 1, { cost: 5 })).toEqual({ at: T0 + 1003, tier: 0 });
      ledger.settle({ reservation: reservations[3]!, actual: null });
      expect(used(ledger, T0 + 1)).toEqual([9, 45, 9]);
      expect(ledger.earliestFit(T0 + 1, { cost: 5 })).toEqual({ at: T0 + 1, tier: -1 });
    });

    it('refunds only cost tiers when the actual cost is smaller', () => {
      const ledger = new QuotaLedger(mixed());
      const reservation = ledger.reserve(T0, { cost: 10 });
      ledger.settle({ reservation, actual: { cost: 4 } });
      expect(used(ledger, T0 + 1)).toEqual([1, 4, 1]);
    });

    it('keeps the request tiers charged when the call cost nothing', () => {
      const ledger = new QuotaLedger(mixed());
      const reservation = ledger.reserve(T0, { cost: 10 });
      ledger.settle({ reservation, actual: { cost: 0 } });
      expect(used(ledger, T0 + 1)).toEqual([1, 0, 1]);
    });

    it('charges the difference on cost tiers when the actual cost is larger', () => {
      const ledger = new QuotaLedger(mixed());
      const reservation = ledger.reserve(T0, { cost: 10 });
      ledger.settle({ reservation, actual: { cost: 95 } });
      expect(used(ledger, T0 + 1)).toEqual([1, 95, 1]);
      expect(ledger.earliestFit(T0 + 1, { cost: 6 })).toEqual({ at: bucketExpiry(T0, MINUTE), tier: 1 });
    });

    it('changes nothing when the actual cost equals the reserved one', () => {
      const ledger = new QuotaLedger(mixed());
      const reservation = ledger.reserve(T0, { cost: 10 });
      const before = JSON.stringify(ledger.toJSON());
      ledger.settle({ reservation, actual: { cost: 10 } });
      expect(JSON.stringify(ledger.toJSON())).toBe(before);
    });

    it('charges a late under-estimate to the bucket it happened in, while that bucket still counts', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second', unit: 'cost' }]));
      const reservation = ledger.reserve(T0, { cost: 2 });
      ledger.reserve(T0 + 500, { cost: 1 });
      ledger.settle({ reservation, actual: { cost: 5 } });
      expect(used(ledger, T0 + 500)).toEqual([6]);
      expect(ledger.earliestFit(T0 + 500, { cost: 5 })).toEqual({ at: T0 + 1003, tier: 0 });
      expect(used(ledger, T0 + 1003)).toEqual([1]);
    });

    it('ignores a settlement whose sliding bucket has already expired, and keeps the history short', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second', unit: 'cost' }]));
      const late = ledger.reserve(T0, { cost: 2 });
      ledger.reserve(T0 + MINUTE, { cost: 1 });
      ledger.settle({ reservation: late, actual: { cost: 5 } });
      ledger.settle({ reservation: late, actual: null });
      expect(ledger.toJSON()).toEqual({ v: 1, tiers: { 'second:cost': { g: 4, b: (T0 + MINUTE) / 4, a: [1] } } });
      expect(used(ledger, T0 + MINUTE)).toEqual([1]);
    });

    it('changes nothing for a calendar window that has already closed', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 3, per: 'day' },
          { limit: 100, per: 'day', unit: 'cost' },
        ]),
      );
      const yesterday = ledger.reserve(utc('2026-06-01T23:59:59.900Z'), { cost: 10 });
      const today = ledger.reserve(utc('2026-06-02T00:00:00.100Z'), { cost: 10 });
      expect(yesterday.windows).toEqual({ 'day:requests': '2026-06-01', 'day:cost': '2026-06-01' });
      expect(today.windows).toEqual({ 'day:requests': '2026-06-02', 'day:cost': '2026-06-02' });
      const now = utc('2026-06-02T00:00:01.000Z');
      ledger.settle({ reservation: yesterday, actual: null });
      expect(used(ledger, now)).toEqual([1, 10]);
      ledger.settle({ reservation: yesterday, actual: { cost: 60 } });
      expect(used(ledger, now)).toEqual([1, 10]);
      ledger.settle({ reservation: today, actual: { cost: 60 } });
      expect(used(ledger, now)).toEqual([1, 60]);
    });

    it('leaves a new day empty when yesterday is settled before the ledger has rolled over', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 100, per: 'day', unit: 'cost' }]));
      const yesterday = ledger.reserve(utc('2026-06-01T23:59:59.900Z'), { cost: 10 });
      ledger.settle({ reservation: yesterday, actual: { cost: 60 } });
      expect(used(ledger, utc('2026-06-02T00:00:00.000Z'))).toEqual([0]);
    });
  });

  describe('toJSON', () => {
    it('stores bucketed history for sliding tiers and window key and units for calendar tiers', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'minute', unit: 'cost' },
          { limit: 3, per: 'day' },
        ]),
      );
      ledger.reserve(T0, { cost: 5 });
      ledger.reserve(T0 + 10, { cost: 7 });
      expect(ledger.toJSON()).toEqual({
        v: 1,
        tiers: {
          'second:requests': { g: 4, b: T0 / 4, a: [1, 0, 1] },
          'minute:cost': { g: 240, b: T0 / 240, a: [12] },
          'day:requests': { w: '2026-06-01', u: 2 },
        },
      });
    });

    it('drops expired history once it is pruned', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
      ledger.reserve(T0, { cost: 1 });
      ledger.reserve(T0 + 900, { cost: 1 });
      expect(used(ledger, T0 + 1003)).toEqual([1]);
      expect(ledger.toJSON()).toEqual({ v: 1, tiers: { 'second:requests': { g: 4, b: (T0 + 900) / 4, a: [1] } } });
    });

    it('stays within BUCKETS_PER_WINDOW + 1 amounts per sliding tier while saturating 50/second, 2000/minute and 100000/day for five minutes', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 50, per: 'second' },
          { limit: 2000, per: 'minute' },
          { limit: 100000, per: 'day' },
        ]),
      );
      const spacing = SECOND / 50; // the second tier's even rate, until the minute tier binds
      const longest = { second: 0, minute: 0 };
      let maxBytes = 0;
      let dispatched = 0;
      for (let now = T0; now < T0 + 5 * MINUTE; now += spacing) {
        now = ledger.earliestFit(now, { cost: 1 }).at;
        ledger.reserve(now, { cost: 1 });
        dispatched++;
        const json = ledger.toJSON();
        longest.second = Math.max(longest.second, (json.tiers['second:requests'] as SlidingTierJSON).a.length);
        longest.minute = Math.max(longest.minute, (json.tiers['minute:requests'] as SlidingTierJSON).a.length);
        maxBytes = Math.max(maxBytes, Buffer.byteLength(JSON.stringify(json)));
      }
      expect(dispatched).toBe(10_001); // 2000 per minute for five minutes, plus one at the last expiry
      expect(longest.second).toBeLessThanOrEqual(BUCKETS_PER_WINDOW + 1);
      expect(longest.minute).toBeLessThanOrEqual(BUCKETS_PER_WINDOW + 1);
      expect(longest.minute).toBe(BUCKETS_PER_WINDOW + 1); // the bound is reached: every minute bucket holds a dispatch
      const finalBytes = Buffer.byteLength(JSON.stringify(ledger.toJSON()));
      console.log(
        `ledger JSON for 50/second + 2000/minute + 100000/day saturated 5 minutes: ${maxBytes} bytes at most, ${finalBytes} bytes at the end`,
      );
      expect(maxBytes).toBeLessThan(4_096);
    });
  });

  describe('snapshot', () => {
    it('holds an allowance as used at its end, so a rehydrated ledger counts every unit the run might dispatch', () => {
      const set = tiers([
        { limit: 10, per: 'second' },
        { limit: 100, per: 'day' },
      ]);
      const ledger = new QuotaLedger(set);
      ledger.reserve(T0, { cost: 1 });
      const until = ledger.allowanceEnd(T0, 4_000);
      expect(until).toBe(T0 + 4_000);
      const partly = QuotaLedger.fromJSON(set, JSON.parse(JSON.stringify(ledger.snapshot({ until, units: [6, 6] }))));
      // 1 dispatched + 6 held: 3 more messages fit now, a 4th only once the dispatched one has left the window.
      expect(partly.usage(T0).map((u) => u.used)).toEqual([7, 7]);
      [0, 1, 2].forEach(() => partly.reserve(T0, { cost: 1 }));
      expect(partly.earliestFit(T0, { cost: 1 }).at).toBe(bucketExpiry(T0, SECOND));
      // A whole second's quota held: the next message waits until the held units leave the window after `until`.
      const full = QuotaLedger.fromJSON(set, JSON.parse(JSON.stringify(ledger.snapshot({ until, units: [10, 10] }))));
      expect(full.earliestFit(T0, { cost: 1 }).at).toBeGreaterThanOrEqual(until + 1_000);
      // The ledger itself is unchanged, and its plain JSON holds nothing extra.
      expect(ledger.usage(T0).map((u) => u.used)).toEqual([1, 1]);
      expect(ledger.toJSON()).toEqual(ledger.snapshot());
    });

    it('ends an allowance before the current calendar window does', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 100, per: 'day' },
        ]),
      );
      const midnight = utc('2026-06-02T00:00:00.000Z');
      expect(ledger.allowanceEnd(midnight - 1_500, 4_000)).toBe(midnight - 1);
    });
  });

  describe('fromJSON', () => {
    const design = () =>
      tiers([
        { limit: 10, per: 'second' },
        { limit: 500, per: 'minute' },
        { limit: 20000, per: 'day' },
        { limit: 900, per: 'minute', unit: 'cost' },
      ]);

    /** A ledger with history spread over several buckets and windows. */
    function busyLedger(): QuotaLedger {
      const ledger = new QuotaLedger(design());
      for (let i = 0; i < 40; i++)
        ledger.reserve(ledger.earliestFit(T0 + i * 37, { cost: 1 + (i % 7) }).at, { cost: 1 + (i % 7) });
      return ledger;
    }

    it('round-trips through JSON.stringify to a ledger that gives identical future answers', () => {
      const original = busyLedger();
      const restored = QuotaLedger.fromJSON(design(), JSON.parse(JSON.stringify(original.toJSON())));
      expect(restored.toJSON()).toEqual(original.toJSON());
      let now = T0 + 1_500;
      for (let i = 0; i < 200; i++) {
        const cost = 1 + (i % 11);
        const fit = original.earliestFit(now, { cost });
        expect(restored.earliestFit(now, { cost })).toEqual(fit);
        now = fit.at;
        expect(restored.reserve(now, { cost })).toEqual(original.reserve(now, { cost }));
      }
      expect(restored.usage(now)).toEqual(original.usage(now));
      expect(restored.toJSON()).toEqual(original.toJSON());
    });

    it('keeps a full tier full after a restart', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
      reserveMany(ledger, T0, 10);
      const restored = QuotaLedger.fromJSON(ledger.tiers, JSON.parse(JSON.stringify(ledger)));
      expect(restored.earliestFit(T0 + 1, { cost: 1 })).toEqual({ at: T0 + 1003, tier: 0 });
    });

    it('starts a newly configured tier empty and drops a tier no longer configured', () => {
      const ledger = new QuotaLedger(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 3, per: 'day' },
        ]),
      );
      reserveMany(ledger, T0, 3);
      const saved = JSON.parse(JSON.stringify(ledger.toJSON())) as LedgerJSON;
      const restored = QuotaLedger.fromJSON(
        tiers([
          { limit: 10, per: 'second' },
          { limit: 5, per: 'hour' },
        ]),
        saved,
      );
      expect(used(restored, T0)).toEqual([3, 0]);
      expect(restored.toJSON()).toEqual({
        v: 1,
        tiers: { 'second:requests': { g: 4, b: T0 / 4, a: [3] }, 'hour:requests': { g: 14_400, b: 0, a: [] } },
      });
    });

    describe('with uncountedUntil: a tier added since the save', () => {
      /** A ledger of 10/second that has sent 10 calls at T0, saved and read back. */
      function savedUnder10PerSecond(): LedgerJSON {
        const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
        reserveMany(ledger, T0, 10);
        return JSON.parse(JSON.stringify(ledger.toJSON())) as LedgerJSON;
      }
      const withMinute = tiers([
        { limit: 10, per: 'second' },
        { limit: 10, per: 'minute' },
      ]);
      /** The uncounted calls may be slotted until 2 s after T0. */
      const until = T0 + 2_000;

      it('counts a sliding tier full until a window after the last call it never counted, and not one bucket more', () => {
        const saved = savedUnder10PerSecond();
        const restored = QuotaLedger.fromJSON(withMinute, saved, { uncountedUntil: until });
        expect(restored.toJSON().tiers['second:requests']).toEqual(saved.tiers['second:requests']);
        // Filled in the bucket after that of `until`, [T0 + 1 920, T0 + 2 160) (buckets of 240 ms), so a window after
        // the next one's last ms.
        const full = bucketExpiry(until + MINUTE / BUCKETS_PER_WINDOW, MINUTE);
        expect(full).toBe(T0 + 2_399 + MINUTE);
        expect(restored.earliestFit(T0 + 5_000, { cost: 1 })).toEqual({ at: full, tier: 1 });
        expect(restored.earliestFit(full, { cost: 1 })).toEqual({ at: full, tier: -1 });
        expect(used(restored, until)).toEqual([0, 10]);
        // A fresh ledger, which nothing was saved for, starts empty.
        expect(used(new QuotaLedger(withMinute, { uncountedUntil: until }), T0)).toEqual([0, 0]);
      });

      it('counts a calendar tier full until the end of the calendar window of the last uncounted call', () => {
        const withDay = tiers([
          { limit: 10, per: 'second' },
          { limit: 1_000, per: 'day' },
        ]);
        const lateNight = utc('2026-06-01T23:59:59.000Z');
        const restored = QuotaLedger.fromJSON(withDay, savedUnder10PerSecond(), { uncountedUntil: lateNight + 2_000 });
        // The calls may reach into 2 June: both days are full.
        expect(restored.earliestFit(T0 + 5_000, { cost: 1 })).toEqual({ at: utc('2026-06-03T00:00:00.000Z'), tier: 1 });
        const sameDay = QuotaLedger.fromJSON(withDay, savedUnder10PerSecond(), { uncountedUntil: until });
        expect(sameDay.earliestFit(T0 + 5_000, { cost: 1 })).toEqual({ at: utc('2026-06-02T00:00:00.000Z'), tier: 1 });
      });

      it('lets no settlement of a call it never counted take any of the fill back', () => {
        const restored = QuotaLedger.fromJSON(withMinute, savedUnder10PerSecond(), { uncountedUntil: until });
        // A call slotted at the very end of the uncounted span never reached the API: it gives its reservation back.
        restored.settle({ reservation: { at: until, costs: { cost: 1 }, windows: {} }, actual: null });
        expect(used(restored, until)).toEqual([0, 10]);
      });

      it('is saved full, so a successor that rehydrates it counts it until the same instant', () => {
        const restored = QuotaLedger.fromJSON(withMinute, savedUnder10PerSecond(), { uncountedUntil: until });
        const full = restored.earliestFit(T0 + 5_000, { cost: 1 }).at;
        expect(full).toBeGreaterThan(until + MINUTE);
        const later = QuotaLedger.fromJSON(withMinute, JSON.parse(JSON.stringify(restored.toJSON())), {
          uncountedUntil: until + 30_000,
        });
        expect(later.earliestFit(T0 + 5_000, { cost: 1 }).at).toBe(full);
      });
    });

    it('counts saved history against a changed limit', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 10, per: 'second' }]));
      reserveMany(ledger, T0, 10);
      const restored = QuotaLedger.fromJSON(tiers([{ limit: 12, per: 'second' }]), JSON.parse(JSON.stringify(ledger)));
      reserveMany(restored, T0 + 1, 2);
      expect(restored.earliestFit(T0 + 1, { cost: 1 })).toEqual({ at: T0 + 1003, tier: 0 });
    });

    it('forgets a saved calendar window once a new one has begun', () => {
      const ledger = new QuotaLedger(tiers([{ limit: 3, per: 'day' }]));
      reserveMany(ledger, utc('2026-06-01T20:00:00.000Z'), 3);
      const restored = QuotaLedger.fromJSON(ledger.tiers, JSON.parse(JSON.stringify(ledger)));
      expect(restored.earliestFit(utc('2026-06-01T21:00:00.000Z'), { cost: 1 })).toEqual({
        at: utc('2026-06-02T00:00:00.000Z'),
        tier: 0,
      });
      expect(used(restored, utc('2026-06-02T00:00:00.000Z'))).toEqual([0]);
    });

    it('rehydrates calendar windows in the configured time zone', () => {
      const options = { timeZone: 'Asia/Kolkata' };
      const ledger = new QuotaLedger(tiers([{ limit: 3, per: 'day' }]), options);
      reserveMany(ledger, utc('2026-06-01T10:00:00.000Z'), 3);
      const restored = QuotaLedger.fromJSON(ledger.tiers, JSON.parse(JSON.stringify(ledger)), options);
      expect(restored.earliestFit(utc('2026-06-01T12:00:00.000Z'), { cost: 1 })).toEqual({
        at: utc('2026-06-01T18:30:00.000Z'),
        tier: 0,
      });
    });

    it.each<[string, unknown, string]>([
      ['null', null, 'expected {"v":1,"tiers":{…}}'],
      ['a string', '{"v":1,"tiers":{}}', 'expected {"v":1,"tiers":{…}}'],
      ['an unknown version', { v: 2, tiers: {} }, 'expected {"v":1,"tiers":{…}}'],
      ['no version', { tiers: {} }, 'expected {"v":1,"tiers":{…}}'],
      ['missing tiers', { v: 1 }, 'missing "tiers"'],
      ['null tiers', { v: 1, tiers: null }, 'missing "tiers"'],
      [
        'a tier that is a number',
        { v: 1, tiers: { 'second:requests': 5 } },
        'tier "second:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'a negative amount',
        { v: 1, tiers: { 'second:requests': { g: 4, b: 1, a: [1, -1] } } },
        'tier "second:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'a zero bucket size',
        { v: 1, tiers: { 'second:requests': { g: 0, b: 1, a: [1] } } },
        'tier "second:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'a fractional bucket index',
        { v: 1, tiers: { 'second:requests': { g: 4, b: 1.5, a: [1] } } },
        'tier "second:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'amounts that are not a list',
        { v: 1, tiers: { 'second:requests': { g: 4, b: 1, a: '1' } } },
        'tier "second:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'a window key that is not a string',
        { v: 1, tiers: { 'day:requests': { w: 20260601, u: 1 } } },
        'tier "day:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'negative calendar units',
        { v: 1, tiers: { 'day:requests': { w: '2026-06-01', u: -1 } } },
        'tier "day:requests" is neither sliding {g,b,a} nor calendar {w,u}',
      ],
      [
        'a sliding tier saved as a calendar one',
        { v: 1, tiers: { 'second:requests': { w: '2026-06-01', u: 3 } } },
        'tier "second:requests" is saved as a calendar tier',
      ],
      [
        'a calendar tier saved as a sliding one',
        { v: 1, tiers: { 'day:requests': { g: 4, b: 1, a: [1] } } },
        'tier "day:requests" is saved as a sliding tier',
      ],
    ])('refuses %s with a StateFormatError', (_what, json, why) => {
      expect.assertions(3);
      try {
        QuotaLedger.fromJSON(
          tiers([
            { limit: 10, per: 'second' },
            { limit: 3, per: 'day' },
          ]),
          json,
        );
      } catch (error) {
        expect(error).toBeInstanceOf(StateFormatError);
        expect((error as StateFormatError).code).toBe('STATE_FORMAT');
        expect((error as StateFormatError).message).toBe(`stored ledger is unreadable: ${why}`);
      }
    });
  });
});

describe('QuotaLedger with an arrival margin', () => {
  const NY_MIDNIGHT = Date.parse('2026-11-24T05:00:00.000Z'); // 2026-11-24 00:00 in America/New_York (EST)

  it("reserves nothing within the margin of a calendar boundary in the ledger's zone: the slot moves past it", () => {
    const ledger = new QuotaLedger(tiers([{ limit: 3, per: 'day' }]), {
      timeZone: 'America/New_York',
      arrivalMarginMs: 50,
    });

    expect(ledger.earliestFit(NY_MIDNIGHT - 51, { cost: 1 }).at).toBe(NY_MIDNIGHT - 51);
    expect(ledger.earliestFit(NY_MIDNIGHT - 50, { cost: 1 }).at).toBe(NY_MIDNIGHT + 50);
    expect(ledger.earliestFit(NY_MIDNIGHT + 49, { cost: 1 }).at).toBe(NY_MIDNIGHT + 50);
    expect(() => ledger.reserve(NY_MIDNIGHT - 20, { cost: 1 })).toThrow();
    expect(ledger.reserve(NY_MIDNIGHT + 50, { cost: 1 }).windows).toEqual({ 'day:requests': '2026-11-24' });
  });

  it("moves a full window's next slot past the margin after its end", () => {
    const ledger = new QuotaLedger(tiers([{ limit: 1, per: 'day' }]), {
      timeZone: 'America/New_York',
      arrivalMarginMs: 50,
    });
    ledger.reserve(NY_MIDNIGHT - 3_600_000, { cost: 1 });

    expect(ledger.earliestFit(NY_MIDNIGHT - 1_000, { cost: 1 }).at).toBe(NY_MIDNIGHT + 50);
  });

  it('counts a sliding window the margin longer', () => {
    const ledger = new QuotaLedger(tiers([{ limit: 1, per: 'second' }]), { arrivalMarginMs: 100 });
    ledger.reserve(T0, { cost: 1 });

    expect(ledger.earliestFit(T0 + 1_000, { cost: 1 }).at).toBeGreaterThanOrEqual(T0 + 1_100);
  });
});

describe('withoutHandBack', () => {
  const reservation = { at: 0, costs: { input_tokens: 500, output_tokens: 1_000 }, windows: {} };

  it('counts every unit used below its reservation as reserved, and keeps usage above it', () => {
    expect(
      withoutHandBack({ reservation, actual: { input_tokens: 700, output_tokens: 200 }, id: 'd-1', startDelayMs: 30 }),
    ).toEqual({ reservation, actual: { input_tokens: 700 }, id: 'd-1' });
  });

  it('turns a refund (no call) into a settlement that changes no count and names its dispatch', () => {
    expect(withoutHandBack({ reservation, actual: null, id: 'd-1' })).toEqual({ reservation, actual: {}, id: 'd-1' });
  });

  it('settles to what the full settlement settles, or more, never less', () => {
    const tiers = parseTiers([
      { limit: 10_000, per: 'minute', unit: 'input_tokens' },
      { limit: 10_000, per: 'minute', unit: 'output_tokens' },
    ]);
    const actuals: (Costs | null)[] = [null, { input_tokens: 100 }, { input_tokens: 900, output_tokens: 10 }];
    for (const actual of actuals) {
      const full = new QuotaLedger(tiers);
      const without = new QuotaLedger(tiers);
      const settled = { reservation: full.reserve(0, reservation.costs), actual };
      without.reserve(0, reservation.costs);
      full.settle(settled);
      without.settle(withoutHandBack(settled));
      const used = (ledger: QuotaLedger) => ledger.usage(0).map((u) => u.used);
      used(without).forEach((units, i) => expect(units).toBeGreaterThanOrEqual(used(full)[i] ?? 0));
      expect(used(without)).toEqual([Math.max(500, actual?.['input_tokens'] ?? 0), 1_000]);
    }
  });
});
