/**
 * What a local service stack is made of and how it is driven (see `createServiceStack`): its options, the faults it
 * injects, the settings that make a test run in seconds, and the shapes of its runs and observations.
 */
import type { FunctionClients, EmulatorEndpoints } from './clients';
import type { FunctionHooks, LaneResources } from './harness';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV } from '../../lib/configFromEnv';
import type { QueueName } from '../../lib/ports/QueueReceiver';
import type { LogLevel } from '../../lib/adapters/log';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { JsonValue } from '../../lib/domain/json';
import type { Period, TierUnit } from '../../lib/domain/quota/tiers';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import type { MessageAttribute } from '../../lib/ports/QueueReceiver';
import type { OrchestratorEvent, RunSummary } from '../../lib/services/orchestrator/types';
import type { LlmModel } from '../simulation/scenario';
import type { InvokeTimingModel } from '../simulation/startDelays';
import type { VirtualApi } from '../simulation/virtualApi';

/** Name of the worker function on the harness's Lambda host; the orchestrator's `WORKER_FUNCTION_NAME`. */
export const WORKER_FUNCTION = 'quota-orchestrator-test-worker';

/** The lane of every service stack. */
export const LANE = 'default';

/** The pool of a stack whose lane draws from one (see `ServiceStackOptions.pool`). */
export const POOL = 'shared';

/**
 * Faults a stack injects into the service, for the fault suite: every hook is optional, and a stack without them
 * runs the production parts unchanged.
 */
export interface StackFaults extends Pick<FunctionHooks, 'workerDeps' | 'workerHandler'> {
  /** Called on each orchestrator run's fresh clients, e.g. to add fault middleware. */
  readonly orchestratorClients?: (clients: FunctionClients) => void;
  /** Called once on the worker's clients. */
  readonly workerClients?: (clients: FunctionClients) => void;
  /** Wraps the simulated API as the workers reach it over HTTP; the referee behind it still sees every call it passes on. */
  readonly api?: (api: VirtualApi) => ApiCaller;
}

/**
 * Service settings small enough for tests that finish in seconds, each within its range in `lib/config.ts` and
 * `lib/domain/…/settings`: a 5 s lease flushed every 0.5 s, a 2 s worker timeout under a 4 s visibility, a circuit
 * that opens after 3 failures and checks after 1 s, 4 attempts with retries 1 s apart (SQS delays are whole
 * seconds), and no slow-start ramp or pause jitter.
 */
export const FAST_SETTINGS = {
  // Integration tests start a run and feed it later: it never ends for want of work (idleStopMs).
  orchestrator: {
    leaseTtlMs: 5_000,
    flushIntervalMs: 500,
    circuitPollMs: 50,
    visibilityTimeoutMs: 4_000,
    workerTimeoutMs: 2_000,
    idleWaitMs: 100,
    idleStopMs: 900_000,
    invokeBackoffMs: 50,
  },
  retry: { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 1_000 },
  circuit: {
    failureThreshold: 3,
    windowSeconds: 10,
    openSeconds: 1,
    healthCheckSeconds: 1,
    healthCheckTimeoutSeconds: 2,
  },
  // Workers, API and orchestrator share one event loop here: between a worker's clock check and its call reaching the
  // API, tens of ms can pass (the deployed default allows 15 of 25). Workers wait for their slot and give back a
  // call that would start too late, so the margin covers only that, not their start delay.
  pacing: { rampSeconds: 0, pauseJitterMs: 0, arrivalMarginMs: 100, callAllowanceMs: 70, dispatchLeadMs: 250 },
} as const;

/** A quota tier as `QUOTAS` takes it. */
export interface QuotaInput {
  readonly limit: number;
  readonly per: Period;
  readonly unit?: TierUnit;
}

