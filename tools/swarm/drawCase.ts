import { parseScenario, type Scenario } from '../simulation/scenario';
import { seededRandom } from '../simulation/random';

/**
 * The faults one swarm seed injects, beside those its scenario carries (outages, late starts and second deliveries).
 * Every share is per request or per call, drawn anew each time.
 */
export interface FaultPlan {
  /** Share of store and queue writes that land and then fail, as a write whose answer was lost on every try. */
  readonly lostAnswers: number;
  /** Share of store writes made before a call (claims, refunds) that fail without landing: DynamoDB unavailable. */
  readonly unavailable: number;
  /** Share of job calls whose worker dies just before the request leaves. */
  readonly crashBeforeCall: number;
  /** Share of job calls whose worker dies once the answer is in, before it records anything. */
  readonly crashAfterCall: number;
  /** Share of orchestrator runs killed, each at a random request. */
  readonly killedRuns: number;
  /** The workers' clocks run this many ms ahead (or behind, negative) of the orchestrator's. */
  readonly workerSkewMs: number;
  /** Windows in which the API answers 429 with a `Retry-After` of `retryAfterSeconds`, in ms after the start. */
  readonly rateLimited: readonly {
    readonly fromMs: number;
    readonly toMs: number;
    readonly retryAfterSeconds: number;
  }[];
  /**
   * The API key's reads (SSM with KMS) before a request: this share takes 200 ms to 3 s (a new container, or an
   * expired cache), and `keyReadFailures` of them fail.
   */
  readonly slowKeyReads: number;
  readonly keyReadFailures: number;
  /** Share of jobs whose first one to three calls the API answers 503 (a job that fails, then succeeds). */
  readonly flakyJobs: number;
  /** Windows in which the API refuses the caller with 401 (a revoked key) while its health URL answers 200. */
  readonly callerRejected: readonly { readonly fromMs: number; readonly toMs: number }[];
  /** Share of the API's answers whose rate-limit headers lie, vanish or are malformed (see `HEADER_LIES`). */
  readonly lyingHeaders: number;
}

/** One seed's case: the scenario it runs, the faults it injects, and the families it drew. */
export interface SwarmCase {
  readonly seed: number;
  readonly scenario: Scenario;
  readonly faults: FaultPlan;
  /** The fault families this seed drew, for the report (`late-starts`, `lost-answers`, …). */
  readonly families: readonly string[];
}

/** A draw in `[min, max]`, whole when both bounds are. */
type Draw = (min: number, max: number) => number;

/** The families a seed can draw, each with the chance it is on. */
const FAMILY_CHANCE = {
  'late-starts': 0.5,
  'second-deliveries': 0.5,
  'lost-answers': 0.4,
  'dynamodb-unavailable': 0.25,
  'worker-crashes': 0.35,
  'orchestrator-kills': 0.3,
  'clock-skew': 0.3,
  outages: 0.35,
  'rate-limited': 0.3,
  'caller-rejected': 0.2,
  fifo: 0.5,
  'max-in-flight': 0.35,
  'poison-and-malformed': 0.4,
  'flaky-jobs': 0.4,
  'events-held': 0.25,
  'key-reads': 0.3,
  'aws-latency': 0.4,
} as const;

type Family = keyof typeof FAMILY_CHANCE;

/**
 * Draws seed `seed`'s case: a small backlog (8 to 30 jobs) on one to two tiers, and a random subset of the fault
 * families, each at a random strength. The same seed gives the same case on every machine.
 */
