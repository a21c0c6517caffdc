import { spawnSync } from 'node:child_process';
import { createConnection } from 'node:net';
import { limiterChain, limiterSettings, runBaseline } from '../../../tools/bench/baselines';
import { callsPerSecond, idealSeconds } from '../../../tools/bench/measures';
import { startRedis } from '../../../tools/bench/redisServer';
import type { BenchScenario, StrategyResult } from '../../../tools/bench/types';
import { parseTiers, type Tier } from '../../../lib/domain/quota/tiers';

// The runs on an LLM API take about 2.5 s of real time each alone; on a loaded two-core machine, more than jest's
// default 5 s.
jest.setTimeout(30_000);

const PER_SECOND = (limit: number): Tier => parseTiers([{ limit, per: 'second' }])[0]!;
const PER_MINUTE = (limit: number): Tier => parseTiers([{ limit, per: 'minute' }])[0]!;

/**
 * 6 workers with 5 ms of latency could send about 1,200 calls a second, far above 20/s: naive fan-out must overshoot.
 * The minute tier (15/s) is the tightest, so the limiters space their calls by it and stay well under 20/s even
 * when arrivals jitter by a few ms (a limiter filling a tier exactly can be tipped over by that jitter).
 */
const TINY: BenchScenario = {
  name: 'tiny',
  jobs: 24,
  quotas: [PER_SECOND(20), PER_MINUTE(900)],
  latencyMs: 5,
  workers: 6,
};

const redisOnPath = spawnSync('sh', ['-c', 'command -v redis-server']).status === 0;

/** Whether something listens on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/** Every job was accepted exactly once: without an outage, every call is answered 200 or 429. */
function expectAllJobsDone(result: StrategyResult, scenario: BenchScenario): void {
  expect(result.unavailable).toBeUndefined();
  expect(result.apiCalls - result.rejectedByApi).toBe(scenario.jobs);
  expect(result.invocationsPerJob).toBeGreaterThanOrEqual(1);
  expect(sum(result.callsPerSecond)).toBe(result.apiCalls);
  expect(result.durationSeconds).toBeGreaterThan(0);
}

describe('runBaseline', () => {
  it('naive-fanout finishes every job and overshoots the quota', async () => {
    const result = await runBaseline('naive-fanout', TINY);
    expect(result.name).toBe('naive-fanout');
    expectAllJobsDone(result, TINY);
    expect(result.rejectedByApi).toBeGreaterThan(0);
    expect(result.callsPerJob).toBeGreaterThan(1);
  });

  it('per-worker-limiter finishes every job without a 429', async () => {
    const result = await runBaseline('per-worker-limiter', TINY);
    expectAllJobsDone(result, TINY);
    expect(result.rejectedByApi).toBe(0);
    expect(result.callsPerJob).toBe(1);
  });

  it(`shared-redis-limiter ${redisOnPath ? 'finishes every job without a 429' : 'says redis-server is unavailable'}`, async () => {
    const result = await runBaseline('shared-redis-limiter', TINY);
    if (redisOnPath) {
      expectAllJobsDone(result, TINY);
      expect(result.rejectedByApi).toBe(0);
    } else {
      expect(result.unavailable).toEqual(expect.any(String));
      expect(result.apiCalls).toBe(0);
    }
  });

  it('shared-redis-limiter reports a missing redis-server with zero figures instead of throwing', async () => {
    const result = await runBaseline('shared-redis-limiter', TINY, { redisServer: '/nonexistent/redis-server' });
    expect(result).toMatchObject({
      name: 'shared-redis-limiter',
      apiCalls: 0,
      durationSeconds: 0,
      utilization: 0,
      callsPerSecond: [],
    });
    expect(result.unavailable).toContain('/nonexistent/redis-server');
  });

  it('redelivers jobs whose invocation failed, and measures the recovery after an outage', async () => {
    const scenario: BenchScenario = { ...TINY, jobs: 6, outage: { atSeconds: 0, forSeconds: 0.5 } };
    const result = await runBaseline('naive-fanout', scenario, { redeliveryDelayMs: 100 });
    // Three attempts within about 0.2 s all fall in the outage, so every job needs a second invocation.
    expect(result.invocationsPerJob).toBeGreaterThanOrEqual(2);
    expect(result.recoverySeconds).toBeGreaterThanOrEqual(0);
    expect(result.idealSeconds).toBe(0.9);
    expect(sum(result.callsPerSecond)).toBe(result.apiCalls);
  });

  it('stops at the time limit and reports what happened so far', async () => {
    const scenario: BenchScenario = { ...TINY, jobs: 200 };
    const result = await runBaseline('per-worker-limiter', scenario, { timeLimitMs: 500 });
    expect(result.apiCalls).toBeGreaterThan(0);
    expect(result.apiCalls).toBeLessThan(scenario.jobs);
    expect(result.durationSeconds).toBeGreaterThanOrEqual(0.5);
    expect(result.durationSeconds).toBeLessThan(2);
  });
});

