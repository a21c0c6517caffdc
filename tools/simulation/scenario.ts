import { parseArrivals, type ArrivalPhase } from './arrivals';
import { parseServiceConfig, type ServiceConfig } from '../../lib/config';
import { describeValue } from '../../lib/domain/describeValue';
import { parseSettings } from '../../lib/domain/settings';
import { parseAwsLatency, type AwsLatencyProfile } from './awsLatency';
import { parseAllowed, type ScenarioAllowed } from './allowedLimits';
import { ConfigError } from '../../lib/errors';
import { parseRequestSettings, type RequestSettings } from '../../lib/requestSettings';
import {
  DEFAULT_DUPLICATES,
  parseDuplicateDeliveries,
  parseStartDelays,
  REALISTIC_START_DELAYS,
  type InvokeTimingModel,
} from './startDelays';

/**
 * How the simulated API answers like an LLM (Anthropic's Messages API): each call's body says its prompt's tokens
 * (`prompt_tokens`) and its `max_tokens`; the answer's output is drawn per job id, and takes longer the longer it is.
 */
export interface LlmModel {
  /** The output of each call is drawn uniformly from `[outputShareMin, outputShareMax] × max_tokens`, rounded. */
  readonly outputShareMin: number;
  readonly outputShareMax: number;
  /** Added to the latency of an accepted call per output token. */
  readonly msPerOutputToken: number;
}

/** An API outage, in seconds from the start of the run. */
export interface Outage {
  readonly atSeconds: number;
  readonly forSeconds: number;
}

/** The instants `[startMs, endMs)` of `outages` in a run that started at `start`. */
export function outageTimes(
  outages: readonly Outage[],
  start: number,
): { readonly startMs: number; readonly endMs: number }[] {
  return outages.map((o) => ({
    startMs: start + o.atSeconds * 1000,
    endMs: start + (o.atSeconds + o.forSeconds) * 1000,
  }));
}

/** A validated simulation scenario. */
export interface Scenario {
  readonly name: string;
  /** Seed of every random choice (costs, poison picks, jitter). */
  readonly seed: number;
  /** The service configuration under test (quotas, circuit, retry, pacing, orchestrator timing). */
  readonly config: ServiceConfig;
  readonly jobs: {
    /** Jobs of the run, all kinds together: in the backlog at the start, but main-queue jobs under `arrivals`. */
    readonly count: number;
    /** How many of them go to the FIFO queue, spread over `fifoGroups` groups. */
    readonly fifo: number;
    readonly fifoGroups: number;
    /** Jobs the API answers with 400: dead-lettered after one call. */
    readonly poison: number;
    /** Messages whose body is not JSON: dead-lettered by the orchestrator without an API call. */
    readonly malformed: number;
    /** How many of them go to the bulk queue (the last ones): jobs that may wait for the main queue's. */
    readonly bulk: number;
    /**
     * When the main queue's well-formed jobs are sent, phase after phase (see `arrivalTimes`). @default none: all are
     * in the backlog at the start
     */
    readonly arrivals?: readonly ArrivalPhase[];
    /** Each job's cost is drawn uniformly from this range (whole units). */
    readonly costMin: number;
    readonly costMax: number;
    /**
     * LLM jobs (JSON `jobs.llm`): each body carries `prompt_tokens`, drawn uniformly from
     * `[promptTokensMin, promptTokensMax]`, and `max_tokens`; the producer reserves the prompt as `input_tokens` and
     * `max_tokens` as `output_tokens` (see `JobSpec.costs`). @default none: jobs carry a `cost`
     */
    readonly llm?: LlmJobs;
  };
  readonly api: {
    readonly latencyMs: number;
    readonly outages: readonly Outage[];
    /** Calls in progress above which the API answers 429 (JSON `api.concurrency`). @default no limit */
    readonly concurrency?: number;
    /** The API answers like an LLM (JSON `api.llm`, see `LlmModel`); needs `jobs.llm`. @default a plain API */
    readonly llm?: LlmModel;
    /**
     * What the API really allows when it is not the configured quotas, and whether its answers say so (JSON
     * `api.allowed`, see `parseAllowed`). @default the configured quotas, no rate-limit headers
     */
    readonly allowed?: ScenarioAllowed;
  };
  /**
   * When workers start after their asynchronous invoke, and which events Lambda delivers twice. JSON:
   * `startDelays` (`{"kind":"realistic", …}` by default, or `{"kind":"fixed","ms":N}`) and `duplicateDeliveries`
   * (`{"share":0}` for a single delivery). The older `invokeLatencyMs: N` still reads as `startDelays` fixed at N.
   * @default realistic start delays and 2 % of events delivered twice (see `startDelays.ts`)
   */
  readonly invokeTiming: InvokeTimingModel;
  /** Seconds between scheduled orchestrator ticks (EventBridge `rate(1 minute)`). */
  readonly tickSeconds: number;
  /** Each run stops this long before the next tick, so runs never overlap. */
  readonly stopMarginMs: number;
  /** The simulation gives up (and reports what is lost) after this many virtual seconds. */
  readonly maxSeconds: number;
  /**
   * Latency added to each AWS request (JSON `awsLatency`: `{"lambdaMs","dynamodbMs","sqsMs"}`), as AWS answers where
   * the emulators and memory answer at once. @default none
   */
  readonly awsLatency: AwsLatencyProfile;
  /**
   * How the workers' requests look to the provider in a local run (JSON `request`: `apiMethod`, `requestHeaders`,
   * `apiKeyHeader`, `apiKeyScheme`, `healthCheckSendsKey`, as in serverless.yml): the local run's simulated API
   * requires these headers and the key on every call (and health check), and refuses a request without them as a
   * provider does. The simulation on virtual time sends no HTTP and ignores it. @default `authorization: Bearer <key>`
   */
  readonly request: RequestSettings;
}

