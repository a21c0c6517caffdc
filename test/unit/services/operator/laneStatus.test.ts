import { FakeClock } from '../../../../tools/memory/FakeClock';
import { memoryStores, type MemoryStores } from '../../../../tools/memory/MemoryStores';
import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { LimitLearner } from '../../../../lib/domain/limits/limitLearner';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { applyCircuitEvent } from '../../../../lib/services/circuitUpdates';
import { forceCircuit, pauseLane } from '../../../../lib/services/operator/laneControl';
import { readLaneStatus, type LaneStatusDeps } from '../../../../lib/services/operator/laneStatus';
import { LANE, START, openCircuit, testConfig } from '../../../helpers/serviceFixtures';

const CONFIG = testConfig({
  quotas: [
    { limit: 5, per: 'second' },
    { limit: 1_000, per: 'day' },
  ],
});
const DAY_MS = 86_400_000;

function deps(): LaneStatusDeps & { readonly stores: MemoryStores; readonly clock: FakeClock } {
  const stores = memoryStores();
  const clock = new FakeClock(START);
  return {
    stores,
    circuits: stores.circuit,
    ledgers: stores.ledger,
    leases: stores.lease,
    clock,
    lane: LANE,
    quotas: CONFIG.quotas,
    timeZone: CONFIG.timeZone,
  };
}

describe('readLaneStatus', () => {
  it('reads a lane never used: not paused, closed, nothing used, no lease', async () => {
    const d = deps();
    await expect(readLaneStatus(d)).resolves.toEqual({
      lane: LANE,
      at: START,
      paused: null,
      circuit: { status: 'closed', recentTransitions: [] },
      tiers: [
        { tier: '5/second', per: 'second', unit: 'requests', limit: 5, used: 0, remaining: 5 },
        {
          tier: '1000/day',
          per: 'day',
          unit: 'requests',
          limit: 1_000,
          used: 0,
          remaining: 1_000,
          resetsAt: START + DAY_MS,
        },
      ],
      lease: null,
      override: null,
    });
  });

  it("reads the hold, the operator's circuit and its transitions, each tier's usage as saved, and the lease", async () => {
    const d = deps();
    const lease = await d.stores.lease.acquireLease(LANE, 'orchestrator-1', START, 30_000);
    const ledger = new QuotaLedger(CONFIG.quotas, { timeZone: CONFIG.timeZone });
    ledger.reserve(START, { cost: 1 });
    ledger.reserve(START + 200, { cost: 1 });
    await d.stores.ledger.saveLedger(LANE, ledger.toJSON(), lease?.token ?? 0);
    await pauseLane(d, 'alice');
    await d.clock.advance(500);
    await forceCircuit(d, 'open', 'bob');

    const status = await readLaneStatus(d);

    expect(status).toEqual({
      lane: LANE,
      at: START + 500,
      paused: { since: START, by: 'alice' },
      circuit: {
        status: 'open',
        reason: 'opened by operator (bob)',
        openedAt: START + 500,
        byOperator: true,
        recentTransitions: [
          { at: START, from: 'closed', to: 'closed', reason: 'paused by operator (alice)' },
          { at: START + 500, from: 'closed', to: 'open', reason: 'opened by operator (bob)' },
        ],
      },
      tiers: [
        { tier: '5/second', per: 'second', unit: 'requests', limit: 5, used: 2, remaining: 3 },
        {
          tier: '1000/day',
          per: 'day',
          unit: 'requests',
          limit: 1_000,
          used: 2,
          remaining: 998,
          resetsAt: START + DAY_MS,
        },
      ],
      lease: { owner: 'orchestrator-1', expiresAt: START + 30_000, fencingToken: 1, expired: false },
      override: null,
    });
    expect(JSON.parse(JSON.stringify(status))).toEqual(status);
  });

  it("shows the operator's override, and each tier's usage against the limit it sets, before any run saved the lane", async () => {
    const d = deps();
    await d.stores.limits.replaceOverride(
      LANE,
      { v: 1, tiers: { 'second:requests': 2, 'day:requests': 3_000 }, by: 'alice', at: START - 1 },
      'none',
    );

    const withStore = await readLaneStatus({ ...d, overrides: d.stores.limits });
    const fromLedgerOnly = await readLaneStatus(d);

    expect(withStore.override).toEqual({
      by: 'alice',
      at: START - 1,
      tiers: [
        { tier: 'second:requests', configured: 5, limit: 2 },
        { tier: 'day:requests', configured: 1_000, limit: 3_000 },
      ],
    });
    expect(withStore.tiers.map((t) => [t.tier, t.limit, t.remaining])).toEqual([
      ['2/second', 2, 2],
      ['3000/day', 3_000, 3_000],
    ]);
    // Without the store, the override comes with the saved ledger: none is saved yet.
    expect(fromLedgerOnly.override).toBeNull();
  });

  it('shows when the next health check of an open circuit is due, and a 429 pause while it is ahead', async () => {
    const d = deps();
    await openCircuit(d.circuits, CONFIG, START);
    await applyCircuitEvent(
      d.circuits,
      LANE,
      { type: 'rate-limited', retryAt: START + 1_000 },
      START,
      circuitPolicyFrom(CONFIG.circuit),
    );

    await expect(readLaneStatus(d)).resolves.toMatchObject({
      circuit: {
        status: 'open',
        reason: '3 transient failures within 10 s',
        openedAt: START,
        nextCheckAt: START + 2_000,
        rateLimitedUntil: START + 1_000,
      },
    });
    await d.clock.advance(1_000);
    const later = await readLaneStatus(d);
    expect(later.circuit).not.toHaveProperty('rateLimitedUntil');
    expect(later.circuit).not.toHaveProperty('byOperator');
  });

  it('shows a lease its holder left to expire as expired, from its expiry on', async () => {
    const d = deps();
    await d.stores.lease.acquireLease(LANE, 'orchestrator-1', START, 30_000);
    await d.clock.advance(29_999);
    await expect(readLaneStatus(d)).resolves.toMatchObject({ lease: { expired: false } });
    await d.clock.advance(1);
    await expect(readLaneStatus(d)).resolves.toMatchObject({ lease: { owner: 'orchestrator-1', expired: true } });
  });
});

