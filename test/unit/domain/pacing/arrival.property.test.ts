import fc from 'fast-check';
import { Pacer } from '../../../../lib/domain/pacing/pacer';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { smoothPacing } from '../../../helpers/smoothPacing';

const T0 = Date.parse('2026-06-01T12:00:00.000Z');

/**
 * The referee: whether `arrivals` (epoch ms) ever hold more than `limit` calls in a sliding window `(T − W, T]`,
 * i.e. whether any `limit + 1` consecutive arrivals lie less than `W` apart.
 */
function exceeds(arrivals: readonly number[], limit: number, windowMs: number): boolean {
  const sorted = [...arrivals].sort((a, b) => a - b);
  return sorted.some((at, i) => i + limit < sorted.length && (sorted[i + limit] ?? 0) - at < windowMs);
}

describe('arrivals held to their slot', () => {
  it("never exceed a sliding tier, whatever the workers' start delays", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.constantFrom('second', 'minute'),
        fc.integer({ min: 0, max: 100 }),
        fc.constantFrom(0, 0.5, 1),
        fc.array(
          fc.record({
            startDelayMs: fc.integer({ min: 0, max: 1_500 }),
            networkShare: fc.double({ min: 0, max: 1, noNaN: true }),
          }),
          { minLength: 1, maxLength: 60 },
        ),
        (limit, per, arrivalMarginMs, burstFraction, workers) => {
          const tiers = parseTiers([{ limit: per === 'second' ? limit : limit * 10, per }]);
          const callAllowanceMs = Math.floor(arrivalMarginMs / 2);
          const settings = smoothPacing({
            burstFraction,
            arrivalMarginMs,
            callAllowanceMs,
            dispatchLeadMs: 250,
            maxDispatchLeadMs: 250,
          });
          const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs }), settings);
          const arrivals: number[] = [];
          let now = T0;
          for (const { startDelayMs, networkShare } of workers) {
            const slot = pacer.nextSlot(now, { cost: 1 });
            const dispatchedAt = Math.max(now, slot - settings.dispatchLeadMs);
            now = dispatchedAt;
            const reservation = pacer.dispatch(slot, { cost: 1 });
            const callBy = slot + arrivalMarginMs - callAllowanceMs;
            // The worker as processJob runs it: waits for the slot, gives the reservation back past callBy; its call
            // takes up to its allowance to arrive.
            const startsAt = Math.max(slot, dispatchedAt + startDelayMs);
            if (startsAt > callBy) pacer.ledger.settle({ reservation, actual: null });
            else arrivals.push(startsAt + networkShare * callAllowanceMs);
          }
          const tier = tiers[0];
          return tier?.kind === 'sliding' && !exceeds(arrivals, tier.limit, tier.windowMs);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('names only slots the ledger takes, across a day boundary, while slots are given back', () => {
    const midnight = Date.parse('2026-06-02T00:00:00.000Z');
    const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 100 }),
        fc.constantFrom(0, 0.5, 1),
        fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 400 }), givenBack: fc.boolean() }), {
          minLength: 1,
          maxLength: 80,
        }),
        (perSecond, perDay, arrivalMarginMs, burstFraction, steps) => {
          const tiers = parseTiers([
            { limit: perSecond, per: 'second' },
            { limit: perDay, per: 'day' },
          ]);
          const settings = smoothPacing({ burstFraction, arrivalMarginMs });
          const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs }), settings);
          const kept: number[] = [];
          let now = midnight - 2_000;
          for (const { gapMs, givenBack } of steps) {
            const slot = pacer.nextSlot(now + gapMs, { cost: 1 });
            const reservation = pacer.dispatch(slot, { cost: 1 }); // throws if the slot named is one the ledger refuses
            if (givenBack) pacer.settle({ reservation, actual: null }, slot + gapMs);
            else kept.push(slot);
            now = slot;
          }
          // A call arriving anywhere within the margin of its slot lands in the day its slot was counted in.
          const days = kept.map((slot) => [dayOf(slot - arrivalMarginMs), dayOf(slot), dayOf(slot + arrivalMarginMs)]);
          const perDayCounts = new Map<string, number>();
          for (const [, day] of days) perDayCounts.set(day ?? '', (perDayCounts.get(day ?? '') ?? 0) + 1);
          return days.every(([a, b, c]) => a === b && b === c) && [...perDayCounts.values()].every((n) => n <= perDay);
        },
      ),
      { numRuns: 300 },
    );
  });
});