/** The token counts of LLM jobs (see `Scenario.jobs.llm`). */
export interface LlmJobs {
  readonly promptTokensMin: number;
  readonly promptTokensMax: number;
  readonly maxTokens: number;
}

/** The keys of a scenario that are the service's configuration (see `parseServiceConfig`). */
export const CONFIG_KEYS: readonly (keyof ServiceConfig)[] = [
  'quotas',
  'timeZone',
  'maxInFlight',
  'units',
  'usagePreset',
  'limits',
  'priorities',
  'circuit',
  'retry',
  'pacing',
  'orchestrator',
];

const KEYS = [
  'name',
  'seed',
  'quotas',
  'timeZone',
  'maxInFlight',
  'units',
  'usagePreset',
  'limits',
  'priorities',
  'jobs',
  'api',
  'invokeLatencyMs',
  'startDelays',
  'duplicateDeliveries',
  'tickSeconds',
  'stopMarginMs',
  'maxSeconds',
  'awsLatency',
  'request',
  'circuit',
  'retry',
  'pacing',
  'orchestrator',
];

const LLM_JOB_DEFAULTS: LlmJobs = { promptTokensMin: 500, promptTokensMax: 2000, maxTokens: 1024 };
const LLM_JOB_RANGES = {
  promptTokensMin: { min: 0, max: 1_000_000, integer: true },
  promptTokensMax: { min: 0, max: 1_000_000, integer: true },
  maxTokens: { min: 1, max: 1_000_000, integer: true },
} as const;

const LLM_API_DEFAULTS: LlmModel = { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 0 };
const LLM_API_RANGES = {
  outputShareMin: { min: 0, max: 1 },
  outputShareMax: { min: 0, max: 1 },
  msPerOutputToken: { min: 0, max: 1_000 },
} as const;

const JOB_DEFAULTS = { count: 300, fifo: 0, fifoGroups: 1, poison: 0, malformed: 0, bulk: 0, costMin: 1, costMax: 1 };
const JOB_RANGES = {
  count: { min: 1, max: 1_000_000, integer: true },
  fifo: { min: 0, max: 1_000_000, integer: true },
  fifoGroups: { min: 1, max: 10_000, integer: true },
  poison: { min: 0, max: 1_000_000, integer: true },
  malformed: { min: 0, max: 1_000_000, integer: true },
  bulk: { min: 0, max: 1_000_000, integer: true },
  costMin: { min: 0, max: 1e12, integer: true },
  costMax: { min: 0, max: 1e12, integer: true },
} as const;

const RUN_DEFAULTS = { seed: 1, invokeLatencyMs: 20, tickSeconds: 60, stopMarginMs: 500, maxSeconds: 3600 };
const RUN_RANGES = {
  seed: { min: 0, max: 2 ** 32 - 1, integer: true },
  invokeLatencyMs: { min: 0, max: 60_000, integer: true },
  tickSeconds: { min: 1, max: 900, integer: true },
  stopMarginMs: { min: 0, max: 60_000, integer: true },
  maxSeconds: { min: 1, max: 864_000, integer: true },
} as const;