describe('limiterSettings', () => {
  const quotas = [PER_SECOND(50), PER_MINUTE(2000)];

  it('gives each of N workers its whole share of the tightest tier, spread evenly over the window', () => {
    expect(limiterSettings(quotas, 20)).toEqual({
      reservoir: 100,
      reservoirRefreshAmount: 100,
      reservoirRefreshInterval: 60_000,
      minTime: 600,
    });
  });

  it('gives a shared limiter the whole quota', () => {
    expect(limiterSettings(quotas, 1)).toEqual({
      reservoir: 2000,
      reservoirRefreshAmount: 2000,
      reservoirRefreshInterval: 60_000,
      minTime: 30,
    });
  });

  it('rounds a share down to whole calls, and below one call per window stretches the interval', () => {
    expect(limiterSettings([PER_SECOND(20)], 6)).toMatchObject({
      reservoir: 3,
      reservoirRefreshInterval: 1000,
      minTime: 334,
    });
    expect(limiterSettings([PER_SECOND(5)], 20)).toMatchObject({
      reservoir: 1,
      reservoirRefreshInterval: 4000,
      minTime: 4000,
    });
  });

  it('sets nothing without a sliding tier', () => {
    expect(limiterSettings(parseTiers([{ limit: 100, per: 'day' }]), 4)).toEqual({});
  });
});

describe('limiterChain', () => {
  const quotas = parseTiers([
    { limit: 120, per: 'minute' },
    { limit: 60_000, per: 'minute', unit: 'output_tokens' },
  ]);
  const mean = (): number => 1_000;

  it('puts the request tiers and maxConcurrent in one limiter, and each token tier in its own, weighing a job by its reservation', () => {
    const [requests, output, ...rest] = limiterChain(quotas, 1, mean, 10);
    expect(rest).toEqual([]);
    expect(requests?.settings).toEqual({ ...limiterSettings([quotas[0]!], 1), maxConcurrent: 10 });
    // The whole share of output tokens every minute, at the pace of a mean reservation of 1 000: one a second.
    expect(output?.settings).toEqual({
      reservoir: 60_000,
      reservoirRefreshAmount: 60_000,
      reservoirRefreshInterval: 60_000,
      minTime: 1_000,
    });
    const costs = { input_tokens: 700, output_tokens: 1_024 };
    expect([requests?.weight(costs), output?.weight(costs)]).toEqual([1, 1_024]);
  });

  it('gives each of N workers a 1/N share of every tier and of maxConcurrent, at least one call at a time', () => {
    const [requests, output] = limiterChain(quotas, 20, mean, 10);
    expect(requests?.settings.maxConcurrent).toBe(1);
    expect(output?.settings).toMatchObject({ reservoir: 3_000, minTime: 20_000 });
  });

  it('is the plain request limiter without token tiers or a cap', () => {
    expect(limiterChain([PER_SECOND(50), PER_MINUTE(2000)], 20, mean).map((l) => l.settings)).toEqual([
      limiterSettings([PER_SECOND(50), PER_MINUTE(2000)], 20),
    ]);
  });
});

describe('runBaseline on an LLM API', () => {
  /** 12 LLM jobs, 6 workers, at most 2 calls in progress at the API: the limiters keep to it, naive fan-out does not. */
  const LLM: BenchScenario = {
    name: 'llm',
    jobs: 12,
    quotas: parseTiers([
      { limit: 600, per: 'minute' },
      { limit: 100_000, per: 'minute', unit: 'output_tokens' },
    ]),
    latencyMs: 30,
    workers: 6,
    maxInFlight: 2,
    llm: {
      jobs: { promptTokensMin: 10, promptTokensMax: 20, maxTokens: 100 },
      api: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 0.5 },
      concurrency: 2,
    },
  };

  it('naive-fanout runs into the concurrency limit, and reports the peak and the use of each tier', async () => {
    const result = await runBaseline('naive-fanout', LLM);
    expectAllJobsDone(result, LLM);
    expect(result.rejectedByApi).toBeGreaterThan(0);
    expect(result.peakCallsInFlight).toBeGreaterThan(2);
    expect(Object.keys(result.tierUtilization ?? {})).toEqual(['600/minute', '100000 output_tokens/minute']);
    expect(result.tierUtilization?.['600/minute']).toBe(0.02); // 12 accepted calls, in less than a minute
  });

  it('per-worker-limiter holds each worker to one call at a time, which its share of maxInFlight cannot go below', async () => {
    const result = await runBaseline('per-worker-limiter', LLM);
    expectAllJobsDone(result, LLM);
    expect(result.peakCallsInFlight).toBeLessThanOrEqual(LLM.workers);
  });
});

describe('idealSeconds', () => {
  it('is the tightest sliding tier’s time for one call per job, plus the outage', () => {
    const scenario: BenchScenario = {
      name: 's',
      jobs: 1000,
      quotas: [PER_SECOND(50), PER_MINUTE(2000)],
      latencyMs: 50,
      workers: 20,
    };
    expect(idealSeconds(scenario)).toBe(30);
    expect(idealSeconds({ ...scenario, outage: { atSeconds: 10, forSeconds: 15 } })).toBe(45);
  });
});

describe('callsPerSecond', () => {
  it('counts arrivals per whole second from the start, with zeros for silent seconds', () => {
    const calls = [0, 999, 2500, 2999].map((t) => ({ at: 10_000 + t, id: 'job-1', status: 200 }));
    expect(callsPerSecond(calls, 10_000)).toEqual([2, 0, 2]);
  });
});

describe('startRedis', () => {
  it('answers unavailable, without throwing, when the binary is missing', async () => {
    const redis = await startRedis({ binary: '/nonexistent/redis-server' });
    expect(redis).toEqual({ unavailable: expect.stringContaining('/nonexistent/redis-server') });
  });

  (redisOnPath ? it : it.skip)('starts a server on 127.0.0.1 that stop() shuts down', async () => {
    const redis = await startRedis();
    if ('unavailable' in redis) throw new Error(redis.unavailable);
    expect(await accepts(redis.port)).toBe(true);
    await redis.stop();
    expect(await accepts(redis.port)).toBe(false);
  });
});
