import { CompanionLane } from './companionLane';
import { laneEnvs, readLane } from '../../lib/lanes/laneEnv';
import { PoolHub } from '../../lib/services/orchestrator/poolHub';
import { SharedTiers } from '../simulation/tierTally';
import {
  EXIT_RESERVE_MS,
  handlerFromEnv as orchestratorHandlerFromEnv,
  type OrchestratorResult,
} from '../../functions/orchestrator';
import { orchestratorDepsFromEnv } from '../../lib/wiring/orchestratorDeps';
import { destroyClients, type EmulatorEndpoints, type FunctionClients } from './clients';
import type { Log, LogLevel } from '../../lib/adapters/log';
import type { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { systemClock } from '../../lib/adapters/systemClock';
import type { ServiceConfig } from '../../lib/config';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV, serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { JsonValue } from '../../lib/domain/json';
import type { Period, TierUnit } from '../../lib/domain/quota/tiers';
import { addMiddleware } from './sdkMiddleware';
import type { DestinationRecord, LocalFunctionStats } from './lambdaHost';
import type { MessageAttribute, QueueName, ReceivedMessage } from '../../lib/ports/QueueReceiver';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import type { StateStores } from '../../lib/ports/StateStores';
import type { WorkerDeps } from '../../lib/services/worker/types';
import { runOrchestrator } from '../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent, RunSummary } from '../../lib/services/orchestrator/types';
import { InvokeTiming, type InvokeTimingModel } from '../simulation/startDelays';
import { VirtualApi } from '../simulation/virtualApi';
import type { LlmModel } from '../simulation/scenario';
import { LocalHarness, localTelemetry, uniqueName, type FunctionHooks } from './harness';
import { pause, waitFor } from './waitFor';

/** The worker outcomes of a dispatch given back without a call, its message returned to go out again. */
const GIVE_BACKS = ['too-late', 'held-back', 'not-ready', 'unclaimed'] as const;
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

/** How a killed run ends: it was stopped at its request number `afterCalls + 1`, a `command`. */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
  constructor(
    readonly afterCalls: number,
    readonly command: string,
  ) {
    super(`orchestrator killed (simulated crash) after ${afterCalls} AWS requests, at ${command}`);
  }
}

/** Pauses the run that uses `clients` for `forMs` right after its request number `afterCalls` is answered. */
function armFreeze(
  clients: FunctionClients,
  { afterCalls, forMs }: { readonly afterCalls: number; readonly forMs: number },
): void {
  let calls = 0;
  for (const client of [clients.dynamodb, clients.sqs, clients.lambda]) {
    addMiddleware(
      client,
      (next) => async (args) => {
        const output = await next(args);
        if (++calls === afterCalls) await pause(forMs);
        return output;
      },
      { step: 'initialize', name: 'simulatedFreeze' },
    );
  }
}

/** Which request of a run is its last: the request's number, its command, and how many of that command so far. */
type KillPoint = (request: {
  readonly number: number;
  readonly command: string;
  readonly ofCommand: number;
}) => boolean;

/**
 * Kills the run that uses `clients` at the first request `isKillPoint` picks, as a process killed there would stop:
 * that request and every later one never leave and never answer, so the run does nothing more, and `onKill` is told
 * which request it was. The hook sits in the `initialize` step, ahead of the SDK's retries.
 * `DynamoDBDocumentClient.from` shares the bare client's middleware stack, so the store is covered.
 */
function armKillSwitch(
  clients: FunctionClients,
  isKillPoint: KillPoint,
  onKill: (crash: SimulatedCrash) => void,
): void {
  let calls = 0;
  let killed = false;
  const perCommand = new Map<string, number>();
  const never = new Promise<never>(() => undefined);
  for (const client of [clients.dynamodb, clients.sqs, clients.lambda]) {
    addMiddleware(
      client,
      (next, context) => async (args) => {
        if (killed) return never;
        const command = String(context.commandName ?? 'unknown');
        const ofCommand = (perCommand.get(command) ?? 0) + 1;
        perCommand.set(command, ofCommand);
        if (!isKillPoint({ number: ++calls, command, ofCommand })) return next(args);
        killed = true;
        onKill(new SimulatedCrash(calls - 1, command));
        return never;
      },
      { step: 'initialize', name: 'simulatedCrash' },
    );
  }
}

