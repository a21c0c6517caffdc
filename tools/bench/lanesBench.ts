/**
 * The `lanes` scenario of the benchmark: three lanes, two of which share a pool, and one of those two whose API goes
 * down for a while, run by every strategy against the same simulated providers (each lane's API counts its own tiers,
 * and the two of the pool count the pool's together, as a provider counts an organisation's limit across models).
 */
import { randomUUID } from 'node:crypto';
import Bottleneck from 'bottleneck';
import { outageTimes } from '../simulation/scenario';
import { parseLanesScenario, type LanesScenario } from '../simulation/lanesScenario';
import { SharedTiers } from '../simulation/tierTally';
import { lanesSettings, runLocalLanes } from '../local/lanesRun';
import type { Template } from '../local/template';
import {
  chainOf,
  clustered,
  limiterChain,
  runBaselineWorkers,
  whyNotReady,
  type BaselineName,
  type ChainedLimiter,
  type Limiters,
} from './baselines';
import { lanesFigures, type LaneCalls, type LanesFigures } from './lanesMeasures';
import { tiersPerSecond } from './measures';
import { startRedis } from './redisServer';
import type { BenchSize } from './scenarios';
import { formatFixedWidth } from './table';
import { STRATEGIES, type BenchScenario, type StrategyName } from './types';

/** Builds the template `osls package` makes, with `edit` made to serverless.yml first (see `packagedTemplate`). */
export type PackagedTemplate = (edit: (config: Record<string, unknown>) => void) => Promise<Template>;

/** Concurrent workers of each lane for the baselines (SQS→Lambda `maximumConcurrency` per lane). */
const WORKERS_PER_LANE = 10;
/** A baseline that has not finished by then reports what it did so far. */
const TIME_LIMIT_MS = 180_000;

/** The scenario as `npm start -- --scenario` reads a file of lanes (see `parseLanesScenario`). */
export function lanesBenchInput(size: BenchSize): Record<string, unknown> {
  const scale = size === 'full' ? 3 : 1;
  const fast = { failureThreshold: 3, windowSeconds: 10, openSeconds: 1, healthCheckSeconds: 1 };
  const pacing = { rampSeconds: 1 };
  return {
    name: 'lanes',
    seed: 7,
    maxSeconds: 150,
    pools: { org: { quotas: [{ limit: 12, per: 'second' }] } },
    lanes: {
      down: {
        quotas: [{ limit: 10, per: 'second' }],
        pools: ['org'],
        jobs: { count: 60 * scale },
        api: { latencyMs: 50, outages: [{ atSeconds: 2 * scale, forSeconds: 5 * scale }] },
        circuit: fast,
        pacing,
      },
      mate: {
        quotas: [{ limit: 10, per: 'second' }],
        pools: ['org'],
        jobs: { count: 100 * scale },
        api: { latencyMs: 50 },
        circuit: fast,
        pacing,
      },
      solo: {
        quotas: [{ limit: 8, per: 'second' }],
        jobs: { count: 50 * scale },
        api: { latencyMs: 50 },
        circuit: fast,
        pacing,
      },
    },
  };
}

/** What one strategy did on the `lanes` scenario. */
export interface LanesStrategyResult {
  readonly name: StrategyName;
  /** From the start to the last lane's last accepted call. */
  readonly durationSeconds: number;
  readonly figures?: LanesFigures;
  /** Set when the strategy could not run here (no `redis-server`). */
  readonly unavailable?: string;
}

/**
 * Every strategy on the `lanes` scenario of `size`, one after the other. The orchestrator runs the service packaged in
 * the lanes form (`packaged` builds the template with the scenario's lanes) on the local stack.
 */
