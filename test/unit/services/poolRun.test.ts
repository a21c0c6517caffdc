/** A pool's quota as the lane runs of an invocation draw from it: saved before it is used, and counted by a successor. */
import type { PoolConfig } from '../../../lib/config';
import { parseTiers } from '../../../lib/domain/quota/tiers';
import { guardStores } from '../../../lib/services/orchestrator/guardedPorts';
import { PoolRun } from '../../../lib/services/orchestrator/poolRun';
import { poolStateName } from '../../../lib/domain/quota/poolSettlements';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import { applyCircuitEvent } from '../../../lib/services/circuitUpdates';
import { memoryStores } from '../../../tools/memory/MemoryStores';
import { START, testConfig } from '../../helpers/serviceFixtures';

const pool = { name: 'org', quotas: parseTiers([{ limit: 10, per: 'minute', unit: 'cost' }]) };

async function openPool(
  clock: FakeClock,
  stores: ReturnType<typeof memoryStores>,
  owner: string,
  poolConfig: PoolConfig = pool,
): Promise<PoolRun> {
  const opened = await PoolRun.open(
    { config: testConfig(), pool: poolConfig, stores: guardStores(stores), clock, owner, random: () => 0 },
    { deadline: clock.now() + 60_000 },
  );
  if (typeof opened === 'string') throw new Error(`pool not opened: ${opened}`);
  return opened;
}

describe('PoolRun', () => {
  it('reserves only within an allowance it saved first, and a successor after a crash counts what went', async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const first = await openPool(clock, stores, 'first');
    const costs = { cost: 1 };
    expect(first.ready(START, costs)).toBe(false);
    // As the dispatcher will: each at its slot, the allowance saved to reach the slot before it is used.
    for (let i = 0; i < 6; i++) {
      const slot = first.nextSlot(clock.now(), costs);
      await clock.advanceTo(slot);
      if (!first.ready(slot, costs))
        expect(await first.flush({ need: { units: first.units(costs), slots: 0 }, until: slot })).toBe(true);
      expect(first.ready(slot, costs)).toBe(true);
      first.reserve('a', slot, costs);
    }
    expect(await stores.ledger.loadLedger(poolStateName('org'))).toBeDefined();

    // The first run dies without another save; its lease runs out, and a successor takes the pool.
    const crashedAt = clock.now();
    await clock.advanceTo(crashedAt + 31_000);
    const second = await openPool(clock, stores, 'second');
    // What may have gone within the saved allowance is counted: the minute's 10 no longer fit at once (an empty
    // ledger would take them), while one more does.
    expect(second.nextSlot(clock.now(), { cost: 10 })).toBeGreaterThan(clock.now());
    expect(second.nextSlot(clock.now(), { cost: 1 })).toBe(clock.now());
  });

  it('is held elsewhere while another orchestrator holds its lease', async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    await openPool(clock, stores, 'first');
    const again = await PoolRun.open(
      { config: testConfig(), pool, stores: guardStores(stores), clock, owner: 'second', random: () => 0 },
      { deadline: START + 60_000 },
    );
    expect(again).toBe('held-elsewhere');
  });

  it('gives back a dispatch that never started, in its units and its saved allowance', async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const run = await openPool(clock, stores, 'first');
    const costs = { cost: 10 };
    expect(await run.flush({ need: { units: run.units(costs), slots: 0 }, until: START })).toBe(true);
    const reservation = run.reserve('a', START, costs);
    expect(run.nextSlot(START, { cost: 1 })).toBeGreaterThan(START);
    run.giveBack(reservation);
    expect(run.nextSlot(START, costs)).toBe(START);
    expect(run.ready(START, costs)).toBe(true);
  });

  it('holds a dispatch back by its room alone, not by the order of its slots (another lane reserved a ms later)', async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    // Ten a ms, less the arrival margin's share.
    const fast = { name: 'fast', quotas: parseTiers([{ limit: 10_000, per: 'second' }]) };
    const run = await openPool(clock, stores, 'first', fast);
    const costs = { requests: 1 };
    const slot = START + 5;
    expect(await run.flush({ need: { units: run.units(costs).map((u) => 20 * u), slots: 0 }, until: slot })).toBe(true);
    run.reserve('b', slot, costs);
    // A lane whose own slot is 3 ms sooner goes at the pool's latest slot, which has room: no contest.
    expect(run.nextSlot(slot - 3, costs)).toBe(slot);
    expect(run.holdsBack(slot - 3, costs)).toBe(false);
    // Once the slot's ms is full, the pool's room sets the slot a ms on.
    for (let i = 0; run.nextSlot(slot, costs) === slot && i < 20; i++) run.reserve('b', slot, costs);
    expect(run.holdsBack(slot - 3, costs)).toBe(true);
  });

  it("holds every lane of a pool whose rateLimitScope is pool once a worker wrote a 429's pause to the pool", async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const opened = await PoolRun.open(
      {
        config: testConfig(),
        pool: { ...pool, rateLimitScope: 'pool' },
        stores: guardStores(stores),
        clock,
        owner: 'first',
        random: () => 0,
      },
      { deadline: START + 60_000 },
    );
    if (typeof opened === 'string') throw new Error(opened);
    const policy = circuitPolicyFrom(testConfig().circuit);
    await applyCircuitEvent(
      stores.circuit,
      poolStateName('org'),
      { type: 'rate-limited', retryAt: START + 7_000 },
      START,
      policy,
    );
    expect(opened.nextSlot(START, { cost: 1 })).toBe(START);

    expect(await opened.flush()).toBe(true);

    expect(opened.nextSlot(START, { cost: 1 })).toBe(START + 7_000);
  });

  it('makes its final flush and releases its lease on close, so that the next invocation takes it at once', async () => {
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const run = await openPool(clock, stores, 'first');
    await run.close();
    expect(await openPool(clock, stores, 'second')).toBeInstanceOf(PoolRun);
  });
});