describe('readLaneStatus: learned limits', () => {
  const learning = testConfig({
    quotas: [
      { limit: 5, per: 'second' },
      { limit: 100, per: 'minute' },
    ],
    limits: { headers: 'openai' },
  });

  it('shows each tier whose learned limit differs from the configured one, as the orchestrator saved it', async () => {
    const d = { ...deps(), quotas: learning.quotas, limits: learning.limits };
    const learner = new LimitLearner(learning.quotas, learning.limits);
    learner.observe(START, { readings: [{ family: 'requests', limit: 60, at: START }] }, [0, 0]);
    const lease = await d.stores.lease.acquireLease(LANE, 'orchestrator-1', START, 30_000);
    const ledger = new QuotaLedger(learning.quotas, { timeZone: learning.timeZone });
    await d.stores.ledger.saveLedger(LANE, { ...ledger.toJSON(), learned: learner.toJSON() }, lease?.token ?? 0);

    const status = await readLaneStatus(d);

    expect(status.limits).toEqual({
      learn: 'enforce',
      learned: [{ tier: '100/minute', configured: 100, limit: 60, source: 'header', since: START }],
    });
  });

  it('shows none learnt for a lane whose saved state holds none, and its mode', async () => {
    const off = testConfig({ limits: { learn: 'off' } });

    await expect(readLaneStatus({ ...deps(), limits: learning.limits })).resolves.toMatchObject({
      limits: { learn: 'enforce', learned: [] },
    });
    await expect(readLaneStatus({ ...deps(), limits: off.limits })).resolves.toMatchObject({
      limits: { learn: 'off', learned: [] },
    });
  });
});
