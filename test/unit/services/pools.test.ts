/**
 * Two lanes of one invocation that share a pool: each dispatch reserves in its lane and in the pool at once, so no
 * window of either is ever exceeded, and the pool is shared between the lanes rather than taken by one.
 */
import { parseTiers } from '../../../lib/domain/quota/tiers';
import { poolStateName } from '../../../lib/domain/quota/poolSettlements';
import { PoolHub } from '../../../lib/services/orchestrator/poolHub';
import { runOrchestrator } from '../../../lib/services/orchestrator/runOrchestrator';
import type { JobEvent } from '../../../lib/ports/Invoker';
import type { ServiceConfig } from '../../../lib/config';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { memoryStores } from '../../../tools/memory/MemoryStores';
import { jobsOf, orchestratorHarness, sendMain, START, testConfig } from '../../helpers/serviceFixtures';

const POOL = { name: 'org', quotas: parseTiers([{ limit: 6, per: 'second' }]) };

/**
 * Lane `lane` at 5 a second of its own, drawing from {@link POOL}. Lane `a` dispatches a second ahead of its slots,
 * in batches of a second, as a lane whose workers start late does: it would take every slot of the pool before `b`
 * came to it, if the pool did not keep turns.
 */
function laneConfig(lane: string) {
  const ahead = { dispatchLeadMs: 1_000, maxDispatchLeadMs: 1_000, batchWindowMs: 1_000 };
  return { ...testConfig(lane === 'a' ? { pacing: ahead } : {}), lane, pools: [POOL] };
}

/** The most of `slots` (sorted) in any window of `windowMs`. */
function mostInWindow(slots: readonly number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; j < slots.length; j++) {
    while ((slots[i] ?? 0) <= (slots[j] ?? 0) - windowMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

async function runTwoLanes(jobsEach: number, configOf: (lane: string) => ServiceConfig = laneConfig) {
  const clock = new FakeClock(START);
  const stores = memoryStores();
  const hub = new PoolHub();
  const lanes = ['a', 'b'].map((lane) => orchestratorHarness({ clock, stores, config: configOf(lane) }));
  for (const h of lanes) await sendMain(h.queues, jobsEach);
  const deadline = START + 20_000;
  const runs = lanes.map((h) => runOrchestrator({ ...h.deps, pools: hub, owner: 'req-1' }, { deadline }));
  let ended = false;
  void Promise.all(runs).then(() => (ended = true));
  await clock.runUntil(() => ended, deadline + 10_000);
  const jobs = lanes.map((h) => h.workerEvents.flatMap(({ event }) => jobsOf(event)));
  return { clock, stores, summaries: await Promise.all(runs), jobs };
}

describe('lanes that share a pool', () => {
  it("never exceed the pool's window, nor either lane its own, and each dispatch carries its reservation in the pool", async () => {
    const { jobs, summaries } = await runTwoLanes(30);

    expect(summaries.map((s) => s.dispatched)).toEqual([30, 30]);
    const slots = (events: readonly JobEvent[]) => events.map((e) => e.slotAt).sort((x, y) => x - y);
    expect(mostInWindow(slots(jobs.flat()), 1_000)).toBeLessThanOrEqual(6);
    for (const lane of jobs) expect(mostInWindow(slots(lane), 1_000)).toBeLessThanOrEqual(5);
    for (const event of jobs.flat()) expect(event.reservation.pools).toEqual({ org: {} });
  });

  it('share the pool while both have a backlog: neither lane takes it all', async () => {
    const { jobs } = await runTwoLanes(30);

    const [a = [], b = []] = jobs;
    const firstFiveSeconds = (events: readonly JobEvent[]) => events.filter((e) => e.slotAt < START + 5_000).length;
    // 6 a second in all for 5 s: about 15 each; a lane the other overtakes at every slot would get few.
    expect(firstFiveSeconds(a)).toBeGreaterThanOrEqual(12);
    expect(firstFiveSeconds(b)).toBeGreaterThanOrEqual(12);
  });

  it('share the pool by their weights: a lane of weight 3 gets three times the share of a lane of weight 1', async () => {
    const weighted = (lane: string) => ({
      ...testConfig(),
      lane,
      pools: [{ ...POOL, weight: lane === 'a' ? 3 : 1 }],
    });
    const { jobs } = await runTwoLanes(40, weighted);

    const [a = [], b = []] = jobs;
    const inFirstFiveSeconds = (events: readonly JobEvent[]) => events.filter((e) => e.slotAt < START + 5_000).length;
    // 6 a second: 4.5 for 'a' and 1.5 for 'b'.
    expect(inFirstFiveSeconds(a)).toBeGreaterThanOrEqual(20);
    expect(inFirstFiveSeconds(b)).toBeGreaterThanOrEqual(6);
    expect(inFirstFiveSeconds(b)).toBeLessThanOrEqual(9);
  });

  it("save the pool's ledger under its own name, and release its lease once both runs have ended", async () => {
    const { stores, clock } = await runTwoLanes(5);

    expect(await stores.ledger.loadLedger(poolStateName('org'))).toBeDefined();
    expect(await stores.lease.acquireLease(poolStateName('org'), 'next', clock.now(), 5_000)).not.toBeNull();
  });
});