/**
 * The whole service on the emulators, for one test: a {@link LocalHarness} on a fresh state table and six queues
 * (unique names), the simulated API (the quota referee) on the wall clock served over HTTP, and the real worker
 * handler behind the harness's Lambda host, built from an environment as on AWS. Orchestrator runs use the
 * production service loop or handler with their own clients, as separate Lambda containers would.
 *
 * Always {@link ServiceStack.close} it (in `afterEach`): it stops runs still going, waits for workers, and closes
 * the harness.
 */
export class ServiceStack {
  /** The functions' environment: `QUOTAS`, the settings, table, queues, worker function and API URLs. */
  readonly env: Env;
  /** The configuration the handlers read from {@link env}. */
  readonly config: ServiceConfig;
  /** The referee: what the API saw, and whether any tier was exceeded. */
  readonly api: VirtualApi;
  /** Wall-clock instant the API was created; {@link ServiceStackOptions.outages} are relative to it. */
  readonly readyAt: number;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  /** The production SQS adapter on the lane's queues, for tests to send and look. */
  readonly queues: SqsQueues;
  /** The production DynamoDB stores on the state table, for tests to look. */
  readonly stores: StateStores;
  /** On-failure records of worker invocations whose retries were exhausted (a crashing worker). */
  readonly workerFailures: readonly DestinationRecord[];
  /** What the handlers logged. */
  readonly logs: LogLine[];
  /** The second lane, if the stack has one (see `ServiceStackOptions.companion`). */
  readonly companion?: CompanionLane;

  private readonly runs = new Set<{ stop(): void; summary: Promise<unknown> }>();
  private closed = false;

  /** @internal use {@link createServiceStack} */
  constructor(
    parts: Pick<ServiceStack, 'env' | 'config' | 'api' | 'readyAt' | 'companion'>,
    /** The table, queues, API server and worker host. */
    readonly harness: LocalHarness,
    private readonly setup: {
      /** The very array the API was given as `outages`: the API reads it at every call, so pushing starts one. */
      readonly outages: { startMs: number; endMs: number }[];
      readonly faults: StackFaults;
      /** The time of runs, workers and API. */
      readonly clock: Clock;
      readonly timing: InvokeTiming | undefined;
    },
    logs: LogLine[],
    workerFailures: readonly DestinationRecord[],
  ) {
    ({ env: this.env, config: this.config, api: this.api, readyAt: this.readyAt, companion: this.companion } = parts);
    ({ queues: this.queues, stores: this.stores } = harness);
    this.queueUrls = harness.resources.queueUrls;
    this.logs = logs;
    this.workerFailures = workerFailures;
  }

  /** Log lines go to {@link logs}, so a failing test can show them. */
  readonly log: Log = (level, message, fields = {}) => {
    this.logs.push({ level, message, fields });
  };

  /**
   * Starts an outage now: the API answers every call and probe 503 for the next `forMs`.
   * @returns the instant it ends.
   */
  startOutage(forMs: number): number {
    const startMs = this.setup.clock.now();
    this.setup.outages.push({ startMs, endMs: startMs + forMs });
    return startMs + forMs;
  }

  /** Sends messages one by one, in order (so FIFO groups keep it), through the production adapter. */
  async send(queue: QueueName, messages: readonly TestMessage[]): Promise<void> {
    for (const message of messages) {
      await this.queues.send(queue, {
        body: typeof message.body === 'string' ? message.body : JSON.stringify(message.body),
        ...(message.attributes === undefined ? {} : { attributes: message.attributes }),
        ...(message.groupId === undefined ? {} : { groupId: message.groupId }),
      });
    }
  }

