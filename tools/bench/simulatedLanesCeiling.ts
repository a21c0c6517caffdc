/**
 * The ceiling of one orchestrator serving several lanes, on virtual time: the ceiling scenario's lane (see
 * `simulatedCeiling`) ten times over, each lane with its own queues and simulated API, all drawing from one pool far
 * above what they dispatch, on memory ports that answer as slowly as AWS does. Each tick runs every lane's run side by
 * side, as the orchestrator's handler does, the lanes joining the pool through one hub.
 */
import type { ServiceConfig } from '../../lib/config';
import { parseTiers, type Tier } from '../../lib/domain/quota/tiers';
import { poolStateName } from '../../lib/domain/quota/poolSettlements';
import type { Settlement } from '../../lib/domain/quota/ledger';
import type { LedgerStore } from '../../lib/ports/LedgerStore';
import type { WorkerEvent } from '../../lib/ports/Invoker';
import { READ_ORDER } from '../../lib/ports/QueueReceiver';
import { PoolHub } from '../../lib/services/orchestrator/poolHub';
import { runOrchestrator } from '../../lib/services/orchestrator/runOrchestrator';
import { processWorkerEvent } from '../../lib/services/worker/processWorkerEvent';
import { FakeClock } from '../memory/FakeClock';
import { MemoryInvoker } from '../memory/MemoryInvoker';
import { MemoryQueues } from '../memory/MemoryQueues';
import { memoryStores } from '../memory/MemoryStores';
import { NO_LATENCY, withLatency } from '../simulation/awsLatency';
import { buildJobs } from '../simulation/jobs';
import { seededRandom } from '../simulation/random';
import { SIMULATION_START } from '../simulation/runSimulation';
import { parseScenario } from '../simulation/scenario';
import { InvokeTiming, REALISTIC_START_DELAYS } from '../simulation/startDelays';
import { SharedTiers } from '../simulation/tierTally';
import { VirtualApi } from '../simulation/virtualApi';
import { callsPerSecond } from './measures';
import type { BenchScenario } from './types';

/** The pool every lane draws from: ten times the lane's tiers, so that it never binds. */
const POOL_NAME = 'all';

/** What the multi-lane ceiling measured. */
export interface SimulatedLanesCeiling {
  readonly lanes: number;
  /** Whether the lanes shared the pool. */
  readonly pooled: boolean;
  readonly jobs: number;
  /** Jobs dispatched in the busiest whole second, over every lane, as their calls reached the APIs. */
  readonly dispatchesPerSecond: number;
  /** The most writes one of the pool's items took in one whole second of virtual time, and which item. */
  readonly poolItemPeakWritesPerSecond: number;
  readonly poolItemPeak: string;
  readonly durationSeconds: number;
}

/**
 * Runs `lanes` lanes of `bench` (its tiers, latency and AWS latency) with `jobsPerLane` jobs each, all drawing from a
 * pool of ten times the lane's tiers (none without `pooled`), and reports the dispatch rate of the busiest second over
 * every lane, and the busiest second of the pool's items (its ledger saves and lease renewals, and the settlements
 * workers append to it).
 */
