import type { Tier } from '../../lib/domain/quota/tiers';
import type { AwsLatencyProfile } from '../simulation/awsLatency';
import type { LlmJobs } from '../simulation/scenario';
import type { LlmModel } from '../simulation/scenario';
import type { StartDelayModel } from '../simulation/startDelays';
import type { ScenarioAllowed } from '../simulation/allowedLimits';

/** The strategies the benchmark compares, in table order. */
export const STRATEGIES = ['naive-fanout', 'per-worker-limiter', 'shared-redis-limiter', 'orchestrator'] as const;

/** One way of calling a quota-limited API from many workers. */
export type StrategyName = (typeof STRATEGIES)[number];

/** One benchmark scenario: the same job set and the same quota-enforcing API for every strategy. */
export interface BenchScenario {
  readonly name: string;
  /** Jobs in the backlog at the start; bodies are `{"id": "job-<n>"}`. */
  readonly jobs: number;
  readonly quotas: readonly Tier[];
  /** How long the API takes to answer each call. */
  readonly latencyMs: number;
  /** An API outage (every call and probe answered 503), in seconds from the start. */
  readonly outage?: { readonly atSeconds: number; readonly forSeconds: number };
  /** Concurrent workers of the baselines (SQS→Lambda `maximumConcurrency`); per-worker limiters get a 1/N share. */
  readonly workers: number;
  /** How many of them actually run, e.g. while Lambda scales up or the queue trickles. @default workers */
  readonly busyWorkers?: number;
  /**
   * When each worker invocation starts after its invoke (or its job's delivery), for every strategy alike: drawn
   * from a fixed seed. Delivered once each: the baselines would see no second delivery.
   * @default REALISTIC_START_DELAYS (warm starts, a share of cold and throttled ones, rare holds of seconds)
   */
  readonly startDelays?: StartDelayModel;
  /** Latency added to each AWS request of the orchestrator's functions, as AWS takes it. @default none */
  readonly awsLatency?: AwsLatencyProfile;
  /**
   * LLM jobs against an LLM API (see `LlmBench`): bodies carry `prompt_tokens` and `max_tokens`, the API answers
   * with its usage in the body and corrects its output tiers to it. @default plain jobs `{"id"}`, one request each
   */
  readonly llm?: LlmBench;
  /**
   * The orchestrator lane's `maxInFlight`, and the most calls the baselines' limiters run at once (Bottleneck's
   * `maxConcurrent`: all of it for the shared limiter, a 1/N share for the per-worker ones). @default no cap
   */
  readonly maxInFlight?: number;
  /**
   * What the API really allows when it is less than `quotas` says, and whether its answers say so (see
   * `ScenarioAllowed`): what the orchestrator's lane learns from (its `limits`: the headers' format, and `enforce`).
   * @default `quotas`' limits, no headers
   */
  readonly allowed?: ScenarioAllowed;
}

/** The LLM side of a {@link BenchScenario}. */
export interface LlmBench {
  /** The jobs' prompt tokens and `max_tokens`. */
  readonly jobs: LlmJobs;
  /** How the API draws each answer's output and how long it takes. */
  readonly api: LlmModel;
  /** Calls in progress above which the API answers 429. */
  readonly concurrency: number;
}

/** What one strategy did on one scenario: the benchmark's contract (docs/benchmark.md), plus the orchestrator's extras. */
export interface StrategyResult {
  readonly name: StrategyName;
  readonly durationSeconds: number;
  /** The tightest tier's long-run time for one call per job, plus the outage. */
  readonly idealSeconds: number;
  /** The physical limit: the time to the last call when each goes as soon as every tier allows it, the API up. */
  readonly optimalSeconds: number;
  readonly apiCalls: number;
  readonly rejectedByApi: number;
  readonly callsPerJob: number;
  /** `idealSeconds / durationSeconds`. */
  readonly utilization: number;
  /** Worker starts per job. */
  readonly invocationsPerJob: number;
  /** Time workers spent per job, waits and sleeps included: what Lambda bills. */
  readonly workerBusySecondsPerJob: number;
  /** Outage scenario: seconds from the end of the outage to the first successful job call after it. */
  readonly recoverySeconds?: number;
  /** Orchestrator only: DynamoDB capacity units per job, as DynamoDB reports them (by item size), and SQS requests. */
  readonly dynamodbReadUnitsPerJob?: number;
  readonly dynamodbWriteUnitsPerJob?: number;
  readonly sqsRequestsPerJob?: number;
  /**
   * LLM scenario: the most job calls the API had in progress at once, whatever its answers (see
   * `peakCallsInFlight` in `virtualApi.ts`).
   */
  readonly peakCallsInFlight?: number;
  /**
   * LLM scenario, per sliding tier by its label (`60000 output_tokens/minute`): how much of the tier the strategy
   * used while it had a backlog (see `tierUtilization` in `measures.ts`); 1 is the whole limit in every window.
   */
  readonly tierUtilization?: Readonly<Record<string, number>>;
  /**
   * LLM scenario, orchestrator only, per named unit: the units its settlements handed back over the units they had
   * reserved (see `handedBackShare` in `measures.ts`).
   */
  readonly handedBackShare?: Readonly<Record<string, number>>;
  /**
   * Adaptive scenario (see `BenchScenario.allowed`): the time the API's real limits need for one call per job over
   * `durationSeconds`: the share of what the API really allowed that the strategy used (see `allowedSeconds`).
   */
  readonly allowedShare?: number;
  /** Set when the strategy could not run here (e.g. no `redis-server`); the figures are then zero. */
  readonly unavailable?: string;
  /** Job calls that reached the API in each second of the run, for the chart. */
  readonly callsPerSecond: readonly number[];
}