  /**
   * Starts one orchestrator run: `runOrchestrator` on `orchestratorDepsFromEnv(env, clients)` (the handler's own
   * dependencies) with fresh clients on the emulators and on the Lambda host, stoppable and optionally killed.
   */
  startOrchestrator(options: OrchestratorRunOptions): OrchestratorRun {
    const owner = options.owner ?? uniqueName('orchestrator');
    const clients = this.harness.runClients();
    this.setup.faults.orchestratorClients?.(clients);
    let kill: (crash: SimulatedCrash) => void = () => undefined;
    const killed = new Promise<never>((_, reject) => (kill = reject));
    const { killAfterCalls, killAtCommand } = options;
    if (killAfterCalls !== undefined) armKillSwitch(clients, (request) => request.number > killAfterCalls, kill);
    if (killAtCommand !== undefined)
      armKillSwitch(
        clients,
        (r) => r.command === killAtCommand.command && r.ofCommand === killAtCommand.occurrence,
        kill,
      );
    if (options.freeze !== undefined) armFreeze(clients, options.freeze);
    const events: OrchestratorEvent[] = [];
    let stopping = false;
    let markStarted: (started: boolean) => void = () => undefined;
    const started = new Promise<boolean>((resolve) => (markStarted = resolve));
    const onEvent = (event: OrchestratorEvent): void => {
      events.push(event);
      if (event.type === 'flushed') markStarted(true);
    };
    const { clock } = this.setup;
    // Each run stands for one invocation: each lane's run side by side, those that draw from a pool joining it through
    // the invocation's hub. It ends as its first lane's (the stack's own lane's) run.
    const lanes = laneEnvs(this.env).map((lane) => readLane(lane, (env) => orchestratorDepsFromEnv(env, clients)));
    const pools = lanes.some((base) => base.config.pools !== undefined) ? { pools: new PoolHub() } : {};
    const runOptions = { deadline: clock.now() + options.deadlineMs, shouldStop: () => stopping };
    const run = Promise.all(
      lanes.map((base) => runOrchestrator({ ...base, clock, owner, onEvent, ...pools }, runOptions)),
    ).then(([first]) => first ?? Promise.reject(new Error('the stack has no lane')));
    const summary = Promise.race([run, killed]).finally(() => destroyClients(clients));
    const entry = { stop: () => (stopping = true), summary: summary.catch(() => undefined) };
    this.runs.add(entry);
    void entry.summary.then(() => this.runs.delete(entry));
    const startedOrEnded = Promise.race([started, summary.then((s) => s.lease !== 'held-elsewhere')]);
    // It rejects when the run is killed before its first flush; callers that never await it must not see that as an
    // unhandled rejection (which ends the process).
    startedOrEnded.catch(() => undefined);
    return { owner, events, started: startedOrEnded, summary, stop: entry.stop };
  }

  /**
   * Runs the orchestrator until `done` holds (checked every 50 ms), then stops it and returns how it went.
   * @throws Error when `done` does not hold within `timeoutMs` (the run is stopped first), or when the run fails.
   */
  async runUntil(
    done: () => boolean | Promise<boolean>,
    options: { readonly timeoutMs: number; readonly what: string; readonly owner?: string },
  ): Promise<{ summary: RunSummary; events: readonly OrchestratorEvent[] }> {
    const run = this.startOrchestrator({
      deadlineMs: options.timeoutMs + 5_000,
      ...(options.owner === undefined ? {} : { owner: options.owner }),
    });
    try {
      await waitFor(done, { timeoutMs: options.timeoutMs, what: options.what });
    } finally {
      run.stop();
    }
    return { summary: await run.summary, events: run.events };
  }

  /**
   * Invokes the production orchestrator handler (`handlerFromEnv`) as a manual invoke would: an event without a
   * schedule `time`, and a context whose remaining time lets the run go on for `deadlineMs`.
   */
  async invokeOrchestratorHandler(options: {
    readonly deadlineMs: number;
    readonly requestId: string;
  }): Promise<OrchestratorResult> {
    const clients = this.harness.runClients();
    try {
      const handler = orchestratorHandlerFromEnv(this.env, clients, localTelemetry(this.log));
      const end = systemClock.now() + options.deadlineMs + EXIT_RESERVE_MS;
      return await handler(
        {},
        { awsRequestId: options.requestId, getRemainingTimeInMillis: () => end - systemClock.now() },
      );
    } finally {
      destroyClients(clients);
    }
  }