export async function simulatedLanesCeiling(
  bench: BenchScenario,
  lanes: number,
  jobsPerLane: number,
  pooled = true,
): Promise<SimulatedLanesCeiling> {
  const awsLatency = bench.awsLatency ?? NO_LATENCY;
  const start = SIMULATION_START;
  const clock = new FakeClock(start);
  const pool = { name: POOL_NAME, quotas: parseTiers(bench.quotas.map(tenfold)) };
  const scenarios = Array.from({ length: lanes }, (_, i) =>
    parseScenario({
      name: `${bench.name} lane ${i}`,
      seed: 1 + i,
      quotas: bench.quotas.map(plain),
      jobs: { count: jobsPerLane },
      api: { latencyMs: bench.latencyMs },
      startDelays: bench.startDelays ?? REALISTIC_START_DELAYS,
      awsLatency,
      maxSeconds: 3_600,
    }),
  );
  const memory = memoryStores();
  const writes = new PoolWrites(memory.ledger, clock);
  const stores = {
    lease: withLatency(memory.lease, clock, awsLatency.dynamodbMs),
    ledger: withLatency(writes.store(), clock, awsLatency.dynamodbMs),
    circuit: withLatency(memory.circuit, clock, awsLatency.dynamodbMs),
    idempotency: withLatency(memory.idempotency, clock, awsLatency.dynamodbMs),
    limits: withLatency(memory.limits, clock, awsLatency.dynamodbMs),
  };
  const shared = [new SharedTiers(POOL_NAME, pool.quotas)];
  const random = seededRandom(7);
  const laneParts = await Promise.all(
    scenarios.map(async (scenario, i) => {
      const config: ServiceConfig = { ...scenario.config, lane: `lane-${i}`, ...(pooled ? { pools: [pool] } : {}) };
      const queues = new MemoryQueues({ clock, maxReceiveCount: 10 });
      // The memory queues' message ids repeat from lane to lane, where SQS's never do: each job gets a key of its own.
      const jobs = buildJobs(scenario, seededRandom(scenario.seed));
      for (const [n, job] of jobs.entries())
        await queues.send(job.queue, {
          body: job.body,
          attributes: { idempotencyKey: { dataType: 'String', value: `${config.lane}/${n}` } },
        });
      const api = new VirtualApi({ clock, tiers: config.quotas, shared, latencyMs: scenario.api.latencyMs });
      return { config, queues, api, timing: scenario.invokeTiming };
    }),
  );
  const byLane = new Map(laneParts.map((part) => [part.config.lane, part]));
  const invoker = new MemoryInvoker({
    clock,
    timing: new InvokeTiming(laneParts[0]?.timing ?? scenarios[0]!.invokeTiming, seededRandom(99)),
    handler: (event: WorkerEvent) => {
      const part = byLane.get(event.lane);
      if (part === undefined) throw new Error(`no lane ${event.lane}`);
      const queues = withLatency(part.queues, clock, awsLatency.sqsMs);
      return processWorkerEvent(event, { clock, stores, queues, api: part.api, config: part.config, random });
    },
  });
  const allEnded = () =>
    laneParts.every((part) => READ_ORDER.every((q) => part.queues.depth(q) === 0)) && invoker.idle();
  let ids = 0;
  let endedAt: number | undefined;
  const tickMs = scenarios[0]!.tickSeconds * 1000;
  const drive = async () => {
    for (let tick = 0; !allEnded() && clock.now() - start < 600_000; tick++) {
      const tickAt = start + tick * tickMs;
      while (clock.now() < tickAt && !allEnded()) await clock.sleep(Math.min(100, tickAt - clock.now()));
      if (allEnded()) break;
      const hub = new PoolHub();
      await Promise.all(
        laneParts.map(({ config, queues }) =>
          runOrchestrator(
            {
              clock,
              stores,
              queues: withLatency(queues, clock, awsLatency.sqsMs),
              invoker: withLatency(invoker, clock, awsLatency.lambdaMs),
              config,
              random,
              owner: `orchestrator-${tick}`,
              newId: () => `id-${++ids}`,
              pools: hub,
            },
            { deadline: tickAt + tickMs - 500, shouldStop: allEnded },
          ),
        ),
      );
    }
    endedAt = clock.now();
  };
  const driving = drive();
  await clock.runUntil(() => endedAt !== undefined, start + 700_000);
  await driving;
  const perSecond: number[] = [];
  for (const { api } of laneParts)
    callsPerSecond(api.callLog, start).forEach((n, i) => (perSecond[i] = (perSecond[i] ?? 0) + n));
  const peak = writes.peak();
  return {
    lanes,
    pooled,
    jobs: lanes * jobsPerLane,
    dispatchesPerSecond: Math.max(0, ...perSecond.map((n) => n ?? 0)),
    poolItemPeakWritesPerSecond: peak.writes,
    poolItemPeak: peak.item,
    durationSeconds: ((endedAt ?? clock.now()) - start) / 1000,
  };
}

/** `tier` as the scenario's JSON writes it. */
function plain(tier: Tier): { limit: number; per: string; unit?: string } {
  return { limit: tier.limit, per: tier.per, ...(tier.unit === 'requests' ? {} : { unit: tier.unit }) };
}

/** `tier` with ten times its limit. */
function tenfold(tier: Tier): { limit: number; per: string; unit?: string } {
  return { ...plain(tier), limit: 10 * tier.limit };
}

/** Counts the writes of the pool's items (its ledger saves, which renew its lease, and settlements), per second. */
class PoolWrites {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly ledger: LedgerStore,
    private readonly clock: FakeClock,
  ) {}

  /** The ledger store, counting the pool's writes. */
  store(): LedgerStore {
    const count = (item: string) => {
      const key = `${item}@${Math.floor(this.clock.now() / 1000)}`;
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    };
    const state = poolStateName(POOL_NAME);
    const { ledger } = this;
    return {
      loadLedger: (lane) => ledger.loadLedger(lane),
      pendingSettlements: (lane, options) => ledger.pendingSettlements(lane, options),
      saveLedger: (lane, saved, token, folded) => {
        if (lane === state) count(`lane#${state}`);
        return ledger.saveLedger(lane, saved, token, folded);
      },
      addSettlements: (lane, ...settlements: Settlement[]) => {
        if (lane === state) count(`settle#${state}`);
        return ledger.addSettlements(lane, ...settlements);
      },
    };
  }

  /** The item and second with the most writes. */
  peak(): { readonly item: string; readonly writes: number } {
    let best = { item: 'none', writes: 0 };
    for (const [key, writes] of this.counts)
      if (writes > best.writes) best = { item: key.slice(0, key.lastIndexOf('@')), writes };
    return best;
  }
}
