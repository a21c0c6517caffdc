import { randomUUID } from 'node:crypto';
import { seededRandom } from '../simulation/random';
import { InvokeTiming, NO_DUPLICATES, REALISTIC_START_DELAYS } from '../simulation/startDelays';
import Bottleneck from 'bottleneck';
import { HttpApiCaller } from '../../lib/adapters/http/HttpApiCaller';
import { systemClock } from '../../lib/adapters/systemClock';
import { classify, type Classification } from '../../lib/domain/outcome/classify';
import { REQUESTS, unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';
import { startApiServer } from '../local/apiServer';
import type { JobSpec } from '../simulation/jobs';
import { outageTimes } from '../simulation/scenario';
import { VirtualApi } from '../simulation/virtualApi';
import { benchJobs } from './jobSet';
import { callsPerSecond, idealSeconds, optimalSecondsOf, recoverySeconds, tierUtilization } from './measures';
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

/**
 * AWS SDK for JavaScript v3 "standard" retry mode, as in the installed @smithy/core 3.41.0
 * (`dist-es/submodules/retry/util-retry`, which replaced the @smithy/util-retry package):
 * - `config.js` DEFAULT_MAX_ATTEMPTS = 3 attempts in all;
 * - `DefaultRetryBackoffStrategy.js`: full jitter, `floor(random * min(base * 2^retries, MAXIMUM_RETRY_DELAY))`,
 *   with `constants.js` MAXIMUM_RETRY_DELAY = 20 s;
 * - `retries-2026-config.js`: base `Retry.delay()` = 50 ms, and `Retry.throttlingDelay()` = 1000 ms for throttling
 *   errors such as a 429 (`constants.js` still lists the older 100 ms and 500 ms, which only the deprecated
 *   pre-SRA strategy uses);
 * - `StandardRetryStrategy.js`: a `retry-after` hint stretches the backoff to at most the hint, and by at most 5 s;
 * - the retry quota, per client: 500 tokens (INITIAL_RETRY_TOKENS); a retry takes `Retry.throttlingCost()` = 5
 *   after a throttling error and `Retry.cost()` = 14 after another; a success gives back the cost of its last
 *   retry, or NO_RETRY_INCREMENT = 1 if it needed none; without enough tokens, the call fails at once.
 */
const SDK = {
  maxAttempts: 3,
  baseDelayMs: 50,
  throttlingBaseDelayMs: 1_000,
  maxDelayMs: 20_000,
  retryAfterExtraMs: 5_000,
  retryTokens: 500,
  throttlingRetryCost: 5,
  retryCost: 14,
  noRetryIncrement: 1,
} as const;

/** Budget of one HTTP call: far above any answer of the simulated API (the SDK sets no request timeout by default). */
const CALL_TIMEOUT_MS = 30_000;
/** How often an idle worker looks for a visible job, as Lambda's SQS pollers do all the time. */
const POLL_MS = 10;
const REDIS_HOST = '127.0.0.1';
/** Bottleneck's default heartbeat in clustering mode (`redisStoreDefaults.heartbeatInterval`). */
const REDIS_HEARTBEAT_MS = 5_000;

/**
 * One SDK client's retry quota (a Lambda container keeps its client across invocations): a token bucket that makes
 * a client under sustained errors stop retrying.
 */
class SdkRetryQuota {
  private tokens: number = SDK.retryTokens;

  /** Takes the tokens of one retry after `kind`, and returns them; `undefined` when too few are left. */
  take(kind: 'rate-limited' | 'transient'): number | undefined {
    const cost = kind === 'rate-limited' ? SDK.throttlingRetryCost : SDK.retryCost;
    if (this.tokens < cost) return undefined;
    this.tokens -= cost;
    return cost;
  }

  /** A success gives back its last retry's cost, or one token if it needed no retry. */
  recordSuccess(lastRetryCost: number | undefined): void {
    this.tokens = Math.min(SDK.retryTokens, this.tokens + (lastRetryCost ?? SDK.noRetryIncrement));
  }
}

/**
 * The SDK's wait before retry number `retries + 1`. The SDK reads the hint from `retry-after` (and
 * `x-amz-retry-after`); `classify` also reads `retry-after-ms` and `x-ratelimit-reset`, which the simulated API does
 * not send, so the two agree here.
 */
function sdkRetryDelayMs(
  outcome: Extract<Classification, { kind: 'rate-limited' | 'transient' }>,
  retries: number,
): number {
  const base = outcome.kind === 'rate-limited' ? SDK.throttlingBaseDelayMs : SDK.baseDelayMs;
  const backoff = Math.floor(Math.random() * Math.min(base * 2 ** retries, SDK.maxDelayMs));
  const hint = outcome.retryAfterMs;
  return hint === undefined ? backoff : Math.max(backoff, Math.min(hint, backoff + SDK.retryAfterExtraMs));
}

/**
 * Sends `job` the way an SDK client with standard retries does: 429 and 5xx (and network errors) are retried
 * within the same invocation, sleeps included. No retry starts that would end after `deadline`.
 * @returns whether the API accepted the job.
 */
async function sendWithSdkRetries(
  caller: HttpApiCaller,
  quota: SdkRetryQuota,
  job: QueuedJob,
  deadline: number,
): Promise<boolean> {
  let lastRetryCost: number | undefined;
  for (let attempt = 1; ; attempt++) {
    const outcome = classify(await caller.call(job.body, { idempotencyKey: job.id }), systemClock.now());
    if (outcome.kind === 'success') {
      quota.recordSuccess(lastRetryCost);
      return true;
    }
    if (
      outcome.kind === 'permanent' ||
      outcome.kind === 'client-error' ||
      outcome.kind === 'caller-rejected' ||
      attempt >= SDK.maxAttempts
    )
      return false;
    const delayMs = sdkRetryDelayMs(outcome, attempt - 1);
    if (systemClock.now() + delayMs >= deadline) return false;
    lastRetryCost = quota.take(outcome.kind);
    if (lastRetryCost === undefined) return false;
    await systemClock.sleep(delayMs);
  }
}

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

/** A job of the queue: its id (the idempotency key), its body as sent, and its reservation. */
interface QueuedJob {
  readonly id: string;
  readonly body: string;
  readonly costs: Costs;
}

/** The scenario's job set as the baselines' queue holds it (every bench job is well-formed). */
function queuedJobs(jobs: readonly JobSpec[]): QueuedJob[] {
  return jobs.map((job, i) => ({ id: `job-${i + 1}`, body: job.body, costs: job.costs }));
}

/**
 * The job queue, standing for an SQS queue: jobs in order of visibility; a job given back becomes visible again
 * later, like a message whose visibility timeout ran out.
 */
class JobQueue {
  private readonly waiting: { readonly job: QueuedJob; readonly visibleAt: number }[];
  private readonly jobs: number;
  private done = 0;
  private lastDoneAt: number | undefined;

  constructor(jobs: readonly QueuedJob[], visibleAt: number) {
    this.waiting = jobs.map((job) => ({ job, visibleAt }));
    this.jobs = jobs.length;
  }

  /** The next visible job, how long to wait before looking again, or `undefined` once every job succeeded. */
  next(now: number): { readonly job: QueuedJob } | { readonly waitMs: number } | undefined {
    if (this.done === this.jobs) return undefined;
    const head = this.waiting[0];
    if (head === undefined) return { waitMs: POLL_MS };
    if (head.visibleAt > now) return { waitMs: Math.min(POLL_MS, head.visibleAt - now) };
    this.waiting.shift();
    return { job: head.job };
  }

  recordSuccess(at: number): void {
    this.done++;
    this.lastDoneAt = at;
  }

  /** Jobs accepted so far. */
  get succeeded(): number {
    return this.done;
  }

  /** When the last job was accepted. */
  get lastSuccessAt(): number | undefined {
    return this.lastDoneAt;
  }

  /** Visibility delays only grow with time, so appending keeps the queue in order of visibility. */
  redeliver(job: QueuedJob, visibleAt: number): void {
    this.waiting.push({ job, visibleAt });
  }
}

/** What the workers cost, summed over invocations. */
interface Usage {
  invocations: number;
  busyMs: number;
}

/** Seed of the baselines' start delays, so that every run and strategy draws the same ones. */
const START_DELAY_SEED = 11;

/**
 * One worker, standing for one of Lambda's N concurrent executions: it takes the next visible job, runs one
 * invocation with it (`send`), and gives it back to the queue for a redelivery if the invocation failed.
 */
async function work(
  send: (job: QueuedJob) => Promise<boolean>,
  queue: JobQueue,
  usage: Usage,
  redeliveryDelayMs: number,
  deadline: number,
  startDelayMs: () => number,
): Promise<void> {
  for (let now = systemClock.now(); now < deadline; now = systemClock.now()) {
    const next = queue.next(now);
    if (next === undefined) return;
    if ('waitMs' in next) {
      await systemClock.sleep(next.waitMs);
      continue;
    }
    usage.invocations++;
    // The start delay holds the job and bills its time, as Lambda's init does.
    const lateMs = startDelayMs();
    if (lateMs > 0) await systemClock.sleep(lateMs);
    // A limiter stopped at the time limit rejects the calls still waiting in it.
    const accepted = await send(next.job).catch(() => false);
    const end = systemClock.now();
    usage.busyMs += end - now;
    if (accepted) queue.recordSuccess(end);
    else queue.redeliver(next.job, end + redeliveryDelayMs);
  }
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
    ...(scenario.llm === undefined
      ? {}
      : { peakCallsInFlight: api.peakCallsInFlight(), tierUtilization: tierUtilization(api.callLog, scenario.quotas) }),
    callsPerSecond: callsPerSecond(api.callLog, start),
  };
}