  /** Messages anywhere in a queue: visible, in flight or delayed. */
  count(queue: QueueName): Promise<number> {
    return this.harness.count(queue);
  }

  /**
   * True when the three source queues hold nothing (visible, in flight or delayed) and no worker is running, nor in
   * the companion lane's, if any.
   */
  async drained(): Promise<boolean> {
    return (await this.harness.drained()) && ((await this.companion?.drained()) ?? true);
  }

  /** Receives every visible message of a queue, keeping them hidden for a minute (they stay in the queue). */
  receiveAll(queue: QueueName): Promise<ReceivedMessage[]> {
    return this.harness.receiveAll(queue);
  }

  /** Messages per queue, for failure messages: `{ main: 0, 'main-dlq': 1, … }`. */
  counts(): Promise<Record<QueueName, number>> {
    return this.harness.counts();
  }

  /** The lane's circuit item as stored, through the production adapter. */
  circuit(): Promise<CircuitJSON | undefined> {
    return this.harness.circuit(LANE);
  }

  /** Polls the circuit item every `intervalMs` in the background and records each change of status. */
  watchCircuit(intervalMs = 20): CircuitWatch {
    const changes: CircuitSample[] = [];
    let running = true;
    const loop = (async () => {
      while (running) {
        const circuit = await this.circuit();
        const last = changes[changes.length - 1];
        if (last === undefined || last.circuit?.state.status !== circuit?.state.status)
          changes.push({ at: systemClock.now(), circuit });
        await pause(intervalMs);
      }
    })();
    return {
      changes,
      stop: async () => {
        running = false;
        await loop;
      },
    };
  }

  /** The worker function's counters on the Lambda host. */
  workerStats(): LocalFunctionStats {
    return this.harness.stats(WORKER_FUNCTION);
  }

  /**
   * Dispatches a worker gave back without a call: it started or was ready past the event's `callBy` (`too-late`),
   * the circuit stopped the lane before its slot (`held-back`), the API key could not be read (`not-ready`), or the
   * job's key could not be claimed (`unclaimed`). Each returned its message, which went out again. On a loaded machine a few happen even without an invoke timing, so a
   * run's `dispatched` is its jobs plus these.
   */
  dispatchesGivenBack(): number {
    const { results } = this.workerStats();
    return GIVE_BACKS.reduce((sum, outcome) => sum + (results.get(outcome) ?? 0), 0);
  }

  /** Worker starts the stack's invoke timing drew, by kind; empty without one. */
  workerStarts(): Readonly<Record<string, number>> {
    return this.setup.timing?.counts() ?? {};
  }

  /** True when no worker invocation is running or waiting for a retry. */
  workersIdle(): boolean {
    return this.harness.idle();
  }