export function drawCase(seed: number): SwarmCase {
  const random = seededRandom(seed * 2_654_435_761 + 97);
  const draw: Draw = (min, max) =>
    Number.isInteger(min) && Number.isInteger(max)
      ? min + Math.floor(random() * (max - min + 1))
      : min + random() * (max - min);
  const on = new Set(
    (Object.entries(FAMILY_CHANCE) as [Family, number][]).filter(([, chance]) => random() < chance).map(([f]) => f),
  );
  const input = scenarioInput(seed, on, draw);
  const faults = faultPlan(on, draw);
  // Drawn last, so that every earlier draw, and each regression seed's case, stays as it was before it.
  const slowTableMs = on.has('aws-latency') && random01(draw) < SLOW_TABLE_CHANCE ? draw(60, 250) : undefined;
  const slowed = slowTableMs === undefined ? input : withSlowTable(input, slowTableMs);
  // Later still, for the same reason.
  const learning = random01(draw) < LEARNED_LIMITS_CHANCE ? learnedLimits(slowed, draw) : undefined;
  const learnt = learning?.input ?? slowed;
  // And later again.
  const bulk = random01(draw) < BULK_CHANCE ? withBulk(learnt, draw) : undefined;
  const scenario = parseScenario(bulk ?? learnt);
  const families = [
    ...on,
    ...(slowTableMs === undefined ? [] : [SLOW_TABLE]),
    ...(learning === undefined ? [] : [LEARNED_LIMITS]),
    ...(learning === undefined || learning.lying === 0 ? [] : [LYING_HEADERS]),
    ...(bulk === undefined ? [] : [BULK]),
  ];
  return { seed, scenario, faults: { ...faults, lyingHeaders: learning?.lying ?? 0 }, families: families.sort() };
}

/**
 * The family of a seed whose API allows less than its first tier says, and less again from a drawn instant on, and
 * says so in OpenAI's headers, which the lane enforces: drawn at {@link LEARNED_LIMITS_CHANCE}, after the others.
 */
export const LEARNED_LIMITS = 'learned-limits';

/** The family of a learned-limits seed some of whose API's answers lie in their headers (see `HEADER_LIES`). */
export const LYING_HEADERS = 'lying-headers';

/** The chance that a seed's API allows less than configured and says so. */
const LEARNED_LIMITS_CHANCE = 0.3;

/**
 * `input` with an API that allows its first tier (per second) less than configured, and less again later, in its
 * headers; the lane learning from them and enforcing them; and the share of answers whose headers lie.
 */
function learnedLimits(
  input: Record<string, unknown>,
  draw: Draw,
): { readonly input: Record<string, unknown>; readonly lying: number } {
  const [first] = input.quotas as { readonly limit: number }[];
  const limit = first?.limit ?? 1;
  const allowed = {
    headers: 'openai',
    changes: [
      { atSeconds: 0, limits: [draw(1, limit)] },
      { atSeconds: draw(1, 20), limits: [draw(1, limit)] },
    ],
  };
  const lying = random01(draw) < 0.5 ? draw(0.05, 0.4) : 0;
  return {
    input: {
      ...input,
      limits: { headers: 'openai', per: 'second', learn: 'enforce' },
      api: { ...(input.api as Record<string, unknown>), allowed },
    },
    lying,
  };
}

/**
 * The family of a seed some of whose jobs go to the bulk queue, with a drawn `bulkShare`: drawn at {@link BULK_CHANCE},
 * after every other draw.
 */
export const BULK = 'bulk';

/** The chance that a seed sends some of its jobs to the bulk queue. */
const BULK_CHANCE = 0.3;

/**
 * `input` with from one to all of its standard jobs in the bulk queue, and a `bulkShare` from 0.05 to 0.5; `undefined`
 * when it has no standard job.
 */
function withBulk(input: Record<string, unknown>, draw: Draw): Record<string, unknown> | undefined {
  const jobs = input.jobs as { count: number; fifo: number; poison: number; malformed: number };
  const standard = jobs.count - jobs.fifo - jobs.poison - jobs.malformed;
  if (standard < 1) return undefined;
  return { ...input, jobs: { ...jobs, bulk: draw(1, standard) }, priorities: { bulkShare: draw(0.05, 0.5) } };
}

/**
 * The family of a seed whose AWS latency has DynamoDB answer every request in 60 to 250 ms (throttled and retried),
 * slower than a worker's 50 ms circuit check: drawn within `aws-latency`, at {@link SLOW_TABLE_CHANCE}.
 */
export const SLOW_TABLE = 'slow-table';

/** The chance that a seed with `aws-latency` has a slow table. */
const SLOW_TABLE_CHANCE = 0.3;

