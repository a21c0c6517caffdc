import { Pacer } from '../../../../lib/domain/pacing/pacer';
import { INITIAL_CHAIN_GAP_MS } from '../../../../lib/domain/pacing/dispatchLead';
import type { PacingSettings } from '../../../../lib/domain/pacing/settings';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { QuotaExceededError } from '../../../../lib/errors';
import { smoothPacing } from '../../../helpers/smoothPacing';
import { thrown } from '../../../helpers/thrown';
import { maxWindowUsage, type Call } from '../../../helpers/windowReferee';

/** Noon UTC on 2026-06-01: a whole second, so it starts a bucket of every sliding tier. */
const T0 = Date.parse('2026-06-01T12:00:00.000Z');

function pacerFor(quotas: unknown, overrides: Partial<PacingSettings> = {}): Pacer {
  return new Pacer(new QuotaLedger(parseTiers(quotas)), smoothPacing(overrides));
}

/** Dispatches `count` messages of `cost` as early as the pacer allows, from `from`; returns their offsets from T0. */
function slots(pacer: Pacer, count: number, cost = 1, from = T0): number[] {
  const offsets: number[] = [];
  let now = from;
  for (let i = 0; i < count; i++) {
    now = pacer.nextSlot(now, { cost });
    pacer.dispatch(now, { cost });
    offsets.push(now - T0);
  }
  return offsets;
}