function objectAt(value: unknown, field: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(field, `must be an object; got ${describeValue(value)}`);
  return value as Record<string, unknown>;
}

/**
 * Validates a scenario (the JSON of `--scenario FILE`); every field but `quotas` is optional.
 * The service's settings (`quotas`, `timeZone`, `maxInFlight`, `units`, `usagePreset`, `circuit`, `retry`, `pacing`,
 * `orchestrator`) are validated by `parseServiceConfig`.
 * @throws ConfigError naming the field and its allowed values, including cross-field rules (more FIFO, poison
 * and malformed jobs than jobs; `costMin > costMax`; a cost tier with jobs that carry no cost; `jobs.llm` with a
 * cost range, or a prompt range upside down; `api.llm` without `jobs.llm`, or an output share range upside down).
 * @param pools the pools of a lane of a scenario of several lanes, as the functions read them (see
 * `parseLanesScenario`): its config's `pools`.
 */
export function parseScenario(input: unknown, pools?: unknown): Scenario {
  const raw = objectAt(input, 'scenario');
  for (const key of Object.keys(raw))
    if (!KEYS.includes(key)) throw new ConfigError(key, `unknown key; allowed keys are ${KEYS.join(', ')}`);
  const name = raw.name ?? 'scenario';
  if (typeof name !== 'string') throw new ConfigError('name', `must be a string; got ${describeValue(name)}`);
  const { llm: llmRaw, arrivals: arrivalsRaw, ...jobsRaw } = objectAt(raw.jobs, 'jobs');
  const arrivals = parseArrivals(arrivalsRaw);
  const jobs = {
    ...parseSettings(jobsRaw, 'jobs', JOB_DEFAULTS, JOB_RANGES),
    ...(llmRaw === undefined ? {} : { llm: parseLlmJobs(llmRaw, jobsRaw) }),
    ...(arrivals === undefined ? {} : { arrivals }),
  };
  const set = jobs.fifo + jobs.poison + jobs.malformed + jobs.bulk;
  if (set > jobs.count)
    throw new ConfigError('jobs', `fifo + poison + malformed + bulk (${set}) must not exceed count (${jobs.count})`);
  if (jobs.costMin > jobs.costMax)
    throw new ConfigError('jobs.costMin', `must not exceed jobs.costMax (${jobs.costMax}); got ${jobs.costMin}`);
  const { seed, invokeLatencyMs, tickSeconds, stopMarginMs, maxSeconds } = parseSettings(
    Object.fromEntries(Object.entries(raw).filter(([k]) => k in RUN_RANGES)),
    'scenario',
    RUN_DEFAULTS,
    RUN_RANGES,
  );
  const config = parseServiceConfig(
    {
      ...Object.fromEntries(Object.entries(raw).filter(([k]) => (CONFIG_KEYS as readonly string[]).includes(k))),
      ...(pools === undefined ? {} : { pools }),
    },
    // A job set whose costs are all 1 gives a cost tier nothing to count beyond requests.
    { costsAvailable: jobs.costMax !== 1 || jobs.costMin !== 1 },
  );
  const awsLatency = parseAwsLatency(raw.awsLatency);
  const api = parseApi(raw.api);
  if (api.llm !== undefined && jobs.llm === undefined)
    throw new ConfigError('api.llm', "needs jobs.llm: an LLM API reads each body's prompt_tokens and max_tokens");
  return Object.freeze({
    name,
    seed,
    config,
    jobs,
    api,
    invokeTiming: parseInvokeTiming(raw, invokeLatencyMs),
    tickSeconds,
    stopMarginMs,
    maxSeconds,
    awsLatency,
    request: parseRequest(raw.request, config),
  });
}

const REQUEST_KEYS = ['apiMethod', 'requestHeaders', 'apiKeyHeader', 'apiKeyScheme', 'healthCheckSendsKey'];

/** `request`, checked as packaging checks the same settings. */
function parseRequest(input: unknown, config: ServiceConfig): RequestSettings {
  const raw = objectAt(input, 'request');
  for (const key of Object.keys(raw))
    if (!REQUEST_KEYS.includes(key))
      throw new ConfigError(`request.${key}`, `unknown key; allowed keys are ${REQUEST_KEYS.join(', ')}`);
  return parseRequestSettings(raw, config.circuit.probeChecksKey, {
    field: (key) => `request.${key}`,
    shown: (key) => describeValue(raw[key]),
    probeChecksKeyField: 'circuit.probeChecksKey',
  });
}