/** Options of {@link createServiceStack}. */
export interface ServiceStackOptions {
  /** The lane's quota tiers: `QUOTAS`, and what the simulated API enforces. */
  readonly quotas: readonly QuotaInput[];
  /** How long the simulated API takes to answer a call or a probe. @default 10 */
  readonly latencyMs?: number;
  /** `MAX_IN_FLIGHT`: the most calls of the lane in progress at once. @default no cap */
  readonly maxInFlight?: number;
  /** `UNITS` and `USAGE_PRESET`: each named unit's default estimate and usage source, as the config takes them. @default none */
  readonly units?: JsonValue;
  readonly usagePreset?: string;
  /** `LIMITS`: how the lane learns its limits from the API's headers, as the config takes them. @default enforce, none */
  readonly limits?: JsonValue;
  /** `PRIORITIES`: the bulk class's share, as the config takes it. @default bulkShare 0.1 */
  readonly priorities?: JsonValue;
  /** Calls in progress above which the simulated API answers 429 (see `VirtualApiOptions.concurrency`). @default no limit */
  readonly apiConcurrency?: number;
  /** The simulated API answers like an LLM (see `VirtualApiOptions.llm`). @default a plain API */
  readonly llm?: LlmModel;
  /**
   * Windows `[fromMs, toMs)` during which the API answers 503, in ms after {@link ServiceStack.readyAt} (the instant
   * the simulated API was created, just before the stack is handed over).
   * @default []
   */
  readonly outages?: readonly { readonly fromMs: number; readonly toMs: number }[];
  /** Merged over {@link FAST_SETTINGS}' sections, then validated by the production config parser. */
  readonly orchestrator?: Readonly<Record<string, number>>;
  readonly retry?: Readonly<Record<string, number>>;
  readonly circuit?: Readonly<Record<string, number>>;
  readonly pacing?: Readonly<Record<string, number>>;
  /** Redrive `maxReceiveCount` of the source queues. @default 10 */
  readonly maxReceiveCount?: number;
  /**
   * The tiers of a pool the lane draws from (`POOLS`, the pool named {@link POOL}), which the simulated API enforces
   * besides the lane's. @default none
   */
  readonly pool?: readonly QuotaInput[];
  /**
   * A second lane (see `CompanionLane`) with these tiers of its own, drawing from {@link ServiceStackOptions.pool} too:
   * the functions then read the lanes form's environment. @default none
   */
  readonly companion?: readonly QuotaInput[];
  /** The emulators to create the table and queues on. */
  readonly emulators: EmulatorEndpoints;
  /**
   * The time of the orchestrator runs, the workers and the API (e.g. shifted to just before a midnight). AWS and the
   * emulators keep the wall clock.
   * @default the wall clock
   */
  readonly clock?: Clock;
  /** `TIME_ZONE` of the service's calendar tiers, and the zone the API counts its day and month tiers in. @default UTC */
  readonly timeZone?: string;
  /** @default none */
  readonly faults?: StackFaults;
  /**
   * When worker invocations start and which are delivered twice, drawn with `random`. The fault suite passes the
   * realistic model; tests that pin exact timings leave it out.
   * @default every worker starts at once, each event delivered once
   */
  readonly invokeTiming?: { readonly model: InvokeTimingModel; readonly random: () => number };
}

/** A message to put on a queue before or during a run. */
export interface TestMessage {
  /** Sent as is when a string, else as JSON. */
  readonly body: JsonValue | string;
  /** Required on the FIFO queue. */
  readonly groupId?: string;
  readonly attributes?: Readonly<Record<string, MessageAttribute>>;
}

/** Options of {@link ServiceStack.startOrchestrator}. */
export interface OrchestratorRunOptions {
  /** The run stops dispatching this long after it starts, unless stopped earlier. */
  readonly deadlineMs: number;
  /** Lease owner. @default a fresh unique name */
  readonly owner?: string;
  /**
   * Simulates a crash (the process killed by a timeout, an OOM or a deploy): the run's AWS clients refuse every
   * request after this many, so it stops at that point, with no final flush and no lease release.
   * @default never
   */
  readonly killAfterCalls?: number;
  /** Like `killAfterCalls`, but the run is killed at its `occurrence`-th request that is `command` (e.g. `InvokeCommand`). */
  readonly killAtCommand?: { readonly command: string; readonly occurrence: number };
  /**
   * Simulates a stale lease holder (a process paused, or cut off from AWS): once its request number `afterCalls`
   * has been answered, the run stands still for `forMs`, then goes on as if nothing had happened.
   * @default never
   */
  readonly freeze?: { readonly afterCalls: number; readonly forMs: number };
}