  /**
   * Stops runs still going and waits for them, then closes the harness: it waits (up to 10 s) for workers to
   * finish, closes the Lambda host and the API server, deletes the table and destroys the clients. Safe to call twice.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const run of this.runs) run.stop();
    await Promise.all([...this.runs].map((run) => run.summary));
    await this.harness.close({ idleWithinMs: 10_000 });
    await this.companion?.close();
  }
}

/**
 * Builds a {@link ServiceStack}: a fresh harness first, then the environment (validated by the production config
 * parser, so a setting out of range fails here with its name), the API server, and the worker on the Lambda host
 * (timeout `workerTimeoutMs`, no async retries as deployed, failures recorded in `workerFailures`).
 * @throws ConfigError when a setting is out of its range.
 */
export async function createServiceStack(options: ServiceStackOptions): Promise<ServiceStack> {
  const harness = await LocalHarness.fresh({
    emulators: options.emulators,
    maxReceiveCount: options.maxReceiveCount ?? 10,
  });
  try {
    const settings = {
      orchestrator: { ...FAST_SETTINGS.orchestrator, ...options.orchestrator },
      retry: { ...FAST_SETTINGS.retry, ...options.retry },
      circuit: { ...FAST_SETTINGS.circuit, ...options.circuit },
      pacing: { ...FAST_SETTINGS.pacing, ...options.pacing },
    };
    const { tableName, queueUrls } = harness.resources;
    const baseEnv: Record<string, string> = {
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
      ...(options.pool === undefined
        ? {}
        : { [CONFIG_ENV.pools]: JSON.stringify([{ name: POOL, quotas: options.pool }]) }),
      [RESOURCE_ENV.tableName]: tableName,
      [RESOURCE_ENV.workerFunctionName]: WORKER_FUNCTION,
      ...Object.fromEntries(
        Object.entries(QUEUE_URL_ENV).map(([queue, name]) => [name, queueUrls[queue as QueueName]]),
      ),
    };
    const config = serviceConfigFromEnv(baseEnv);

    const clock = options.clock ?? systemClock;
    const readyAt = systemClock.now();
    const apiNow = clock.now();
    const outages = (options.outages ?? []).map((o) => ({ startMs: apiNow + o.fromMs, endMs: apiNow + o.toMs }));
    const shared = (config.pools ?? []).map((pool) => new SharedTiers(pool.name, pool.quotas, config.timeZone));
    const api = new VirtualApi({
      clock,
      tiers: config.quotas,
      shared,
      latencyMs: options.latencyMs ?? 10,
      outages,
      ...(options.timeZone === undefined ? {} : { timeZone: options.timeZone }),
      ...(options.apiConcurrency === undefined ? {} : { concurrency: options.apiConcurrency }),
      ...(options.llm === undefined ? {} : { llm: options.llm }),
    });
    const faults = options.faults ?? {};
    const apiServer = await harness.serveApi(faults.api?.(api) ?? api);
    const laneEnv: Env = {
      ...baseEnv,
      [RESOURCE_ENV.apiUrl]: apiServer.apiUrl,
      [RESOURCE_ENV.healthUrl]: apiServer.healthUrl,
    };
    const companion =
      options.companion === undefined
        ? undefined
        : await CompanionLane.create(harness.clients.sqs, queueUrls.main, {
            quotas: options.companion,
            shared,
            clock,
            latencyMs: options.latencyMs ?? 10,
            // The stack's own redrive setting is its lane's subject (a scenario may set it low); the companion's
            // queues keep the deployed default.
            maxReceiveCount: 10,
          });
    const env: Env = Object.freeze(companion === undefined ? laneEnv : companion.lanesEnv(laneEnv));

    const logs: LogLine[] = [];
    const log: Log = (level, message, fields = {}) => void logs.push({ level, message, fields });
    const workerFailures: DestinationRecord[] = [];
    const worker = {
      kind: 'worker',
      name: WORKER_FUNCTION,
      env,
      timeoutMs: config.orchestrator.workerTimeoutMs,
      // As deployed: a crashed worker is not retried by Lambda (serverless.yml).
      maximumRetryAttempts: 0,
      onFailure: async (record: DestinationRecord) => void workerFailures.push(record),
    } as const;
    const workerDeps = (deps: WorkerDeps): WorkerDeps => {
      const timed = options.clock === undefined ? deps : { ...deps, clock };
      return faults.workerDeps?.(timed) ?? timed;
    };
    const hooks: FunctionHooks = {
      log,
      clients: faults.workerClients,
      workerDeps,
      workerHandler: faults.workerHandler,
    };
    const timing =
      options.invokeTiming === undefined
        ? undefined
        : new InvokeTiming(options.invokeTiming.model, options.invokeTiming.random);
    await harness.host([worker], hooks, { retryDelayMs: 100, ...(timing === undefined ? {} : { timing }) });
    return new ServiceStack(
      { env, config, api, readyAt, ...(companion === undefined ? {} : { companion }) },
      harness,
      { outages, faults, clock, timing },
      logs,
      workerFailures,
    );
  } catch (error) {
    await harness.close({ idleWithinMs: 0 });
    throw error;
  }
}