/** Bottlenecks a job goes through in turn, each taking the job's weight in it. */
type Limiters = readonly { readonly limiter: Bottleneck; readonly weight: (costs: Costs) => number }[];

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

/**
 * Runs the scenario's jobs through N workers, each with `limiters[i]` (if any) around its SDK-style calls, against a
 * fresh simulated API served over HTTP; the outage is placed from the run's start.
 */
async function runWorkers(
  name: BaselineName,
  scenario: BenchScenario,
  options: BaselineOptions,
  limiters: readonly Limiters[],
): Promise<StrategyResult> {
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
    ...(llm === undefined ? {} : { llm: llm.api, concurrency: llm.concurrency }),
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
    return resultOf(name, scenario, { api, queue, usage, start, outage });
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
 * Every worker retries like an AWS SDK client in standard mode (see {@link SDK}): 3 attempts, full-jitter backoff
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
      return runWorkers(name, scenario, options, []);
    case 'per-worker-limiter': {
      const chain = chainOf(scenario, scenario.workers);
      return runWorkers(
        name,
        scenario,
        options,
        Array.from({ length: scenario.workers }, () =>
          chain.map(({ settings, weight }) => ({ limiter: new Bottleneck(settings), weight })),
        ),
      );
    }
    case 'shared-redis-limiter': {
      const redis = await startRedis({ binary: options.redisServer });
      if ('unavailable' in redis) return unavailable(name, redis.unavailable);
      try {
        const id = `bench-${randomUUID()}`;
        const chain = chainOf(scenario, 1).map(({ settings, weight }, i) => ({
          settings: {
            ...settings,
            id: `${id}-${i}`,
            datastore: 'ioredis',
            clientOptions: { host: REDIS_HOST, port: redis.port },
            // In clustering mode the reservoir is refreshed only on a heartbeat, every 5 s by default, and Bottleneck's
            // README asks for a refresh interval that is a multiple of it: a 1-s window gets a 1-s heartbeat.
            heartbeatInterval: Math.min(REDIS_HEARTBEAT_MS, settings.reservoirRefreshInterval ?? REDIS_HEARTBEAT_MS),
          },
          weight,
        }));
        const limiters = Array.from({ length: scenario.workers }, () =>
          chain.map(({ settings, weight }) => ({ limiter: new Bottleneck(settings), weight })),
        );
        const all = limiters.flat().map(({ limiter }) => limiter);
        try {
          await Promise.all(all.map((limiter) => limiter.ready()));
        } catch (error) {
          await Promise.all(all.map((limiter) => limiter.disconnect(false)));
          return unavailable(
            name,
            `Bottleneck could not use redis-server: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        return await runWorkers(name, scenario, options, limiters);
      } finally {
        await redis.stop();
      }
    }
  }
}

/** The limiters of `1/share` of the scenario's quota (see {@link limiterChain}), paced at its jobs' mean reservations. */
function chainOf(scenario: BenchScenario, share: number): ChainedLimiter[] {
  const jobs = benchJobs(scenario);
  const meanUnits = (tier: Tier): number =>
    jobs.reduce((sum, job) => sum + unitsFor(tier, job.costs), 0) / Math.max(1, jobs.length);
  return limiterChain(scenario.quotas, share, meanUnits, scenario.maxInFlight);
}