/** One orchestrator run in progress: the real service loop on the production adapters, with its own clients. */
export interface OrchestratorRun {
  readonly owner: string;
  /** Every event the run reported, in order. */
  readonly events: readonly OrchestratorEvent[];
  /** True once the run holds the lease (its first flush), false when it was refused; rejects if it failed before. */
  readonly started: Promise<boolean>;
  /** How the run ended; rejects with {@link SimulatedCrash} when `killAfterCalls` was reached. */
  readonly summary: Promise<RunSummary>;
  /** Asks the run to stop at its next step (it then flushes and releases the lease as on its deadline). */
  stop(): void;
}

/** One observed value of the lane's circuit status, polled from the state table. */
export interface CircuitSample {
  readonly at: number;
  readonly circuit: CircuitJSON | undefined;
}

/** A background poll of the circuit item; see {@link ServiceStack.watchCircuit}. */
export interface CircuitWatch {
  /** Samples whose status differs from the one before (the first sample always), in order. */
  readonly changes: readonly CircuitSample[];
  /** Ends the poll and waits for its last read. */
  stop(): Promise<void>;
}

/** One line the handlers logged. */
export interface LogLine {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * The functions' environment for the stack's lane, as serverless.yml gives it on AWS: its tiers and the settings of
 * `options` over {@link FAST_SETTINGS}, its pool, and its table, worker function and queues (`resources`), without
 * the API's URLs (the stack serves the API once it is built).
 */
export function stackEnvironment(options: ServiceStackOptions, resources: LaneResources): Record<string, string> {
  const settings = {
    orchestrator: { ...FAST_SETTINGS.orchestrator, ...options.orchestrator },
    retry: { ...FAST_SETTINGS.retry, ...options.retry },
    circuit: { ...FAST_SETTINGS.circuit, ...options.circuit },
    pacing: { ...FAST_SETTINGS.pacing, ...options.pacing },
  };
  const { tableName, queueUrls } = resources;
  return {
    [CONFIG_ENV.lane]: LANE,
    [CONFIG_ENV.quotas]: JSON.stringify(options.quotas),
    [CONFIG_ENV.orchestrator]: JSON.stringify(settings.orchestrator),
    [CONFIG_ENV.retry]: JSON.stringify(settings.retry),
    [CONFIG_ENV.circuit]: JSON.stringify(settings.circuit),
    [CONFIG_ENV.pacing]: JSON.stringify(settings.pacing),
    ...(options.timeZone === undefined ? {} : { [CONFIG_ENV.timeZone]: options.timeZone }),
    ...(options.maxInFlight === undefined ? {} : { [CONFIG_ENV.maxInFlight]: String(options.maxInFlight) }),
    ...(options.units === undefined ? {} : { [CONFIG_ENV.units]: JSON.stringify(options.units) }),
    ...(options.usagePreset === undefined ? {} : { [CONFIG_ENV.usagePreset]: options.usagePreset }),
    ...(options.limits === undefined ? {} : { [CONFIG_ENV.limits]: JSON.stringify(options.limits) }),
    ...(options.priorities === undefined ? {} : { [CONFIG_ENV.priorities]: JSON.stringify(options.priorities) }),
    ...(options.pool === undefined
      ? {}
      : { [CONFIG_ENV.pools]: JSON.stringify([{ name: POOL, quotas: options.pool }]) }),
    [RESOURCE_ENV.tableName]: tableName,
    [RESOURCE_ENV.workerFunctionName]: WORKER_FUNCTION,
    ...Object.fromEntries(Object.entries(QUEUE_URL_ENV).map(([queue, name]) => [name, queueUrls[queue as QueueName]])),
  };
}