/** `input` with DynamoDB answering each request in `ms`. */
function withSlowTable(input: Record<string, unknown>, ms: number): Record<string, unknown> {
  return { ...input, awsLatency: { ...(input.awsLatency as Record<string, unknown>), dynamodbMs: ms } };
}

/** The scenario JSON of a seed that drew the families `on`. */
function scenarioInput(seed: number, on: ReadonlySet<Family>, draw: Draw): Record<string, unknown> {
  const count = draw(8, 30);
  const fifo = on.has('fifo') ? draw(2, Math.min(10, count - 3)) : 0;
  const poison = on.has('poison-and-malformed') ? draw(0, 2) : 0;
  const malformed = on.has('poison-and-malformed') ? draw(0, 1) : 0;
  const perSecond = draw(2, 12);
  const quotas: Record<string, unknown>[] = [{ limit: perSecond, per: 'second' }];
  if (random01(draw) < 0.5) quotas.push({ limit: perSecond * draw(8, 40), per: 'minute' });
  const latencyMs = on.has('max-in-flight') ? draw(100, 900) : draw(10, 200);
  return {
    name: `swarm seed ${seed}`,
    seed,
    quotas,
    ...(on.has('max-in-flight') ? { maxInFlight: draw(1, 4) } : {}),
    jobs: { count, fifo, fifoGroups: fifo === 0 ? 1 : draw(1, 3), poison, malformed },
    api: {
      latencyMs,
      outages: on.has('outages') ? [{ atSeconds: draw(1, 20), forSeconds: draw(1, 12) }] : [],
    },
    startDelays:
      on.has('late-starts') || on.has('events-held')
        ? {
            kind: 'realistic',
            coldShare: on.has('late-starts') ? draw(0.05, 0.5) : 0,
            coldMinMs: 100,
            coldMaxMs: draw(200, 2_000),
            // Lambda holds an event in its queue (throttled, or retried): it starts after its visibility ran out.
            holdShare: on.has('events-held') ? draw(0.02, 0.2) : 0,
            holdMinMs: 5_000,
            holdMaxMs: draw(10_000, 120_000),
          }
        : { kind: 'fixed', ms: draw(5, 40) },
    duplicateDeliveries: on.has('second-deliveries') ? { share: draw(0.05, 0.4) } : { share: 0 },
    circuit: { failureThreshold: draw(2, 5), windowSeconds: 10, openSeconds: draw(1, 5), healthCheckSeconds: 1 },
    ...(on.has('aws-latency')
      ? { awsLatency: { lambdaMs: draw(5, 40), dynamodbMs: draw(2, 30), sqsMs: draw(5, 30) } }
      : {}),
    tickSeconds: 60,
    maxSeconds: 3_600,
  };
}

function random01(draw: Draw): number {
  return draw(0, 0.999_999);
}

/** The faults of the families `on`. */
function faultPlan(on: ReadonlySet<Family>, draw: Draw): FaultPlan {
  const window = (maxStartS: number, maxLengthS: number) => {
    const fromMs = draw(0, maxStartS * 1000);
    return { fromMs, toMs: fromMs + draw(500, maxLengthS * 1000) };
  };
  return {
    lostAnswers: on.has('lost-answers') ? draw(0.02, 0.15) : 0,
    unavailable: on.has('dynamodb-unavailable') ? draw(0.02, 0.1) : 0,
    crashBeforeCall: on.has('worker-crashes') ? draw(0, 0.1) : 0,
    crashAfterCall: on.has('worker-crashes') ? draw(0, 0.1) : 0,
    killedRuns: on.has('orchestrator-kills') ? draw(0.1, 0.5) : 0,
    workerSkewMs: on.has('clock-skew') ? draw(-40, 40) : 0,
    rateLimited: on.has('rate-limited') ? [{ ...window(4, 8), retryAfterSeconds: draw(1, 20) }] : [],
    callerRejected: on.has('caller-rejected') ? [window(20, 30)] : [],
    flakyJobs: on.has('flaky-jobs') ? draw(0.1, 0.6) : 0,
    slowKeyReads: on.has('key-reads') ? draw(0.05, 0.5) : 0,
    keyReadFailures: on.has('key-reads') ? draw(0, 0.3) : 0,
    lyingHeaders: 0,
  };
}
