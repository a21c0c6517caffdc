import fc from 'fast-check';
import { Pacer } from '../../../../lib/domain/pacing/pacer';
import type { PacingSettings } from '../../../../lib/domain/pacing/settings';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { parseTiers, unitsFor, type Period, type Tier, type TierUnit } from '../../../../lib/domain/quota/tiers';
import { smoothPacing } from '../../../helpers/smoothPacing';
import { maxWindowUsage, type Call } from '../../../helpers/windowReferee';

/** Property runs per property; the note on the issue quotes the total. */
const RUNS = { safety: 300, restart: 200, rate: 100 };

const LIMITS: Record<Period, [number, number]> = {
  second: [1, 100],
  minute: [5, 2_000],
  hour: [20, 3_000],
  day: [50, 5_000],
  month: [100, 20_000],
};

function tierArb(periods: readonly Period[]): fc.Arbitrary<Tier> {
  return fc
    .record({ per: fc.constantFrom(...periods), unit: fc.constantFrom<TierUnit>('requests', 'cost') })
    .chain(({ per, unit }) =>
      fc.integer({ min: LIMITS[per][0], max: LIMITS[per][1] }).map((limit) => parseTiers([{ limit, per, unit }])[0]!),
    );
}

/** Window length of a sliding tier (the rate property draws only those). */
function windowMsOf(tier: Tier): number {
  if (tier.kind !== 'sliding') throw new Error(`a ${tier.kind} tier has no fixed window`);
  return tier.windowMs;
}

function tierSetArb(periods: readonly Period[]): fc.Arbitrary<Tier[]> {
  return fc.uniqueArray(tierArb(periods), { minLength: 1, maxLength: 4, selector: (t) => `${t.per}:${t.unit}` });
}

const settingsArb: fc.Arbitrary<PacingSettings> = fc.record({
  burstFraction: fc.constantFrom(0, 0, 0.1, 0.5, 1),
  spreadLongTiers: fc.boolean(),
  rampStartFraction: fc.constantFrom(0.25, 0.5, 1),
  rampSeconds: fc.constantFrom(0, 5, 30),
  pauseJitterMs: fc.constant(0),
  arrivalMarginMs: fc.constant(0),
  callAllowanceMs: fc.constant(0),
  dispatchLeadMs: fc.constant(0),
  maxDispatchLeadMs: fc.constant(0),
  batchWindowMs: fc.constant(0),
});

interface Job {
  readonly arrival: number;
  readonly cost: number;
  /** What the call really cost: `null` when it never reached the API, else at most the reserved cost. */
  readonly actual: number | null;
  /** Serialise the ledger, drop the pacer, and rehydrate after this job, as a restarted orchestrator would. */
  readonly restartAfter: boolean;
}

const jobsArb = (restartRate: number) =>
  fc.array(
    fc
      .record({
        gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 120_000 })),
        cost: fc.integer({ min: 1, max: 30 }),
        outcome: fc.constantFrom('full', 'full', 'full', 'less', 'none'),
        shrink: fc.double({ min: 0, max: 1, noNaN: true }),
        restart: fc.double({ min: 0, max: 1, noNaN: true }),
      })
      .map(({ gap, cost, outcome, shrink, restart }) => ({
        gap,
        cost,
        actual: outcome === 'none' ? null : outcome === 'less' ? Math.floor(cost * shrink) : cost,
        restartAfter: restart < restartRate,
      })),
    { minLength: 1, maxLength: 300 },
  );

/**
 * Drives a backlog through the pacer as the orchestrator does: each job waits for its arrival, then for the
 * pacer's next slot, is dispatched, and settles. Returns the calls the API saw.
 */