/** `startDelays` and `duplicateDeliveries`, or the fixed delay of an older scenario's `invokeLatencyMs`. */
function parseInvokeTiming(raw: Record<string, unknown>, invokeLatencyMs: number): InvokeTimingModel {
  if (raw.invokeLatencyMs !== undefined && raw.startDelays !== undefined)
    throw new ConfigError('invokeLatencyMs', 'give either invokeLatencyMs (a fixed delay) or startDelays, not both');
  const start =
    raw.startDelays !== undefined
      ? parseStartDelays(raw.startDelays)
      : raw.invokeLatencyMs !== undefined
        ? Object.freeze({ kind: 'fixed' as const, ms: invokeLatencyMs })
        : REALISTIC_START_DELAYS;
  const duplicates =
    raw.duplicateDeliveries === undefined ? DEFAULT_DUPLICATES : parseDuplicateDeliveries(raw.duplicateDeliveries);
  return Object.freeze({ start, duplicates });
}

/** `jobs.llm`, with the cross-field rules against the rest of `jobs` (`jobsRaw`). */
function parseLlmJobs(input: unknown, jobsRaw: Record<string, unknown>): LlmJobs {
  for (const key of ['costMin', 'costMax']) {
    if (jobsRaw[key] !== undefined)
      throw new ConfigError(
        `jobs.${key}`,
        'LLM jobs (jobs.llm) carry token estimates, not a cost: leave costMin and costMax out',
      );
  }
  const llm = parseSettings(input ?? {}, 'jobs.llm', LLM_JOB_DEFAULTS, LLM_JOB_RANGES);
  if (llm.promptTokensMin > llm.promptTokensMax)
    throw new ConfigError(
      'jobs.llm.promptTokensMin',
      `must not exceed jobs.llm.promptTokensMax (${llm.promptTokensMax}); got ${llm.promptTokensMin}`,
    );
  return llm;
}

/** `api.llm`. */
function parseLlmApi(input: unknown): LlmModel {
  const llm = parseSettings(input ?? {}, 'api.llm', LLM_API_DEFAULTS, LLM_API_RANGES);
  if (llm.outputShareMin > llm.outputShareMax)
    throw new ConfigError(
      'api.llm.outputShareMin',
      `must not exceed api.llm.outputShareMax (${llm.outputShareMax}); got ${llm.outputShareMin}`,
    );
  return llm;
}

const API_KEYS = ['latencyMs', 'outages', 'concurrency', 'llm', 'allowed'];

function parseApi(input: unknown): Scenario['api'] {
  const raw = objectAt(input, 'api');
  for (const key of Object.keys(raw))
    if (!API_KEYS.includes(key))
      throw new ConfigError(`api.${key}`, `unknown key; allowed keys are ${API_KEYS.join(', ')}`);
  const numbers = Object.fromEntries(Object.entries(raw).filter(([k]) => k === 'latencyMs' || k === 'concurrency'));
  const { latencyMs, concurrency } = parseSettings(
    numbers,
    'api',
    { latencyMs: 50, concurrency: 0 },
    { latencyMs: { min: 0, max: 60_000, integer: true }, concurrency: { min: 1, max: 100_000, integer: true } },
  );
  const outagesRaw = raw.outages ?? [];
  if (!Array.isArray(outagesRaw))
    throw new ConfigError(
      'api.outages',
      `must be a list of {"atSeconds","forSeconds"}; got ${describeValue(outagesRaw)}`,
    );
  const outages = outagesRaw.map((o, i) => {
    const outage = parseSettings(
      o,
      `api.outages[${i}]`,
      { atSeconds: -1, forSeconds: -1 },
      { atSeconds: { min: 0, max: 864_000 }, forSeconds: { min: 0.001, max: 864_000 } },
    );
    if (outage.atSeconds < 0 || outage.forSeconds < 0)
      throw new ConfigError(`api.outages[${i}]`, 'needs both atSeconds (0 to 864000) and forSeconds (0.001 to 864000)');
    return outage;
  });
  return {
    latencyMs,
    outages,
    ...(raw.concurrency === undefined ? {} : { concurrency }),
    ...(raw.llm === undefined ? {} : { llm: parseLlmApi(raw.llm) }),
    ...(raw.allowed === undefined ? {} : { allowed: parseAllowed(raw.allowed, 'api.allowed') }),
  };
}
