import { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../../../tools/memory/MemoryStores';
import type { ServiceConfig } from '../../../../lib/config';
import type { LedgerStore } from '../../../../lib/ports/LedgerStore';
import { processWorkerEvent } from '../../../../lib/services/worker/processWorkerEvent';
import { rehydrate, slotReachMs } from '../../../../lib/services/orchestrator/rehydrate';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import {
  START,
  ScriptedApi,
  drive,
  jobsOf,
  orchestratorHarness,
  sendMain,
  testConfig,
  type OrchestratorHarness,
} from '../../../helpers/serviceFixtures';
import { maxWindowUsage, type Call } from '../../../helpers/windowReferee';

/** The calls the workers of `harnesses` were sent, each at its slot (with no arrival margin, where it arrives). */
function callsOf(...harnesses: OrchestratorHarness[]): Call[] {
  return harnesses.flatMap((h) =>
    h.workerEvents.flatMap(({ event }) =>
      jobsOf(event).map((job) => ({ at: job.slotAt, costs: job.reservation.costs })),
    ),
  );
}

/** Ten calls a second, bursts allowed: a whole window can go at once, so anything the ledger does not hold shows. */
const BEFORE = testConfig({ quotas: [{ limit: 10, per: 'second' }], pacing: { burstFraction: 1 } });
/** The same lane after a deploy that adds a tier of ten calls a minute. */
const AFTER = testConfig({
  quotas: [
    { limit: 10, per: 'second' },
    { limit: 10, per: 'minute' },
  ],
  pacing: { burstFraction: 1 },
});
const MINUTE_TIER = AFTER.quotas[1]!;

/** A world shared by the runs of one lane: the clock, the stores and the queues. */
function lane(): { clock: FakeClock; stores: MemoryStores; queues: MemoryQueues } {
  const clock = new FakeClock(START);
  return { clock, stores: memoryStores(), queues: new MemoryQueues({ clock }) };
}

/** A ledger store whose saves never answer: the run is killed during its first one. */
function killedAtFirstSave(inner: LedgerStore): LedgerStore {
  return {
    loadLedger: (l) => inner.loadLedger(l),
    saveLedger: () => new Promise<never>(() => undefined),
    addSettlements: (l, ...s) => inner.addSettlements(l, ...s),
    pendingSettlements: (l) => inner.pendingSettlements(l),
  };
}

describe('rehydrate', () => {
  it('counts a tier the saved ledger lacks full until a window after every call an earlier run may have slotted, and a lane with no saved ledger empty', () => {
    const saved = rehydrate(BEFORE, undefined, START).ledger.toJSON();
    const now = START + 10_000;
    const { ledger } = rehydrate(AFTER, saved, now);
    const until = now + slotReachMs(AFTER);
    expect(slotReachMs(AFTER)).toBe(AFTER.orchestrator.workerTimeoutMs / 2);
    expect(ledger.earliestFit(now, { cost: 1 })).toEqual({ at: expect.any(Number), tier: 1 });
    expect(ledger.earliestFit(now, { cost: 1 }).at).toBeGreaterThanOrEqual(until + 60_000);
    // No run has saved one, so none dispatched beyond windows that have closed: no call of the lane can still count.
    const fresh = rehydrate({ ...AFTER, maxInFlight: 4 } as ServiceConfig, undefined, now);
    expect(fresh.ledger.earliestFit(now, { cost: 1 })).toEqual({ at: now, tier: -1 });
    expect(fresh.slots?.free(now)).toBe(4);
  });

  it('takes every call slot until a call an earlier run slotted can no longer be in progress, when the cap was off', () => {
    const config = testConfig({ orchestrator: { workerTimeoutMs: 5_000 } });
    const capped = { ...config, maxInFlight: 4 } as ServiceConfig;
    const saved = rehydrate(config, undefined, START).ledger.toJSON();
    const now = START + 10_000;
    const { slots } = rehydrate(capped, saved, now);
    const freeAt = now + slotReachMs(capped) + capped.orchestrator.workerTimeoutMs;
    expect(slots?.free(freeAt - 1)).toBe(0);
    expect(slots?.free(freeAt)).toBe(4);
  });
});

describe('a deploy that adds a tier', () => {
  it.each([
    ['ends after saving', false],
    ['is killed during its first save', true],
  ])(
    'never lets the new tier be exceeded by the calls made before it, whether the first run after the deploy %s',
    async (_how, killed) => {
      const { clock, stores, queues } = lane();
      await sendMain(queues, 40);
      // Before the deploy: the second tier alone, ten calls at once.
      const before = orchestratorHarness({ config: BEFORE, clock, stores, queues, owner: 'before' });
      await drive(clock, runOrchestrator(before.deps, { deadline: START + 500 }), START + 1_000);
      const ended = clock.now();
      // The first run after it saves its ledger (or is killed doing so), and the next takes over once it can.
      const first = orchestratorHarness({ config: AFTER, clock, stores, queues, owner: 'first' });
      const firstStores = killed ? { ...stores, ledger: killedAtFirstSave(stores.ledger) } : stores;
      const firstRun = runOrchestrator({ ...first.deps, stores: firstStores }, { deadline: ended + 3_000 });
      if (!killed) await drive(clock, firstRun, ended + 4_000);
      await clock.advanceTo(ended + 10_000); // past the killed run's lease
      const next = orchestratorHarness({ config: AFTER, clock, stores, queues, owner: 'next' });
      await drive(clock, runOrchestrator(next.deps, { deadline: ended + 120_000 }), ended + 121_000);

      const calls = callsOf(before, first, next);
      expect(callsOf(before)).toHaveLength(10);
      expect(maxWindowUsage(calls, MINUTE_TIER)).toBe(10);
      // Bounded: the new tier's quota is used again once a minute has passed.
      expect(callsOf(next).length).toBeGreaterThan(0);
    },
  );
});

describe('a deploy that turns maxInFlight on', () => {
  /** A lane whose workers run the real worker code against an API that answers each call after `latencyMs`. */
  function withApi(config: ServiceConfig, world: ReturnType<typeof lane>, owner: string, spans: Span[]) {
    return orchestratorHarness({
      config,
      ...world,
      owner,
      worker: async (event, h) => {
        const api = new ScriptedApi(h.clock, 4_000);
        const recording = {
          call: async (body: string, context: { readonly idempotencyKey: string }) => {
            const from = h.clock.now();
            const result = await api.call(body, context);
            spans.push({ from, to: h.clock.now() });
            return result;
          },
          probe: () => api.probe(),
        };
        await processWorkerEvent(event, {
          clock: h.clock,
          stores: h.stores,
          queues: h.queues,
          api: recording,
          config: h.config,
          random: () => 0,
        });
      },
    });
  }

  it('starts no call while the calls made without the cap still fill it', async () => {
    const world = lane();
    await sendMain(world.queues, 30);
    const spans: Span[] = [];
    const uncapped = testConfig({ quotas: [{ limit: 10, per: 'second' }], pacing: { burstFraction: 1 } });
    const capped = { ...uncapped, maxInFlight: 4 } as ServiceConfig;
    // Before the deploy: ten calls of 4 s go at once, with no cap.
    const before = withApi(uncapped, world, 'before', spans);
    await drive(world.clock, runOrchestrator(before.deps, { deadline: START + 500 }), START + 1_000);
    const after = withApi(capped, world, 'after', spans);
    await drive(world.clock, runOrchestrator(after.deps, { deadline: START + 30_000 }), START + 31_000);

    const inProgressAt = (t: number) => spans.filter((s) => s.from <= t && s.to > t).length;
    const afterStarts = spans.slice(10).map((s) => s.from);
    expect(spans.slice(0, 10).every((s) => s.from < START + 1_000)).toBe(true);
    expect(afterStarts.length).toBeGreaterThan(0);
    expect(Math.max(...afterStarts.map(inProgressAt))).toBeLessThanOrEqual(4);
  });
});

/** One call as the API saw it, from its arrival to its answer. */
interface Span {
  readonly from: number;
  readonly to: number;
}