function drive(
  tiers: Tier[],
  settings: PacingSettings,
  start: number,
  jobs: readonly (Omit<Job, 'arrival'> & { gap: number })[],
): Call[] {
  let ledger = new QuotaLedger(tiers);
  let pacer = new Pacer(ledger, settings);
  pacer.startRamp(start);
  const calls: Call[] = [];
  let arrival = start;
  let now = start;
  for (const job of jobs) {
    arrival += job.gap;
    const slot = pacer.nextSlot(Math.max(now, arrival), { cost: job.cost });
    if (!Number.isFinite(slot)) {
      // Only a cost above some tier's limit may never go.
      expect(tiers.some((t) => unitsFor(t, { cost: job.cost }) > t.limit)).toBe(true);
      continue;
    }
    now = slot;
    const reservation = pacer.dispatch(now, { cost: job.cost });
    if (job.actual !== null) calls.push({ at: now, costs: { cost: job.actual } });
    ledger.settle({ reservation, actual: job.actual === null ? null : { cost: job.actual } });
    if (job.restartAfter) {
      ledger = QuotaLedger.fromJSON(tiers, JSON.parse(JSON.stringify(ledger.toJSON())));
      pacer = new Pacer(ledger, settings);
    }
  }
  return calls;
}

// Starts spread over a year, some just before UTC midnight, so calendar windows roll over inside runs.
const startArb = fc.oneof(
  fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 0, 1) }),
  fc.integer({ min: 0, max: 365 }).map((d) => Date.UTC(2026, 0, 1 + d) - 30_000),
);

describe('Pacer with QuotaLedger (properties)', () => {
  it('never exceeds any tier in any window, for random tier sets, costs, arrivals and refunds', () => {
    fc.assert(
      fc.property(
        tierSetArb(['second', 'minute', 'hour', 'day', 'month']),
        settingsArb,
        startArb,
        jobsArb(0),
        (tiers, settings, start, jobs) => {
          const calls = drive(tiers, settings, start, jobs);
          for (const tier of tiers) expect(maxWindowUsage(calls, tier)).toBeLessThanOrEqual(tier.limit);
        },
      ),
      { numRuns: RUNS.safety },
    );
  });

  it('still never exceeds any tier when serialised and restarted at random points', () => {
    fc.assert(
      fc.property(
        tierSetArb(['second', 'minute', 'hour', 'day']),
        settingsArb,
        startArb,
        jobsArb(0.15),
        (tiers, settings, start, jobs) => {
          const calls = drive(tiers, settings, start, jobs);
          for (const tier of tiers) expect(maxWindowUsage(calls, tier)).toBeLessThanOrEqual(tier.limit);
        },
      ),
      { numRuns: RUNS.restart },
    );
  });

  it('keeps a backlog within 1% of the tightest tier rate, long tiers spread or not', () => {
    fc.assert(
      fc.property(
        tierSetArb(['second', 'minute', 'hour']),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        (tiers, cost, spreadLongTiers) => {
          const smooth = smoothPacing({ spreadLongTiers });
          fc.pre(tiers.every((t) => unitsFor(t, { cost }) <= t.limit));
          // Jobs per ms each tier allows (whole jobs per window); the tightest binds. Run for 2.5 of its windows.
          const rates = tiers.map((t) => Math.floor(t.limit / unitsFor(t, { cost })) / windowMsOf(t));
          const tightest = Math.min(...rates);
          const binding = tiers[rates.indexOf(tightest)]!;
          const n = Math.ceil(tightest * windowMsOf(binding) * 2.5);
          fc.pre(n >= 20 && n <= 6_000);
          const calls = drive(
            tiers,
            smooth,
            Date.UTC(2026, 5, 1),
            Array.from({ length: n }, () => ({ gap: 0, cost, actual: cost, restartAfter: false })),
          );
          const first = calls[0]!.at;
          const last = calls[calls.length - 1]!.at;
          const achieved = (calls.length - 1) / (last - first);
          expect(calls).toHaveLength(n);
          expect(achieved).toBeGreaterThanOrEqual(0.99 * tightest);
          expect(tiers.filter((t) => t.kind === 'sliding').every((t) => maxWindowUsage(calls, t) <= t.limit)).toBe(
            true,
          );
        },
      ),
      { numRuns: RUNS.rate },
    );
  });
});
