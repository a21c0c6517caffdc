import { QuotaGate, tierLabel } from '../../../../lib/services/orchestrator/quotaGate';
import { RunContext } from '../../../../lib/services/orchestrator/runContext';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { roomHarness } from '../../../helpers/orchestratorRooms';
import { START, testConfig } from '../../../helpers/serviceFixtures';

/** What a received message's visibility covers in {@link testConfig}: 30 s less a 5 s worker run. */
const COVERAGE_MS = 25_000;
const DAY_MS = 86_400_000;
/** The gate opens this long before a spent calendar tier's window ends: half the coverage (see `QuotaGate.slackMs`). */
const OPENS_BEFORE_MS = COVERAGE_MS / 2;

/** A gate over a 5/second and a 2/day tier, with the day's quota spent at START, in a run that lasts two days. */
function dayExhausted() {
  const h = roomHarness(
    testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 2, per: 'day' },
      ],
    }),
  );
  h.pacer.dispatch(START, { cost: 1 });
  h.pacer.dispatch(START + 200, { cost: 1 });
  return { h, gate: new QuotaGate(new RunContext(h.runDeps, { deadline: START + 2 * DAY_MS }), h.pacer) };
}

describe('tierLabel', () => {
  it('names a tier by its limit, unit and period', () => {
    expect(
      parseTiers([
        { limit: 20_000, per: 'day' },
        { limit: 1_000, per: 'hour', unit: 'cost' },
      ]).map(tierLabel),
    ).toEqual(['20000/day', '1000 cost/hour']);
  });
});

describe('QuotaGate', () => {
  describe('shutUntil', () => {
    it('is open while one unit could be sent within what a message received now covers', () => {
      const h = roomHarness();
      expect(new QuotaGate(h.run, h.pacer).shutUntil(START)).toBeUndefined();
      expect(h.events).toEqual([]);
    });

    it('stays shut for hours while a day tier is spent, reporting the exhaustion once, until its window ends', async () => {
      const { h, gate } = dayExhausted();

      for (const at of [START + 1_000, START + 2 * 3_600_000, START + DAY_MS - COVERAGE_MS - 1]) {
        await h.clock.advanceTo(at);
        expect(gate.shutUntil(at)).toBe(START + DAY_MS - OPENS_BEFORE_MS);
      }
      expect(h.events).toEqual([
        { type: 'quota-exhausted', at: START + 1_000, tier: '2/day', kind: 'calendar', until: START + DAY_MS },
      ]);

      // Still exhausted (the window ends after a message received now would have to go), and shut: a message
      // received now would have no time to spare for its lead and the flush of the new day's allowance.
      await h.clock.advanceTo(START + DAY_MS - COVERAGE_MS);
      expect(gate.shutUntil(h.clock.now())).toBe(START + DAY_MS - OPENS_BEFORE_MS);
      expect(h.events.slice(1)).toEqual([
        {
          type: 'quota-available',
          at: START + DAY_MS - COVERAGE_MS,
          tier: '2/day',
          exhaustedMs: DAY_MS - COVERAGE_MS - 1_000,
        },
      ]);
      await h.clock.advanceTo(START + DAY_MS - OPENS_BEFORE_MS - 1);
      expect(gate.shutUntil(h.clock.now())).toBe(START + DAY_MS - OPENS_BEFORE_MS);
      // Open once a message received now could go half its coverage before it must.
      await h.clock.advanceTo(START + DAY_MS - OPENS_BEFORE_MS);
      expect(gate.shutUntil(h.clock.now())).toBeUndefined();
      expect(gate.sendBy(h.clock.now()) - (START + DAY_MS)).toBe(OPENS_BEFORE_MS);
    });

    it('stays shut through a 429 whose Retry-After is a day, naming the pause', () => {
      const h = roomHarness();
      h.pacer.pause(START + DAY_MS, () => 0);
      const gate = new QuotaGate(h.run, h.pacer);

      // A pause needs no slack: the gate opens a message's coverage before it ends.
      expect(gate.shutUntil(START)).toBe(START + DAY_MS - COVERAGE_MS);
      expect(gate.shutUntil(START + 60_000)).toBe(START + DAY_MS - COVERAGE_MS);
      expect(h.events).toEqual([
        { type: 'quota-exhausted', at: START, tier: '429', kind: 'pause', until: START + DAY_MS },
      ]);
    });

    it('reports again when what holds the quota changes within an episode', () => {
      const { h, gate } = dayExhausted();
      gate.shutUntil(START + 1_000);
      h.pacer.pause(START + 2 * DAY_MS, () => 0);
      gate.shutUntil(START + 2_000);
      expect(h.events.map((e) => e.type === 'quota-exhausted' && [e.tier, e.until - START])).toEqual([
        ['2/day', DAY_MS],
        ['429', 2 * DAY_MS],
      ]);
    });

    it("stays open while a paced tier's next slot is within a message's coverage, however slow the pace", () => {
      // One a minute: after a dispatch, the next slot is 60 s away, beyond half the 25 s coverage but within a
      // coverage of a message received 40 s on; a gate that shut would hand a buffered message back unsent.
      const h = roomHarness(testConfig({ quotas: [{ limit: 1, per: 'minute' }] }));
      h.pacer.dispatch(START, { cost: 1 });
      const gate = new QuotaGate(new RunContext(h.runDeps, { deadline: START + DAY_MS }), h.pacer);
      const next = h.pacer.nextSlot(START, { cost: 1 });
      expect(gate.shutUntil(next - COVERAGE_MS - 1)).toBe(next - COVERAGE_MS);
      expect(gate.shutUntil(next - COVERAGE_MS)).toBeUndefined();
      expect(gate.shutUntil(next - OPENS_BEFORE_MS)).toBeUndefined();
    });

    it('stays shut without an exhaustion when only the run’s end comes before the next unit', () => {
      const h = roomHarness(testConfig({ quotas: [{ limit: 1, per: 'minute' }] }));
      h.pacer.dispatch(START + 50_000, { cost: 1 });
      const gate = new QuotaGate(h.run, h.pacer); // the run ends at START + 60 s; the next unit goes at START + 110 s

      expect(gate.shutUntil(START + 90_000 - 1)).toBe(START + 60_000);
      expect(h.events).toEqual([]);
    });
  });

  describe('hideMs', () => {
    it('hides a message until its slot, within the 12 hours SQS allows from its receive', () => {
      const { gate } = dayExhausted();
      expect(gate.hideMs(START, START + 3_600_000, START + 1_000)).toBe(3_599_000);
      expect(gate.hideMs(START, START + DAY_MS, START + 1_000)).toBe(43_200_000 - 60_000 - 1_000);
    });
  });

  describe('room', () => {
    it('counts what the calendar tiers have left, and leaves the pace of the sliding tiers to the batch size', () => {
      const h = roomHarness(
        testConfig({
          quotas: [
            { limit: 5, per: 'second' },
            { limit: 3, per: 'day' },
          ],
        }),
      );
      const gate = new QuotaGate(h.run, h.pacer);
      h.pacer.dispatch(START, { cost: 1 });
      expect(gate.room(START + 1)).toBe(2);
      expect(new QuotaGate(roomHarness().run, roomHarness().pacer).room(START)).toBe(Number.POSITIVE_INFINITY);
    });
  });
});