export async function compareLanes(
  size: BenchSize,
  packaged: PackagedTemplate,
  onStart: (name: string) => void = () => undefined,
): Promise<{ readonly scenario: LanesScenario; readonly results: LanesStrategyResult[] }> {
  const scenario = parseLanesScenario(lanesBenchInput(size));
  const results: LanesStrategyResult[] = [];
  for (const name of STRATEGIES) {
    onStart(name);
    results.push(
      name === 'orchestrator' ? await runOrchestrator(scenario, packaged) : await runBaseline(name, scenario),
    );
  }
  return { scenario, results };
}

/** The lanes of `scenario` as its measures see them, from each lane's calls and the run's `start`. */
function laneCalls(scenario: LanesScenario, calls: (lane: string) => LaneCalls['calls'], start: number): LaneCalls[] {
  return scenario.lanes.map(({ config, api }) => {
    const [outage] = outageTimes(api.outages, start);
    return {
      lane: config.lane,
      calls: calls(config.lane),
      perSecond: tiersPerSecond(config.quotas),
      pools: (config.pools ?? []).map((pool) => pool.name),
      ...(outage === undefined ? {} : { outage }),
    };
  });
}

/** The figures of a run of `scenario` that started at `start`, from each lane's calls. */
function resultOf(
  name: StrategyName,
  scenario: LanesScenario,
  lanes: readonly LaneCalls[],
  start: number,
): LanesStrategyResult {
  const pools = scenario.pools.map((pool) => ({ pool: pool.name, perSecond: tiersPerSecond(pool.quotas) }));
  const lastAccepted = Math.max(start, ...lanes.flatMap((lane) => lane.calls.filter((c) => c.usage).map((c) => c.at)));
  return {
    name,
    durationSeconds: Math.round(lastAccepted - start) / 1000,
    figures: lanesFigures(lanes, pools, start),
  };
}

async function runOrchestrator(scenario: LanesScenario, packaged: PackagedTemplate): Promise<LanesStrategyResult> {
  const template = await packaged((config) => {
    const custom = config.custom as Record<string, Record<string, unknown>>;
    custom.quotaOrchestrator = lanesSettings(scenario, { orchestrator: custom.quotaOrchestrator!.orchestrator });
  });
  const run = await runLocalLanes({ scenario, template });
  const byLane = new Map(run.lanes.map((lane) => [lane.lane, lane.calls]));
  return resultOf(
    'orchestrator',
    scenario,
    laneCalls(scenario, (lane) => byLane.get(lane) ?? [], run.start),
    run.start,
  );
}

/**
 * A baseline on every lane at once, each lane with its own workers and its own simulated API: naive fan-out calls
 * directly; per-worker limiters give each worker its share of its lane's quota and of each pool's (shared by the
 * workers of every lane of the pool); shared limiters keep one limiter per lane and one per pool in Redis.
 */
