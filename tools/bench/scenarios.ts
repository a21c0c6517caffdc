import { parseTiers } from '../../lib/domain/quota/tiers';
import { AWS_LATENCY } from '../simulation/awsLatency';
import { REALISTIC_START_DELAYS } from '../simulation/startDelays';
import type { BenchScenario } from './types';

const SHORT_TIERS = parseTiers([
  { limit: 50, per: 'second' },
  { limit: 2000, per: 'minute' },
]);

/** Sizes of one bench run: the full one (under 10 minutes here) or `--quick` (under 2, for CI smoke use). */
export type BenchSize = 'full' | 'quick';

/**
 * The steady backlog: a few thousand jobs against 50/s and 2,000/min (33.3 calls/s at best), API latency 50 ms,
 * 20 baseline workers.
 */
export function steadyScenario(size: BenchSize): BenchScenario {
  return { name: 'steady', jobs: size === 'full' ? 2000 : 200, quotas: SHORT_TIERS, latencyMs: 50, workers: 20 };
}

/**
 * The steady backlog with only 5 of the 20 workers busy: what per-worker limiters, each held to 1/20 of the quota,
 * get out of it when Lambda has not scaled up (or the queue trickles).
 */
export function partlyBusyScenario(size: BenchSize): BenchScenario {
  return {
    ...steadyScenario(size),
    name: 'steady, 5 of 20 workers busy',
    jobs: size === 'full' ? 300 : 60,
    busyWorkers: 5,
  };
}

/** The steady backlog with a 15 s outage in the middle (5 s in the quick size). */
export function outageScenario(size: BenchSize): BenchScenario {
  return size === 'full'
    ? {
        name: 'outage',
        jobs: 1000,
        quotas: SHORT_TIERS,
        latencyMs: 50,
        workers: 20,
        outage: { atSeconds: 15, forSeconds: 15 },
      }
    : {
        name: 'outage',
        jobs: 200,
        quotas: SHORT_TIERS,
        latencyMs: 50,
        workers: 20,
        outage: { atSeconds: 2, forSeconds: 5 },
      };
}

/** One per-second tier alone (5/s) with 10 % of worker invocations starting 200 to 700 ms late. */
export function lateStartsScenario(size: BenchSize): BenchScenario {
  return {
    name: 'late-starts',
    jobs: size === 'full' ? 250 : 60,
    quotas: parseTiers([{ limit: 5, per: 'second' }]),
    latencyMs: 50,
    workers: 20,
    startDelays: {
      ...REALISTIC_START_DELAYS,
      coldShare: 0.1,
      coldMinMs: 200,
      coldMaxMs: 700,
      throttledShare: 0,
      holdShare: 0,
    },
  };
}

/**
 * Tiers of the `llm` scenario, per minute as Anthropic's are: requests, input tokens and output tokens. At a reservation
 * of the prompt (500 to 2,000 tokens) plus `max_tokens` (1,024) per call, output binds first: 60,000 / 1,024 = 58
 * calls a minute, against 120 requests and 200,000 / 1,250 = 160 prompts. At the real output (20 to 100 % of
 * `max_tokens`, 614 on average), output still binds, at 97 calls a minute: a strategy that learns each call's usage
 * and hands back the rest can go 1.6 times as fast as one that keeps `max_tokens` reserved.
 */
const LLM_TIERS = parseTiers([
  { limit: 120, per: 'minute' },
  { limit: 200_000, per: 'minute', unit: 'input_tokens' },
  { limit: 60_000, per: 'minute', unit: 'output_tokens' },
]);

/**
 * An LLM API: 160 jobs (30 in the quick size) of 500 to 2,000 prompt tokens and `max_tokens` 1,024, against
 * {@link LLM_TIERS} and a limit of 10 calls in progress, which is also the orchestrator's `maxInFlight` and the
 * limiters' `maxConcurrent`. The API answers in 300 ms plus 4 ms per output token (2.8 s on average, at most
 * 4.4 s), with Anthropic's usage body; it counts `max_tokens` toward the output tier when a call arrives and corrects
 * it to the real output when it answers. At the real output's pace the run takes about 100 s (20 s quick), and about
 * 165 s at `max_tokens`' pace.
 */
