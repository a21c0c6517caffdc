import { randomUUID } from 'node:crypto';
import { seededRandom } from '../simulation/random';
import { InvokeTiming, NO_DUPLICATES, REALISTIC_START_DELAYS } from '../simulation/startDelays';
import Bottleneck from 'bottleneck';
import { HttpApiCaller } from '../../lib/adapters/http/HttpApiCaller';
import { systemClock } from '../../lib/adapters/systemClock';
import { REQUESTS, unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';
import {
  JobQueue,
  queuedJobs,
  SdkRetryQuota,
  sendWithSdkRetries,
  START_DELAY_SEED,
  work,
  type QueuedJob,
  type Usage,
} from './baselineWorkers';
import { startApiServer } from '../local/apiServer';
import { outageTimes } from '../simulation/scenario';
import { VirtualApi, type VirtualApiCall } from '../simulation/virtualApi';
import type { SharedTiers } from '../simulation/tierTally';
import { benchJobs } from './jobSet';
import {
  allowedShareOf,
  callsPerSecond,
  idealSeconds,
  optimalSecondsOf,
  recoverySeconds,
  tierUtilization,
} from './measures';
import { allowedFrom } from '../simulation/allowedLimits';
import { startRedis } from './redisServer';
import type { BenchScenario, StrategyName, StrategyResult } from './types';

/** The strategies that are not this project: how users call a quota-limited API from many workers without it. */
export type BaselineName = Exclude<StrategyName, 'orchestrator'>;

/** Options of {@link runBaseline}. */
export interface BaselineOptions {
  /**
   * How long a job whose invocation failed stays invisible before it is delivered again (a new invocation). It
   * stands for SQS's visibility timeout, whose default of 30 s would dwarf a bench run of about a minute.
   * @default 5000
   */
  readonly redeliveryDelayMs?: number;
  /** The run stops here even if jobs remain, and reports what happened so far. @default 600000 */
  readonly timeLimitMs?: number;
  /** The `redis-server` binary of `shared-redis-limiter`. @default 'redis-server' (from PATH) */
  readonly redisServer?: string;
}

/** Budget of one HTTP call: far above any answer of the simulated API (the SDK sets no request timeout by default). */
const CALL_TIMEOUT_MS = 30_000;
const REDIS_HOST = '127.0.0.1';
/** Bottleneck's default heartbeat in clustering mode (`redisStoreDefaults.heartbeatInterval`). */
const REDIS_HEARTBEAT_MS = 5_000;

/**
 * Bottleneck settings for one limiter that gets `1/share` of the quota (`share` = 1 for a shared limiter, N for
 * one of N per-worker limiters), as users write them: the tightest sliding tier's share as a reservoir refreshed
 * every window, and `minTime` spreading that share evenly over the window.
 *
 * The share is whole calls, `floor(limit / share)` (the whole quota never goes over the limit), or one call per
 * `ceil(window * share / limit)` when that is below one. The tightest tier is the one whose share leaves the
 * longest gap between calls, so that with this `minTime`, at most its share of every tier fits in any sliding
 * window. The reservoir alone would let each limiter fire its share in a burst at each refresh.
 */
export function limiterSettings(quotas: readonly Tier[], share: number): Bottleneck.ConstructorOptions {
  const shares = quotas
    .flatMap((tier) => tier.steadyRate() ?? [])
    .map(({ units, perMs }) => {
      const calls = Math.max(1, Math.floor(units / share));
      return { calls, intervalMs: Math.max(perMs, Math.ceil((perMs * share * calls) / units)) };
    });
  const tightest = shares.reduce<(typeof shares)[number] | undefined>(
    (worst, s) => (worst === undefined || s.intervalMs / s.calls > worst.intervalMs / worst.calls ? s : worst),
    undefined,
  );
  if (tightest === undefined) return {};
  return {
    reservoir: tightest.calls,
    reservoirRefreshAmount: tightest.calls,
    reservoirRefreshInterval: tightest.intervalMs,
    minTime: Math.ceil(tightest.intervalMs / tightest.calls),
  };
}

/** One Bottleneck of a {@link limiterChain}, and the weight a job takes from it. */
export interface ChainedLimiter {
  readonly settings: Bottleneck.ConstructorOptions;
  /** The job's weight in this limiter, from its reservation: 1 for requests, else its estimate of the tier's unit. */
  readonly weight: (costs: Costs) => number;
}

/**
 * The limiters a user writes for `1/share` of a quota whose tiers count named units (tokens), as Bottleneck allows
 * it: one limiter per tier, each job scheduled through all of them in turn with its weight in each.
 * - The request tiers share one limiter ({@link limiterSettings}), which also runs at most `maxConcurrent` jobs at
 *   once (the share of `maxInFlight`, at least 1).
 * - Each tier of a named unit gets a reservoir of its whole share, `floor(limit / share)` units, refreshed every
 *   window; a job takes its reservation from it (for an LLM call, the prompt's tokens and its `max_tokens`: what it
 *   may use, since the limiter learns nothing of the answer), and `minTime` spreads the jobs over the window at the
 *   pace of the mean reservation `meanUnits(tier)`, so that the refreshes do not let a whole share go at once.
 * A job waits in each limiter in turn, holding its place in the ones before (as nested `schedule` calls do).
 */
export function limiterChain(
  quotas: readonly Tier[],
  share: number,
  meanUnits: (tier: Tier) => number,
  maxConcurrent?: number,
): ChainedLimiter[] {
  const requests = limiterSettings(
    quotas.filter((tier) => tier.unit === REQUESTS),
    share,
  );
  const concurrency =
    maxConcurrent === undefined ? {} : { maxConcurrent: Math.max(1, Math.floor(maxConcurrent / share)) };
  const units = quotas.flatMap((tier): ChainedLimiter[] => {
    const rate = tier.steadyRate();
    if (tier.unit === REQUESTS || rate === undefined) return [];
    const reservoir = Math.max(1, Math.floor(rate.units / share));
    return [
      {
        settings: {
          reservoir,
          reservoirRefreshAmount: reservoir,
          reservoirRefreshInterval: rate.perMs,
          minTime: Math.ceil((rate.perMs * meanUnits(tier)) / reservoir),
        },
        weight: (costs) => unitsFor(tier, costs),
      },
    ];
  });
  return [{ settings: { ...requests, ...concurrency }, weight: () => 1 }, ...units];
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** What a finished (or time-limited) run of `scenario` measured. */
interface RunRecord {
  readonly api: VirtualApi;
  readonly queue: JobQueue;
  readonly usage: Usage;
  readonly start: number;
  readonly outage: { readonly startMs: number; readonly endMs: number } | undefined;
}

/** The figures of a run. A run cut by the time limit is measured against the best time of the jobs it finished. */
function resultOf(
  name: BaselineName,
  scenario: BenchScenario,
  { api, queue, usage, start, outage }: RunRecord,
): StrategyResult {
  const complete = queue.succeeded === scenario.jobs;
  const durationSeconds = round3(((complete ? (queue.lastSuccessAt ?? start) : systemClock.now()) - start) / 1000);
  const idealDone = idealSeconds(scenario, queue.succeeded);
  const { apiCalls, rejectedByApi } = api.report();
  return {
    name,
    durationSeconds,
    idealSeconds: idealSeconds(scenario),
    optimalSeconds: optimalSecondsOf(scenario),
    apiCalls,
    rejectedByApi,
    callsPerJob: round3(apiCalls / scenario.jobs),
    utilization: durationSeconds > 0 ? round3(idealDone / durationSeconds) : 0,
    invocationsPerJob: round3(usage.invocations / scenario.jobs),
    workerBusySecondsPerJob: round3(usage.busyMs / 1000 / scenario.jobs),
    ...(outage ? { recoverySeconds: recoverySeconds(api.callLog, outage.endMs) } : {}),
    ...(scenario.allowed === undefined
      ? {}
      : { allowedShare: allowedShareOf(scenario, durationSeconds, queue.succeeded) }),
    ...(scenario.llm === undefined
      ? {}
      : { peakCallsInFlight: api.peakCallsInFlight(), tierUtilization: tierUtilization(api.callLog, scenario.quotas) }),
    callsPerSecond: callsPerSecond(api.callLog, start),
  };
}

/** Bottlenecks a job goes through in turn, each taking the job's weight in it. */
export type Limiters = readonly { readonly limiter: Bottleneck; readonly weight: (costs: Costs) => number }[];

/** `send` through `limiters` in turn, each scheduled with the job's weight, as nested `schedule` calls run it. */
function throughLimiters(
  limiters: Limiters,
  send: (job: QueuedJob) => Promise<boolean>,
): (job: QueuedJob) => Promise<boolean> {
  return (job) =>
    limiters.reduceRight<() => Promise<boolean>>(
      (inner, { limiter, weight }) =>
        () =>
          limiter.schedule({ weight: weight(job.costs) }, inner),
      () => send(job),
    )();
}

/** What {@link runBaselineWorkers} measured: the strategy's figures, every job call the API saw, and the run's start. */
export interface BaselineRun {
  readonly result: StrategyResult;
  readonly calls: readonly VirtualApiCall[];
  readonly start: number;
}

/**
 * Runs the scenario's jobs through N workers, each with `limiters[i]` (if any) around its SDK-style calls, against a
 * fresh simulated API served over HTTP that also counts `shared` tiers (a pool it shares with other APIs); the
 * outage is placed from the run's start.
 */
export async function runBaselineWorkers(
  name: BaselineName,
  scenario: BenchScenario,
  options: BaselineOptions,
  limiters: readonly Limiters[],
  shared: readonly SharedTiers[] = [],
): Promise<BaselineRun> {
  const { redeliveryDelayMs = 5_000, timeLimitMs = 600_000 } = options;
  const jobs = queuedJobs(benchJobs(scenario));
  const start = systemClock.now();
  const deadline = start + timeLimitMs;
  const outages = outageTimes(scenario.outage === undefined ? [] : [scenario.outage], start);
  const [outage] = outages;
  const { llm } = scenario;
  const api = new VirtualApi({
    clock: systemClock,
    tiers: scenario.quotas,
    latencyMs: scenario.latencyMs,
    outages,
    shared,
    ...(llm === undefined ? {} : { llm: llm.api, concurrency: llm.concurrency }),
    ...(scenario.allowed === undefined ? {} : { allowed: allowedFrom(scenario.allowed, start) }),
  });
  const server = await startApiServer(api);
  const caller = new HttpApiCaller({ apiUrl: server.apiUrl, healthUrl: server.healthUrl, timeoutMs: CALL_TIMEOUT_MS });
  const all = limiters.flatMap((chain) => chain.map(({ limiter }) => limiter));
  const stopLimiters = setTimeout(
    () => all.forEach((limiter) => void limiter.stop({ dropWaitingJobs: true }).catch(() => undefined)),
    timeLimitMs,
  );
  try {
    const queue = new JobQueue(jobs, start);
    const usage: Usage = { invocations: 0, busyMs: 0 };
    const timing = new InvokeTiming(
      { start: scenario.startDelays ?? REALISTIC_START_DELAYS, duplicates: NO_DUPLICATES },
      seededRandom(START_DELAY_SEED),
    );
    const startDelayMs = (): number => timing.plan(systemClock.now()).startDelayMs;
    await Promise.all(
      Array.from({ length: scenario.busyWorkers ?? scenario.workers }, (_, i) => {
        const quota = new SdkRetryQuota();
        const send = (job: QueuedJob): Promise<boolean> => sendWithSdkRetries(caller, quota, job, deadline);
        return work(throughLimiters(limiters[i] ?? [], send), queue, usage, redeliveryDelayMs, deadline, startDelayMs);
      }),
    );
    return { result: resultOf(name, scenario, { api, queue, usage, start, outage }), calls: api.callLog, start };
  } finally {
    clearTimeout(stopLimiters);
    await Promise.all(all.map((limiter) => limiter.disconnect()));
    await server.close();
  }
}

/** The result of a strategy that could not run here: the reason, and zero figures. */
function unavailable(name: BaselineName, reason: string): StrategyResult {
  return {
    name,
    durationSeconds: 0,
    idealSeconds: 0,
    optimalSeconds: 0,
    apiCalls: 0,
    rejectedByApi: 0,
    callsPerJob: 0,
    utilization: 0,
    invocationsPerJob: 0,
    workerBusySecondsPerJob: 0,
    unavailable: reason,
    callsPerSecond: [],
  };
}

/**
 * Runs one baseline on `scenario` against a fresh simulated API (the scenario's quotas, latency and outage, served
 * over HTTP and called with the production `HttpApiCaller`), with `scenario.workers` concurrent workers standing
 * for SQS→Lambda with `maximumConcurrency` N. Each job start is one invocation; a job that still fails after the
 * in-worker retries goes back to the queue and is delivered again after `redeliveryDelayMs`. The run ends when
 * every job succeeded, or at `timeLimitMs` with the figures so far.
 *
 * Every worker retries like an AWS SDK client in standard mode (see `SDK` in baselineWorkers.ts): 3 attempts, full-jitter backoff
 * from 1 s for 429s and 50 ms for 5xx, stretched toward `retry-after`, and a retry quota per worker.
 * - `naive-fanout`: workers call the API directly.
 * - `per-worker-limiter`: each worker has its own local Bottleneck with 1/N of the quota ({@link limiterSettings}),
 *   wrapped around the SDK call as users write it, so retries run inside the limiter's slot.
 * - `shared-redis-limiter`: each worker has a Bottleneck in clustering mode (same `id`, ioredis) with the whole
 *   quota, on a `redis-server` started for the run and stopped after. If it cannot start, the result says why in
 *   `unavailable`, with zero figures.
 *
 * Where the tiers count tokens (the `llm` scenario), the limiters are token-aware as Bottleneck allows: one per tier
 * (see {@link limiterChain}), each job weighing its reservation (its prompt's tokens and its `max_tokens`) in the
 * token tiers and 1 in the request tiers, with `maxConcurrent` at the scenario's `maxInFlight` (a 1/N share of it
 * per worker). They reserve what a call may use and never learn what it did use, so they cannot hand anything back.
 * Naive fan-out just retries the 429s.
 *
 * Limiters and their Redis connections are disconnected at the end. Never throws for a missing Redis.
 */
export async function runBaseline(
  name: BaselineName,
  scenario: BenchScenario,
  options: BaselineOptions = {},
): Promise<StrategyResult> {
  switch (name) {
    case 'naive-fanout':
      return (await runBaselineWorkers(name, scenario, options, [])).result;
    case 'per-worker-limiter': {
      const chain = chainOf(scenario, scenario.workers);
      const limiters = Array.from({ length: scenario.workers }, () =>
        chain.map(({ settings, weight }) => ({ limiter: new Bottleneck(settings), weight })),
      );
      return (await runBaselineWorkers(name, scenario, options, limiters)).result;
    }
    case 'shared-redis-limiter': {
      const redis = await startRedis({ binary: options.redisServer });
      if ('unavailable' in redis) return unavailable(name, redis.unavailable);
      try {
        const chain = clustered(chainOf(scenario, 1), `bench-${randomUUID()}`, redis.port);
        const limiters = Array.from({ length: scenario.workers }, () =>
          chain.map(({ settings, weight }) => ({ limiter: new Bottleneck(settings), weight })),
        );
        const why = await whyNotReady(limiters.flat().map(({ limiter }) => limiter));
        if (why !== undefined) return unavailable(name, why);
        return (await runBaselineWorkers(name, scenario, options, limiters)).result;
      } finally {
        await redis.stop();
      }
    }
  }
}

/** The limiters of `1/share` of the scenario's quota (see {@link limiterChain}), paced at its jobs' mean reservations. */
export function chainOf(scenario: BenchScenario, share: number): ChainedLimiter[] {
  const jobs = benchJobs(scenario);
  const meanUnits = (tier: Tier): number =>
    jobs.reduce((sum, job) => sum + unitsFor(tier, job.costs), 0) / Math.max(1, jobs.length);
  return limiterChain(scenario.quotas, share, meanUnits, scenario.maxInFlight);
}

/**
 * `chain` as limiters in Bottleneck's clustering mode on the redis-server at `port`, one quota shared by every worker
 * that makes them: each limiter of the chain named `<id>-<i>`.
 */
export function clustered(chain: readonly ChainedLimiter[], id: string, port: number): ChainedLimiter[] {
  return chain.map(({ settings, weight }, i) => ({
    settings: {
      ...settings,
      id: `${id}-${i}`,
      datastore: 'ioredis',
      clientOptions: { host: REDIS_HOST, port },
      // In clustering mode the reservoir is refreshed only on a heartbeat, every 5 s by default, and Bottleneck's
      // README asks for a refresh interval that is a multiple of it: a 1-s window gets a 1-s heartbeat.
      heartbeatInterval: Math.min(REDIS_HEARTBEAT_MS, settings.reservoirRefreshInterval ?? REDIS_HEARTBEAT_MS),
    },
    weight,
  }));
}

/** Waits until `limiters` reach Redis. @returns why they cannot (they are disconnected then), or `undefined`. */
export async function whyNotReady(limiters: readonly Bottleneck[]): Promise<string | undefined> {
  try {
    await Promise.all(limiters.map((limiter) => limiter.ready()));
    return undefined;
  } catch (error) {
    await Promise.all(limiters.map((limiter) => limiter.disconnect(false)));
    return `Bottleneck could not use redis-server: ${error instanceof Error ? error.message : String(error)}`;
  }
}