async function runBaseline(name: BaselineName, scenario: LanesScenario): Promise<LanesStrategyResult> {
  const pools = new Map(scenario.pools.map((pool) => [pool.name, new SharedTiers(pool.name, pool.quotas)]));
  const redis = name === 'shared-redis-limiter' ? await startRedis({}) : undefined;
  if (redis !== undefined && 'unavailable' in redis)
    return { name, durationSeconds: 0, unavailable: redis.unavailable };
  try {
    const workersOf = (pool: string) =>
      scenario.lanes.filter((lane) => lane.config.pools?.some((p) => p.name === pool)).length * WORKERS_PER_LANE;
    const runId = `bench-lanes-${randomUUID()}`;
    const limitersOf = (lane: BenchScenario, poolNames: readonly string[]): Limiters[] => {
      if (name === 'naive-fanout') return [];
      const chains: ChainedLimiter[][] = [
        name === 'per-worker-limiter'
          ? chainOf(lane, lane.workers)
          : clustered(chainOf(lane, 1), `${runId}-${lane.name}`, redis?.port ?? 0),
        ...poolNames.map((pool) => {
          const tiers = pools.get(pool)?.tiers ?? [];
          return name === 'per-worker-limiter'
            ? limiterChain(tiers, workersOf(pool), () => 1)
            : clustered(
                limiterChain(tiers, 1, () => 1),
                `${runId}-${pool}`,
                redis?.port ?? 0,
              );
        }),
      ];
      return Array.from({ length: lane.workers }, () =>
        chains.flat().map(({ settings, weight }) => ({ limiter: new Bottleneck(settings), weight })),
      );
    };
    const lanes = scenario.lanes.map((lane) => {
      const poolNames = (lane.config.pools ?? []).map((pool) => pool.name);
      const bench: BenchScenario = {
        name: lane.config.lane,
        jobs: lane.jobs.count,
        quotas: lane.config.quotas,
        latencyMs: lane.api.latencyMs,
        workers: WORKERS_PER_LANE,
        ...(lane.api.outages[0] === undefined ? {} : { outage: lane.api.outages[0] }),
      };
      return { bench, poolNames, limiters: limitersOf(bench, poolNames) };
    });
    const why = await whyNotReady(lanes.flatMap((lane) => lane.limiters.flat().map(({ limiter }) => limiter)));
    if (why !== undefined) return { name, durationSeconds: 0, unavailable: why };
    const runs = await Promise.all(
      lanes.map(({ bench, poolNames, limiters }) =>
        runBaselineWorkers(
          name,
          bench,
          { timeLimitMs: TIME_LIMIT_MS },
          limiters,
          poolNames.flatMap((pool) => pools.get(pool) ?? []),
        ),
      ),
    );
    const start = Math.min(...runs.map((run) => run.start));
    const byLane = new Map(runs.map((run, i) => [lanes[i]?.bench.name, run.calls]));
    return resultOf(
      name,
      scenario,
      laneCalls(scenario, (lane) => byLane.get(lane) ?? [], start),
      start,
    );
  } finally {
    if (redis !== undefined && !('unavailable' in redis)) await redis.stop();
  }
}

/** The `lanes` table: per strategy, what the APIs refused and each lane's and pool's utilization. */
export function lanesTable(scenario: LanesScenario, results: readonly LanesStrategyResult[]): string {
  const lanes = scenario.lanes.map((lane) => lane.config.lane);
  const pools = scenario.pools.map((pool) => pool.name);
  const percent = (x: number | undefined) => (x === undefined ? '–' : `${(x * 100).toFixed(0)} %`);
  const headers = [
    'strategy',
    'seconds',
    'refused',
    ...lanes.map((lane) => `lane ${lane}`),
    ...pools.map((pool) => `pool ${pool}`),
    'pool used by the others in the outage',
  ];
  const rows = results.map(({ name, durationSeconds, figures, unavailable: why }) => ({
    ...(why !== undefined || figures === undefined
      ? { first: name, spanning: `unavailable: ${why ?? 'no figures'}` }
      : {
          cells: [
            name,
            durationSeconds.toFixed(1),
            String(figures.rejectedByApi),
            ...lanes.map((lane) => percent(figures.lanes[lane]?.utilization)),
            ...pools.map((pool) => percent(figures.pools[pool]?.utilization)),
            percent(figures.outageTakenByOthers),
          ],
        }),
  }));
  const columns = headers.map((header, i) => ({ header, align: i === 0 ? ('left' as const) : ('right' as const) }));
  const described = scenario.lanes
    .map(({ config, jobs, api }) => {
      const pooled = (config.pools ?? []).map((pool) => ` + pool ${pool.name}`).join('');
      const down = api.outages.map((o) => `, down ${o.atSeconds}–${o.atSeconds + o.forSeconds} s`).join('');
      return `${config.lane} ${jobs.count} jobs at ${tiersPerSecond(config.quotas)}/s${pooled}${down}`;
    })
    .join('; ');
  const poolsDescribed = scenario.pools.map((pool) => `pool ${pool.name} ${tiersPerSecond(pool.quotas)}/s`).join('; ');
  return [
    `lanes (${described}; ${poolsDescribed}); utilization: what each used of what it was allowed while it had a backlog:`,
    formatFixedWidth(columns, rows),
  ].join('\n');
}