export function llmScenario(size: BenchSize): BenchScenario {
  return {
    name: 'llm',
    jobs: size === 'full' ? 160 : 30,
    quotas: LLM_TIERS,
    latencyMs: 300,
    workers: 20,
    maxInFlight: 10,
    llm: {
      jobs: { promptTokensMin: 500, promptTokensMax: 2000, maxTokens: 1024 },
      api: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 4 },
      concurrency: 10,
    },
  };
}

/** Growth: the orchestrator alone at 1×, 4× and 16× the jobs, against a quota it can fill (200/s). */
export function growthScenarios(size: BenchSize): BenchScenario[] {
  const base = size === 'full' ? 400 : 100;
  const factors = size === 'full' ? [1, 4, 16] : [1, 4];
  return factors.map((factor) => ({
    name: `growth ${factor}x`,
    jobs: base * factor,
    quotas: parseTiers([{ limit: 200, per: 'second' }]),
    latencyMs: 20,
    workers: 20,
  }));
}

/**
 * Ceiling: the orchestrator with a quota far above what one process can dispatch, each AWS request taking as long as
 * AWS takes it.
 */
export function ceilingScenario(size: BenchSize): BenchScenario {
  return {
    name: 'ceiling',
    jobs: size === 'full' ? 5000 : 1000,
    quotas: parseTiers([{ limit: 100_000, per: 'second' }]),
    latencyMs: 5,
    workers: 20,
    awsLatency: AWS_LATENCY,
  };
}

/**
 * Hot lane: an LLM API that allows 1,000 calls a second (its token tiers never bind), `maxInFlight` 1,000, answers
 * with Anthropic's usage body in 250 ms plus 2 ms per output token (20 to 100 % of `max_tokens` 100: about 370 ms
 * on average, so some 370 calls are in flight at the full rate). Every answer frees its call slot and hands back
 * the output it did not use, so each writes a settlement: the load on the busiest item (the lane item, which holds
 * the pending settlements and the call slots). 5,000 jobs (1,500 in the quick size): 5 s at the quota's rate.
 */
export function hotLaneScenario(size: BenchSize): BenchScenario {
  return {
    name: 'hot-lane',
    jobs: size === 'full' ? 5000 : 1500,
    quotas: parseTiers([
      { limit: 1000, per: 'second' },
      { limit: 250_000, per: 'second', unit: 'input_tokens' },
      { limit: 150_000, per: 'second', unit: 'output_tokens' },
    ]),
    latencyMs: 250,
    workers: 20,
    maxInFlight: 1000,
    llm: {
      jobs: { promptTokensMin: 50, promptTokensMax: 200, maxTokens: 100 },
      api: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 2 },
      concurrency: 1000,
    },
  };
}

/**
 * Adaptive: the lane is configured at 20 calls a second, but the API allows 12 (a key another caller shares) and,
 * from 25 s on (6 s in the quick size), 8 (a provider that lowers a tier mid-run), and says so in every answer's IETF
 * `RateLimit` fields. 600 jobs (150 quick): about 62 s at what the API allows (16 s quick), 30 s at what is
 * configured.
 */
export function adaptiveScenario(size: BenchSize): BenchScenario {
  return {
    name: 'adaptive',
    jobs: size === 'full' ? 600 : 150,
    quotas: parseTiers([{ limit: 20, per: 'second' }]),
    latencyMs: 50,
    workers: 20,
    allowed: {
      headers: 'ietf',
      changes: [
        { atSeconds: 0, limits: [12] },
        { atSeconds: size === 'full' ? 25 : 6, limits: [8] },
      ],
    },
  };
}
