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
import { destroyClients } from './clients';
import type { Log } from '../../lib/adapters/log';
import type { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { systemClock } from '../../lib/adapters/systemClock';
import type { ServiceConfig } from '../../lib/config';
import { RESOURCE_ENV, serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { DestinationRecord, LocalFunctionStats } from './lambdaHost';
import type { QueueName, ReceivedMessage } from '../../lib/ports/QueueReceiver';
import type { Clock } from '../../lib/ports/Clock';
import type { StateStores } from '../../lib/ports/StateStores';
import type { WorkerDeps } from '../../lib/services/worker/types';
import { runOrchestrator } from '../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent, RunSummary } from '../../lib/services/orchestrator/types';
import { InvokeTiming } from '../simulation/startDelays';
import { VirtualApi } from '../simulation/virtualApi';
import { killedAfterCall } from './killedAfterCall';
import { LocalHarness, localTelemetry, uniqueName, type FunctionHooks } from './harness';
import { pause, waitFor } from './waitFor';
import { armFreeze, armKillSwitch, SimulatedCrash } from './runInterruptions';
import {
  LANE,
  WORKER_FUNCTION,
  type CircuitSample,
  type CircuitWatch,
  type LogLine,
  type OrchestratorRun,
  type OrchestratorRunOptions,
  type ServiceStackOptions,
  type StackFaults,
  type TestMessage,
  stackEnvironment,
} from './stackOptions';

/** The worker outcomes of a dispatch given back without a call, its message returned to go out again. */
const GIVE_BACKS = ['too-late', 'held-back', 'not-ready', 'unclaimed'] as const;
/**
 * The whole service on the emulators, for one test: a {@link LocalHarness} on a fresh state table and eight queues
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
      /** Jobs whose worker Lambda stopped at its timeout once their API had accepted a call of theirs. */
      readonly killedAfterCall: ReadonlySet<string>;
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
   * True when the four source queues hold nothing (visible, in flight or delayed) and no worker is running, nor in
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

  /**
   * Job ids whose worker was stopped at its timeout (as Lambda stops it: nothing after, see `runInvocation`) once an
   * API of the stack had accepted a call of theirs: a worker that dies between its call and its record, as a crash
   * after the call does, so that the job's next dispatch may call again.
   */
  jobsKilledAfterCall(): ReadonlySet<string> {
    return this.setup.killedAfterCall;
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
    const baseEnv = stackEnvironment(options, harness.resources);
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
        : await CompanionLane.create(harness.clients.sqs, harness.resources.queueUrls.main, {
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
    const killed = killedAfterCall(companion === undefined ? [api] : [api, companion.api]);
    await harness.host([worker], hooks, {
      retryDelayMs: 100,
      onTimeout: killed.onTimeout,
      ...(timing === undefined ? {} : { timing }),
    });
    return new ServiceStack(
      { env, config, api, readyAt, ...(companion === undefined ? {} : { companion }) },
      harness,
      { outages, faults, clock, timing, killedAfterCall: killed.jobs },
      logs,
      workerFailures,
    );
  } catch (error) {
    await harness.close({ idleWithinMs: 0 });
    throw error;
  }
}
