/**
 * An operator's override of the tiers' limits (`ops limits set`) as runs go by it: a run starts on the tiers it sets,
 * lower or higher; a lower limit set during a run holds from its next save; a higher one from the next run.
 */
import type { LimitOverrideJSON } from '../../../../lib/domain/limits/limitOverrideJSON';
import { poolStateName } from '../../../../lib/domain/quota/poolSettlements';
import { parseTiers, type TierKey } from '../../../../lib/domain/quota/tiers';
import { PoolHub } from '../../../../lib/services/orchestrator/poolHub';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent } from '../../../../lib/services/orchestrator/types';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import { memoryStores } from '../../../../tools/memory/MemoryStores';
import {
  dispatchedEvents,
  drive,
  jobsOf,
  orchestratorHarness,
  rel,
  sendMain,
  START,
  testConfig,
} from '../../../helpers/serviceFixtures';
import { maxWindowUsage } from '../../../helpers/windowReferee';

const override = (tiers: Partial<Record<TierKey, number>>, at = START): LimitOverrideJSON => ({
  v: 1,
  tiers,
  by: 'alice',
  at,
});

const overridden = (events: readonly OrchestratorEvent[]) =>
  events.filter((e): e is Extract<OrchestratorEvent, { type: 'limits-overridden' }> => e.type === 'limits-overridden');

describe('a run under an operator override of its limits', () => {
  it('starts on the tiers the override sets, a higher limit than configured included, and says so', async () => {
    // 5 a second configured; the first run saves the lane's ledger, the second starts under 10 a second.
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const queues = new MemoryQueues({ clock });
    const first = orchestratorHarness({ clock, stores, queues });
    await drive(clock, runOrchestrator(first.deps, { deadline: START + 500 }), START + 1_000);
    await stores.limits.replaceOverride('default', override({ 'second:requests': 10 }), 'none');
    await sendMain(queues, 20);
    const start = clock.now();

    const second = orchestratorHarness({ clock, stores, queues, owner: 'orchestrator-2' });
    await drive(clock, runOrchestrator(second.deps, { deadline: start + 2_000 }), start + 3_000);

    const dispatched = dispatchedEvents(second.events);
    expect(dispatched).toHaveLength(20);
    expect(maxWindowUsage(dispatched, parseTiers([{ limit: 10, per: 'second' }])[0]!)).toBe(10);
    expect(overridden(second.events)).toEqual([
      {
        type: 'limits-overridden',
        at: start,
        by: 'alice',
        setAt: START,
        tiers: [{ tier: '5/second', configured: 5, from: 5, to: 10, when: 'now' }],
      },
    ]);
  });

  it('holds a lower limit set during the run from its next save; a higher one lifts it to the run’s own tier', async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 60);
    const running = runOrchestrator(h.deps, { deadline: START + 12_000 });
    await h.clock.advance(3_000);
    await h.stores.limits.replaceOverride('default', override({ 'second:requests': 2 }, START + 3_000), 'none');
    await h.clock.advance(4_000);
    await h.stores.limits.replaceOverride('default', override({ 'second:requests': 9 }, START + 7_000), START + 3_000);
    await drive(h.clock, running, START + 13_000);

    const [lowered, raised] = overridden(h.events);
    expect(lowered).toMatchObject({ by: 'alice', setAt: START + 3_000, tiers: [{ from: 5, to: 2, when: 'now' }] });
    expect(raised).toMatchObject({ tiers: [{ from: 2, to: 9, when: 'next-run', meanwhile: 5 }] });
    // A save every 2 s (flushIntervalMs): the first after each change comes at most that long after it.
    const [lowAt, highAt] = rel([lowered?.at ?? 0, raised?.at ?? 0]) as [number, number];
    expect(lowAt).toBeGreaterThan(3_000);
    expect(lowAt).toBeLessThanOrEqual(5_000);
    expect(highAt).toBeGreaterThan(7_000);
    expect(highAt).toBeLessThanOrEqual(9_000);
    const second = parseTiers([{ limit: 1, per: 'second' }])[0]!;
    const dispatched = dispatchedEvents(h.events);
    const between = dispatched.filter((e) => e.at - START >= lowAt + 1_000 && e.at - START < highAt);
    const afterwards = dispatched.filter((e) => e.at - START >= highAt);
    expect(between.length).toBeGreaterThanOrEqual(2);
    expect(maxWindowUsage(between, second)).toBe(2);
    expect(maxWindowUsage(afterwards, second)).toBe(5);
  });

  it("holds the lanes that draw from a pool to the pool's overridden limit", async () => {
    const pool = { name: 'org', quotas: parseTiers([{ limit: 6, per: 'second' }]) };
    const clock = new FakeClock(START);
    const stores = memoryStores();
    await stores.limits.replaceOverride(poolStateName('org'), override({ 'second:requests': 3 }), 'none');
    const hub = new PoolHub();
    const lanes = ['a', 'b'].map((lane) =>
      orchestratorHarness({ clock, stores, config: { ...testConfig(), lane, pools: [pool] } }),
    );
    for (const h of lanes) await sendMain(h.queues, 10);
    const deadline = START + 5_000;
    const runs = lanes.map((h) => runOrchestrator({ ...h.deps, pools: hub, owner: 'req-1' }, { deadline }));
    let ended = false;
    void Promise.all(runs).then(() => (ended = true));
    await clock.runUntil(() => ended, deadline + 10_000);

    const slots = lanes.flatMap((h) => h.workerEvents.flatMap(({ event }) => jobsOf(event)).map((e) => e.slotAt));
    expect(slots.length).toBeGreaterThanOrEqual(12);
    expect(
      maxWindowUsage(
        slots.map((at) => ({ at, costs: {} })),
        pool.quotas[0]!,
      ),
    ).toBe(3);
  });
});