describe('Pacer', () => {
  describe('limitTo', () => {
    it('spaces calls at the limit in force, and at the configured rate again once it is lifted', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);

      pacer.limitTo([5]);
      const slowed = slots(pacer, 3);
      pacer.limitTo([10]);
      const restored = slots(pacer, 3, 1, T0 + 400);

      expect(slowed).toEqual([0, 200, 400]);
      expect(restored).toEqual([600, 700, 800]);
    });
  });

  describe('nextSlot', () => {
    it('spaces a 10/second tier 100 ms apart when there is no burst', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);
      // The 11th waits 3 ms more for the ledger: the first bucket (g = 4 ms) expires at its last ms + 1000.
      expect(slots(pacer, 12)).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1003, 1103]);
    });

    it('spaces at the shortest tier and spends a longer tier as fast as that allows, then waits for its window', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 30, per: 'minute' },
      ]);
      const sent = slots(pacer, 32);
      // 30 calls 100 ms apart (the second tier's buckets move the 11th on 3 ms), then the 31st once the first has left
      // the minute window (its 240 ms bucket counts it at 239 ms), at the shortest tier's pace.
      expect(sent.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => i * 100 + (i >= 10 ? 3 : 0)));
      expect(sent.slice(30)).toEqual([60_239, 60_339]);
    });

    it('with spreadLongTiers, lets the tightest of two tiers set the spacing', () => {
      const pacer = pacerFor(
        [
          { limit: 10, per: 'second' },
          { limit: 300, per: 'minute' },
        ],
        { spreadLongTiers: true },
      ); // 5 per second
      expect(slots(pacer, 8)).toEqual([0, 200, 400, 600, 800, 1000, 1200, 1400]);
    });

    it('paces every tier of the shortest window, whatever it counts', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'minute' },
        { limit: 300, per: 'minute', unit: 'cost' },
        { limit: 100, per: 'hour' },
      ]);
      // 300 cost units a minute at cost 60: 5 a minute, 12 s apart, though the request tier would take 10.
      expect(slots(pacer, 3, 60)).toEqual([0, 12_000, 24_000]);
    });

    it('spaces by cost units on a cost tier', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 1000, per: 'second', unit: 'cost' },
      ]);
      expect(slots(pacer, 5, 250)).toEqual([0, 250, 500, 750, 1003]);
    });

    it('ignores calendar tiers when spacing', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 20000, per: 'day' },
      ]);
      expect(slots(pacer, 4)).toEqual([0, 100, 200, 300]);
    });

    it('answers at once for an idle pacer', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);
      expect(pacer.nextSlot(T0 + 7, { cost: 1 })).toBe(T0 + 7);
    });

    it('is Infinity for a cost above a tier limit', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 100, per: 'minute', unit: 'cost' },
      ]);
      expect(pacer.nextSlot(T0, { cost: 101 })).toBe(Number.POSITIVE_INFINITY);
      expect(pacer.nextSlot(T0, { cost: 100 })).toBe(T0);
    });

    it('is Infinity for a cost above a limit even while paused', () => {
      const pacer = pacerFor([{ limit: 100, per: 'day', unit: 'cost' }], { pauseJitterMs: 1000 });
      pacer.pause(T0 + 5_000, () => 0.5);
      expect(pacer.nextSlot(T0, { cost: 101 })).toBe(Number.POSITIVE_INFINITY);
    });
  });

  describe('nextSlot with a burstFraction', () => {
    it('1 lets a whole window go back to back, then waits for the window to pass', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { burstFraction: 1 });
      expect(slots(pacer, 11)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1003]);
    });

    it('0.5 lets half a window go back to back, then spaces the rest evenly', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { burstFraction: 0.5 });
      expect(slots(pacer, 11)).toEqual([0, 0, 0, 0, 0, 100, 200, 300, 400, 500, 1003]);
    });

    it('0.5 bursts half a cost tier limit in cost units', () => {
      const pacer = pacerFor([{ limit: 100, per: 'second', unit: 'cost' }], { burstFraction: 0.5 });
      expect(slots(pacer, 7, 10)).toEqual([0, 0, 0, 0, 0, 100, 200]);
    });

    it('gives no burst to a message larger than the burst allowance', () => {
      const pacer = pacerFor([{ limit: 100, per: 'second', unit: 'cost' }], { burstFraction: 0.5 });
      expect(slots(pacer, 2, 60)).toEqual([0, 1003]);
    });

    it('earns the burst back after a window idle', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { burstFraction: 0.5 });
      slots(pacer, 5);
      expect(slots(pacer, 6, 1, T0 + 2_000)).toEqual([2000, 2000, 2000, 2000, 2000, 2100]);
    });
  });

  describe('nextSlot after a late dispatch', () => {
    it('makes up lateness of up to a quarter of an interval at the next slot', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }]);
      pacer.dispatch(T0, { cost: 1 });
      pacer.dispatch(T0 + 250, { cost: 1 }); // due at 200, 50 ms late
      expect(pacer.nextSlot(T0 + 250, { cost: 1 })).toBe(T0 + 400);
    });

    it('restarts the schedule from a dispatch later than that', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }]);
      pacer.dispatch(T0, { cost: 1 });
      pacer.dispatch(T0 + 251, { cost: 1 }); // 51 ms late: the lane was idle, not behind
      expect(pacer.nextSlot(T0 + 251, { cost: 1 })).toBe(T0 + 451);
    });

    it('restarts a tier of more than one message a ms from the ms before: the rest of the ms is not lost', () => {
      const pacer = pacerFor([{ limit: 10_000, per: 'second' }], { arrivalMarginMs: 0 });
      pacer.dispatch(T0, { cost: 1 });
      // Idle for a second: the schedule restarts, and the 10 a ms the tier allows still go in the restart's ms.
      expect(slots(pacer, 11, 1, T0 + 1_000)).toEqual([
        1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1001,
      ]);
    });

    it("keeps two fast tiers' full rate when each sets the other's slot a ms on in turn (a lane's and its pool's)", () => {
      const lane = pacerFor([{ limit: 100_000, per: 'second' }], { arrivalMarginMs: 0 });
      const pool = pacerFor([{ limit: 1_000_000, per: 'second' }], { arrivalMarginMs: 0 });
      const costs = { cost: 1 };
      let at = T0;
      for (let i = 0; i < 1_000; i++) {
        // The slot both agree on, as a lane's run looks for it in its pools.
        for (let pooled = pool.nextSlot(at, costs); pooled !== at; pooled = pool.nextSlot(at, costs))
          at = lane.nextSlot(pooled, costs);
        at = lane.nextSlot(at, costs);
        if (pool.nextSlot(at, costs) !== at) continue;
        lane.dispatch(at, costs);
        pool.dispatch(at, costs);
      }
      // 1,000 at the lane's 100 a ms take 10 ms, not one a ms.
      expect(at - T0).toBeLessThanOrEqual(11);
    });
  });

  describe('nextSlot with an arrivalMarginMs', () => {
    it('spaces dispatches as if each sliding window were the margin longer', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { arrivalMarginMs: 100 });
      expect(slots(pacer, 4)).toEqual([0, 110, 220, 330]);
    });

    it('keeps every sliding window of arrivals within its limit when latencies differ by up to the margin', () => {
      const tiers = parseTiers([{ limit: 10, per: 'second' }]);
      const pacer = new Pacer(new QuotaLedger(tiers), smoothPacing({ arrivalMarginMs: 100 }));
      // Every twentieth call is 100 ms late: a window's first call crowds towards the ten that follow it on time.
      const arrivals = slots(pacer, 200).map((at, i) => ({ at: at + (i % 20 === 0 ? 100 : 0), costs: { cost: 1 } }));
      expect(maxWindowUsage(arrivals, tiers[0]!)).toBe(10);
      const unmargined = slots(pacerFor([{ limit: 10, per: 'second' }]), 200).map((at, i) => ({
        at: at + (i % 20 === 0 ? 100 : 0),
        costs: { cost: 1 },
      }));
      expect(maxWindowUsage(unmargined, tiers[0]!)).toBeGreaterThan(10);
    });
  });

  describe('nextSlot near a day boundary', () => {
    it('never names a slot the ledger refuses: smoothing that pushes a slot into the margin before midnight moves it past', () => {
      const midnight = Date.parse('2026-06-02T00:00:00.000Z');
      const tiers = parseTiers([
        { limit: 10, per: 'second' },
        { limit: 1000, per: 'day' },
      ]);
      const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs: 50 }), smoothPacing({ arrivalMarginMs: 50 }));
      // After a dispatch 130 ms before midnight the ledger would take the next one at once, but smoothing 105 ms later,
      // 25 ms before midnight: so close that the call might arrive in the next day, so the slot moves past the margin.
      pacer.dispatch(midnight - 130, { cost: 1 });
      const slot = pacer.nextSlot(midnight - 100, { cost: 1 });
      expect(slot).toBe(midnight + 50);
      expect(pacer.dispatch(slot, { cost: 1 })).toMatchObject({
        at: midnight + 50,
        windows: { 'day:requests': '2026-06-02' },
      });
    });
  });

  describe('startRamp', () => {
    const ramp = { rampStartFraction: 0.25, rampSeconds: 10 };

    it('starts at a quarter of the rate: the first interval is 4 times the full-rate one', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], ramp);
      pacer.startRamp(T0);
      expect(slots(pacer, 4)).toEqual([0, 400, 758, 1084]);
    });

    it('reaches the full rate 10 s after the ramp starts', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], ramp);
      pacer.startRamp(T0);
      const offsets = slots(pacer, 66);
      expect(offsets.slice(-6)).toEqual([9819, 9920, 10021, 10121, 10221, 10321]);
    });

    it('does not ramp until startRamp is called', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], ramp);
      expect(slots(pacer, 3)).toEqual([0, 100, 200]);
    });
  });

  describe('rampFraction', () => {
    it('is 1 before any ramp has started', () => {
      expect(
        pacerFor([{ limit: 10, per: 'second' }], { rampStartFraction: 0.25, rampSeconds: 10 }).rampFraction(T0),
      ).toBe(1);
    });

    it('rises linearly from rampStartFraction to 1 over rampSeconds', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { rampStartFraction: 0.25, rampSeconds: 10 });
      pacer.startRamp(T0);
      expect([0, 2_500, 5_000, 7_500, 9_999, 10_000, 60_000].map((dt) => pacer.rampFraction(T0 + dt))).toEqual([
        0.25, 0.4375, 0.625, 0.8125, 0.999925, 1, 1,
      ]);
    });

    it('holds rampStartFraction for instants before the ramp start', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { rampStartFraction: 0.25, rampSeconds: 10 });
      pacer.startRamp(T0);
      expect(pacer.rampFraction(T0 - 1_000)).toBe(0.25);
    });

    it('is always 1 when rampSeconds is 0', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { rampStartFraction: 0.25, rampSeconds: 0 });
      pacer.startRamp(T0);
      expect(pacer.rampFraction(T0)).toBe(1);
    });

    it('restarts from rampStartFraction on a new startRamp', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { rampStartFraction: 0.5, rampSeconds: 10 });
      pacer.startRamp(T0);
      pacer.startRamp(T0 + 60_000);
      expect(pacer.rampFraction(T0 + 60_000)).toBe(0.5);
    });
  });

  describe('pause', () => {
    it('holds nextSlot until the pause end plus floor(random() * pauseJitterMs)', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { pauseJitterMs: 1000 });
      pacer.pause(T0 + 5_000, () => 0.4567);
      expect(pacer.pausedUntil).toBe(T0 + 5_456);
      expect(pacer.nextSlot(T0, { cost: 1 })).toBe(T0 + 5_456);
      expect(pacer.nextSlot(T0 + 6_000, { cost: 1 })).toBe(T0 + 6_000);
    });

    it('adds at most pauseJitterMs - 1 of jitter, and none for random() = 0', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { pauseJitterMs: 1000 });
      pacer.pause(T0 + 5_000, () => 0);
      expect(pacer.pausedUntil).toBe(T0 + 5_000);
      pacer.pause(T0 + 5_000, () => 0.999999);
      expect(pacer.pausedUntil).toBe(T0 + 5_999);
    });

    it('is in the past before any pause', () => {
      expect(pacerFor([{ limit: 10, per: 'second' }]).pausedUntil).toBe(Number.NEGATIVE_INFINITY);
    });

    it('extends to a later pause', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { pauseJitterMs: 100 });
      pacer.pause(T0 + 5_000, () => 0.5);
      pacer.pause(T0 + 8_000, () => 0.5);
      expect(pacer.pausedUntil).toBe(T0 + 8_050);
    });

    it('is not shortened by an earlier pause', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { pauseJitterMs: 100 });
      pacer.pause(T0 + 8_000, () => 0.5);
      pacer.pause(T0 + 5_000, () => 0.5);
      expect(pacer.pausedUntil).toBe(T0 + 8_050);
      expect(pacer.nextSlot(T0, { cost: 1 })).toBe(T0 + 8_050);
    });

    it('resumes even spacing after the pause', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);
      slots(pacer, 2);
      pacer.pause(T0 + 3_000, () => 0);
      expect(slots(pacer, 3, 1, T0 + 200)).toEqual([3000, 3100, 3200]);
    });
  });

  describe('blockedUntil', () => {
    it('is undefined while a message of the cost may go now', () => {
      expect(pacerFor([{ limit: 10, per: 'second' }]).blockedUntil(T0)).toBeUndefined();
    });

    it('names the calendar tier whose window is spent, until its end', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 2, per: 'day' },
      ]);
      slots(pacer, 2);
      const midnight = Date.parse('2026-06-02T00:00:00.000Z');
      expect(pacer.blockedUntil(T0 + 1_000)).toEqual({
        kind: 'tier',
        tier: expect.objectContaining({ limit: 2, per: 'day' }),
        until: midnight,
      });
    });

    it('names the tier whose smoothing holds the next message back', () => {
      // Room is left in the hour's window, but a cost of 30 spaces the next message 30 minutes on.
      const pacer = pacerFor([{ limit: 60, per: 'hour', unit: 'cost' }]);
      pacer.dispatch(T0, { cost: 30 });
      expect(pacer.blockedUntil(T0 + 1_000, { cost: 1 })).toMatchObject({
        kind: 'tier',
        tier: { per: 'hour' },
        until: T0 + 30 * 60_000,
      });
    });

    it('names a 429 pause that outlasts every tier', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);
      pacer.pause(T0 + 86_400_000, () => 0);
      expect(pacer.blockedUntil(T0)).toEqual({ kind: 'pause', until: T0 + 86_400_000 });
    });

    it('agrees with nextSlot', () => {
      const pacer = pacerFor([
        { limit: 5, per: 'second' },
        { limit: 100, per: 'minute', unit: 'cost' },
      ]);
      slots(pacer, 3, 7);
      const now = T0 + 450;
      expect(pacer.blockedUntil(now, { cost: 7 })?.until).toBe(pacer.nextSlot(now, { cost: 7 }));
    });
  });

  describe('settle', () => {
    it('makes up a slot given back while its window holds it: the next message goes one interval sooner', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }]);
      const reservations = [0, 200, 400, 600].map((offset) => pacer.dispatch(T0 + offset, { cost: 1 }));
      pacer.settle({ reservation: reservations[1]!, actual: null }, T0 + 650);

      expect(pacer.nextSlot(T0 + 650, { cost: 1 })).toBe(T0 + 650);
      pacer.dispatch(T0 + 650, { cost: 1 });
      expect(pacer.nextSlot(T0 + 650, { cost: 1 })).toBe(T0 + 800);
      expect(pacer.ledger.usage(T0 + 650).map((u) => u.used)).toEqual([4]);
    });

    it('makes up no sooner than the slot given back', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }]);
      const ahead = pacer.dispatch(T0 + 400, { cost: 1 });
      pacer.settle({ reservation: ahead, actual: null }, T0);
      expect(pacer.nextSlot(T0, { cost: 1 })).toBe(T0 + 400);
    });

    it('gives nothing back to smoothing for a slot whose window has passed, nor for a call that reached the API', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }]);
      const old = pacer.dispatch(T0, { cost: 1 });
      const called = pacer.dispatch(T0 + 1_000, { cost: 1 });
      pacer.dispatch(T0 + 1_200, { cost: 1 });
      pacer.settle({ reservation: old, actual: null }, T0 + 1_300);
      pacer.settle({ reservation: called, actual: { cost: 1 } }, T0 + 1_300);
      expect(pacer.nextSlot(T0 + 1_300, { cost: 1 })).toBe(T0 + 1_400);
    });

    it('lengthens the lead by what a worker that started too late reports, with a quarter more', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }], {
        dispatchLeadMs: 250,
        maxDispatchLeadMs: 1_500,
        arrivalMarginMs: 50,
        callAllowanceMs: 30,
      });
      const reservation = pacer.dispatch(T0, { cost: 1 });
      expect(pacer.lead.ms).toBe(250);
      pacer.settle({ reservation, actual: null, startDelayMs: 700 }, T0 + 450);
      expect(pacer.lead.ms).toBe(850); // (700 − 20) × 1.25
    });

    it('widens the chain gap, not the lead, by a FIFO message that waited too long for the one before it', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }], {
        dispatchLeadMs: 250,
        maxDispatchLeadMs: 1_500,
        arrivalMarginMs: 50,
        callAllowanceMs: 30,
      });
      const reservation = pacer.dispatch(T0, { cost: 1 });
      expect(pacer.chainGap.ms).toBe(INITIAL_CHAIN_GAP_MS);
      pacer.settle({ reservation, actual: null, chainGapMs: 420 }, T0 + 450);
      expect(pacer.chainGap.ms).toBe(500); // (420 − 20) × 1.25
      expect(pacer.lead.ms).toBe(250);
    });

    it('never lets the ledger be exceeded, whatever is given back', () => {
      const pacer = pacerFor([{ limit: 5, per: 'second' }], { arrivalMarginMs: 50 });
      const calls: Call[] = [];
      let now = T0;
      for (let i = 0; i < 60; i++) {
        now = pacer.nextSlot(now, { cost: 1 });
        const reservation = pacer.dispatch(now, { cost: 1 });
        if (i % 3 === 1) pacer.settle({ reservation, actual: null }, now);
        else calls.push({ at: now, costs: { cost: 1 } });
      }
      const [tier] = pacer.ledger.tiers;
      expect(maxWindowUsage(calls, tier!)).toBeLessThanOrEqual(5);
      // One in three slots given back and made up: 40 calls in about 40 intervals of 210 ms, not 60.
      expect(calls[calls.length - 1]!.at - T0).toBeLessThan(45 * 210);
    });
  });

  describe('dispatch', () => {
    it('returns the ledger reservation', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 20000, per: 'day' },
      ]);
      expect(pacer.dispatch(T0, { cost: 3 })).toEqual({
        at: T0,
        costs: { cost: 3 },
        windows: { 'day:requests': '2026-06-01' },
      });
      expect(pacer.ledger.usage(T0).map((u) => u.used)).toEqual([1, 1]);
    });

    it('throws QuotaExceededError before the smoothed slot and records nothing', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }]);
      pacer.dispatch(T0, { cost: 1 });
      const before = JSON.stringify(pacer.ledger.toJSON());
      expect(thrown(QuotaExceededError, () => pacer.dispatch(T0 + 50, { cost: 1 })).retryAt).toBe(T0 + 100);
      expect(JSON.stringify(pacer.ledger.toJSON())).toBe(before);
      expect(pacer.nextSlot(T0 + 50, { cost: 1 })).toBe(T0 + 100);
      expect(pacer.dispatch(T0 + 100, { cost: 1 }).at).toBe(T0 + 100);
    });

    it('throws with the binding tier when the ledger is full', () => {
      const pacer = pacerFor(
        [
          { limit: 100, per: 'minute' },
          { limit: 10, per: 'second' },
        ],
        { burstFraction: 1 },
      );
      slots(pacer, 10);
      const error = thrown(QuotaExceededError, () => pacer.dispatch(T0 + 500, { cost: 1 }));
      expect(error).toMatchObject({ tier: 1, retryAt: T0 + 1003 });
      expect(pacer.ledger.usage(T0 + 500).map((u) => u.used)).toEqual([10, 10]);
    });

    it('throws while paused, with the pause end as retryAt', () => {
      const pacer = pacerFor([{ limit: 10, per: 'second' }], { pauseJitterMs: 1000 });
      pacer.pause(T0 + 5_000, () => 0.25);
      expect(thrown(QuotaExceededError, () => pacer.dispatch(T0 + 5_000, { cost: 1 })).retryAt).toBe(T0 + 5_250);
      expect(pacer.ledger.usage(T0 + 5_000).map((u) => u.used)).toEqual([0]);
    });

    it('throws with retryAt Infinity for a cost above a limit', () => {
      const pacer = pacerFor([
        { limit: 10, per: 'second' },
        { limit: 100, per: 'minute', unit: 'cost' },
      ]);
      expect(thrown(QuotaExceededError, () => pacer.dispatch(T0, { cost: 101 }))).toMatchObject({
        tier: 1,
        retryAt: Number.POSITIVE_INFINITY,
      });
    });
  });
});
