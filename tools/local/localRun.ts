import { randomUUID } from 'node:crypto';
import { InvokeCommand, TooManyRequestsException, type LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Log } from '../../lib/adapters/log';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import { systemClock } from '../../lib/adapters/systemClock';
import type { ServiceConfig } from '../../lib/config';
import { CONFIG_ENV, RESOURCE_ENV, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import { READ_ORDER, type QueueName } from '../../lib/ports/QueueReceiver';
import type { Settlement } from '../../lib/domain/quota/ledger';
import type { WorkerStores } from '../../lib/services/worker/types';
import { namedUnits } from '../../lib/domain/quota/tiers';
import { buildJobs, unitAttributes, type JobSpec } from '../simulation/jobs';
import { backlogOf, sendArrivals } from '../simulation/arrivalSender';
import { seededRandom } from '../simulation/random';
import { InvokeTiming } from '../simulation/startDelays';
import { buildReport, optionalLastCall, type CircuitChange, type Report } from '../simulation/report';
import { allowedFrom } from '../simulation/allowedLimits';
import { outageTimes, type Scenario } from '../simulation/scenario';
import { VirtualApi, type VirtualApiCall } from '../simulation/virtualApi';
import type { AwsLatencyProfile } from '../simulation/awsLatency';
import { FAKE_CREDENTIALS, lambdaClient, type EmulatorEndpoints, type FunctionClients } from './clients';
import { addMiddleware, type LooseMiddleware } from './sdkMiddleware';
import { LocalHarness, type HostedFunction } from './harness';
import { heldBodies } from './queueInspection';
import { RecordingApi, type ObservedApi } from './recordingApi';
import type { RequiredHeaders } from './apiServer';
import { LOCAL_API_KEY, requestEnv, requiredHeaders } from './providerRequests';
import { RequestMeter, type ItemWrite, type RequestTally } from './requestMeter';
import { LOCAL_ACCOUNT, type FunctionDefinition, type PackagedFunctions, type Template } from './template';
import type { LocalStackInfo } from './stackFile';

/** What one local run needs. */
export interface LocalRunOptions {
  readonly scenario: Scenario;
  /** Settings the scenario gives explicitly: they replace serverless.yml's `custom.quotaOrchestrator` ones. */
  readonly overrides: readonly (keyof ServiceConfig)[];
  /** The template `osls package` built: the tables, queues, functions and schedule to run. */
  readonly template: Template;
  /** Where progress goes, about once a second. */
  readonly onProgress?: (progress: Progress) => void;
  /**
   * Send the workers' calls to this API instead of the simulated one. Each worker's caller records its calls (see
   * `RecordingApi`) to report calls, 429s, duplicates and FIFO order; the scenario's `api` block is ignored.
   */
  readonly externalApi?: { readonly apiUrl: string; readonly healthUrl: string };
  /** Emulators already running (the test suite's); by default the run starts its own and stops them at the end. */
  readonly emulators?: EmulatorEndpoints;
  /** The handlers' structured log. @default discard */
  readonly log?: Log;
  /** Latency added to each of the functions' AWS requests, as AWS would take (see `AWS_LATENCY`). @default none */
  readonly awsLatency?: AwsLatencyProfile;
  /**
   * Keeps the stack up once the run has reported (`npm start -- --keep`): the emulators, the Lambda host and the API
   * stay up and the schedule keeps firing, so that an operator (`npm run ops -- --local`) can work on it as on a
   * deployed stage. @default the stack stops when the run ends
   */
  readonly keep?: KeepOptions;
}

/** How a run keeps its stack up after it has reported (see {@link LocalRunOptions.keep}). */
export interface KeepOptions {
  /** Told once, when the run has reported: where the kept stack is, and the run's result so far. */
  readonly onKept: (stack: LocalStackInfo, result: LocalRunResult) => void;
  /** The stack stops, and {@link runLocal} returns, once this settles (e.g. on Ctrl-C). */
  readonly until: Promise<unknown>;
}

/** A snapshot of a run in progress. */
export interface Progress {
  readonly elapsedSeconds: number;
  readonly jobs: number;
  readonly succeeded: number;
  readonly deadLettered: number;
  /** Messages waiting in the source queues (visible or delayed). */
  readonly queued: number;
  /** Messages received and not yet deleted: waiting for their pacing slot or with a worker. */
  readonly inFlight: number;
  readonly circuit: CircuitJSON['state']['status'];
}

/** One second of the run, for a plot. */
export interface TimelineRow {
  readonly second: number;
  /** Job calls that reached the API in this second, and how it answered them. */
  readonly calls: number;
  readonly accepted: number;
  readonly rejected: number;
  readonly failed: number;
  readonly circuit: CircuitJSON['state']['status'];
  readonly queued: number;
  readonly inFlight: number;
}

/** What one function of the run consumed. */
export interface FunctionUsage {
  /**
   * Attempts started (Lambda's `Invocations`): each accepted `Event` invoke once, plus Lambda's second deliveries
   * and its retries of failed attempts.
   */
  readonly invocations: number;
  /** The outcomes its attempts returned (a worker's `succeeded`, `late-start`, …), counted. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Second deliveries of an `Event` invoke (Lambda's at-least-once delivery). */
  readonly duplicateDeliveries: number;
  /** Attempts after a failed one of the same delivery (Lambda's async retries). */
  readonly retries: number;
  /** Summed attempt durations (Lambda's billed duration, before rounding). */
  readonly billedMs: number;
  /** The function's own AWS requests, by `service.Command`. */
  readonly requests: Readonly<Record<string, RequestTally>>;
  /** Its writes to each item (see {@link RequestMeter.itemWrites}). */
  readonly itemWrites: readonly ItemWrite[];
}

/** What a local run produced. */
export interface LocalRunResult {
  readonly report: Report;
  readonly timeline: readonly TimelineRow[];
  readonly orchestrator: FunctionUsage;
  readonly worker: FunctionUsage;
  /** Seconds the workers spent waiting on the API's answers (calls and probes). */
  readonly apiCallSeconds: number;
  /** The most heap this process used during the run, sampled every poll: everything runs in it, so an upper bound. */
  readonly peakHeapBytes: number;
  /** Every job call as the API saw it, in arrival order. */
  readonly calls: readonly VirtualApiCall[];
  /** The circuit's statuses as polled, starting closed. */
  readonly circuitChanges: readonly CircuitChange[];
  /** The run's start instant (epoch ms): the jobs were queued and the first tick fired. */
  readonly start: number;
  /**
   * The settlements the workers appended to the lane's pending list (the writes the store accepted), in order: what
   * the orchestrator folds into its ledger, from which it hands back what a call did not use. A settlement written
   * twice (a retried write) appears twice; the orchestrator folds one `id` once.
   */
  readonly settlements: readonly Settlement[];
  /**
   * What the simulated provider required of each request (the scenario's `request` and the local key), how many
   * requests it refused for lacking it, and how many reads of the key the local parameter store answered. None
   * with an external API.
   */
  readonly provider?: ProviderCheck;
}

/** What a run's simulated provider checked of the workers' requests (see {@link LocalRunResult.provider}). */
export interface ProviderCheck {
  readonly headers: RequiredHeaders;
  readonly refused: number;
  readonly keyReads: number;
}

/** How long the end of a run waits for the orchestrator and the workers to finish. */
const SHUTDOWN_WAIT_MS = 30_000;
/** How often the run polls the circuit, the queues and the API's counters. */
const POLL_MS = 100;
const PROGRESS_MS = 1_000;

/**
 * Runs the service on this machine as it would run on AWS: the packaged template's table and queues on the
 * emulators, its two functions with the real handlers behind a local Lambda Invoke endpoint, its schedule, and the
 * simulated API over HTTP (all of it a {@link LocalHarness}). Seeds the scenario's jobs, fires the schedule, watches
 * queues and circuit from outside, and reports once every job has succeeded or been dead-lettered (or `maxSeconds`
 * have passed). With {@link LocalRunOptions.keep}, the stack then stays up, its schedule firing, until told to stop.
 */
export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const jobs = buildJobs(options.scenario, seededRandom(options.scenario.seed));
  const service = await hostService(options, jobs);
  const { harness, functions, scheduler, meters, api, start, lane, scenario } = service;
  const { orchestrator, worker, schedule } = functions;
  const counted = namedUnits(scenario.config.quotas);
  let arrivalFailure: unknown;
  const arrivals = sendArrivals(jobs, start, systemClock, (due) =>
    seed(harness.clients.sqs, harness.resources.queueUrls, due, counted),
  ).catch((error: unknown) => {
    arrivalFailure = error;
  });

  const changes: CircuitChange[] = [{ at: start, status: 'closed' }];
  const samples: { at: number; queued: number; inFlight: number }[] = [];
  let nextTick = start;
  let peakHeapBytes = 0;
  let lastProgress = start - PROGRESS_MS;
  let endedAt: number | undefined;
  while (endedAt === undefined) {
    if (arrivalFailure !== undefined) throw arrivalFailure;
    const now = systemClock.now();
    if (now >= nextTick) {
      await fireSchedule(scheduler, schedule.functionName, now);
      nextTick += schedule.periodMs;
    }
    peakHeapBytes = Math.max(peakHeapBytes, process.memoryUsage().heapUsed);
    const circuit = (await harness.circuit(lane))?.state.status ?? 'closed';
    if (circuit !== changes[changes.length - 1]?.status) changes.push({ at: now, status: circuit });
    const depths = await harness.laneDepths();
    const succeeded = api.succeededIds().length;
    if (now - lastProgress >= PROGRESS_MS) {
      lastProgress = now;
      samples.push({ at: now, queued: depths.queued, inFlight: depths.inFlight });
      options.onProgress?.({
        elapsedSeconds: (now - start) / 1000,
        jobs: jobs.length,
        succeeded,
        deadLettered: depths.deadLettered,
        queued: depths.queued,
        inFlight: depths.inFlight,
        circuit,
      });
    }
    const allEnded =
      succeeded + depths.deadLettered >= jobs.length &&
      depths.queued + depths.inFlight === 0 &&
      harness.stats(worker.name).running === 0;
    if (allEnded || now - start >= scenario.maxSeconds * 1000) endedAt = now;
    // A kept stack's orchestrator goes on: only a run that ends stops it.
    if (endedAt !== undefined && options.keep === undefined) service.stop(endedAt);
    await systemClock.sleep(POLL_MS);
  }

  await arrivals;
  // What the source queues hold is read first: a job on its way out is then held, or succeeded or dead-lettered.
  const { queueUrls } = harness.resources;
  const queuedBodies = await heldBodies(
    harness.emulators.sqsEndpoint,
    READ_ORDER.map((queue) => queueUrls[queue]),
  );
  const deadLetters = await harness.receiveDeadLetters();
  // A kept stack's dead letters stay for the operator to see at once.
  if (options.keep !== undefined)
    await Promise.all(deadLetters.map((m) => harness.queues.changeVisibility(m.queue, m.receiptHandle, 0)));
  const invocations = harness.stats(worker.name).invocations;
  const report = buildReport({
    scenario,
    jobs,
    api: api.report(),
    queuedBodies,
    succeededIds: new Set(api.succeededIds()),
    deadLetterBodies: deadLetters.map((m) => m.body),
    circuitChanges: changes,
    invocations,
    start,
    durationMs: endedAt - start,
    ...optionalLastCall(api.callLog),
  });
  const timeline = timelineOf(start, endedAt, api, changes, samples);
  const usage = (fn: FunctionDefinition, meter: RequestMeter): FunctionUsage => {
    const { invocations, duplicateDeliveries, retries, billedMs, results } = harness.stats(fn.name);
    return {
      outcomes: Object.fromEntries(results),
      invocations,
      duplicateDeliveries,
      retries,
      billedMs,
      requests: meter.snapshot(),
      itemWrites: meter.itemWrites,
    };
  };
  const result = (): LocalRunResult => ({
    report,
    timeline,
    orchestrator: usage(orchestrator, meters.orchestrator),
    worker: usage(worker, meters.worker),
    apiCallSeconds: service.apiCallSeconds(),
    peakHeapBytes,
    calls: api.callLog,
    circuitChanges: changes,
    start,
    settlements: service.settlements,
    ...(service.provider === undefined ? {} : { provider: service.provider() }),
  });
  if (options.keep !== undefined) {
    options.keep.onKept(service.info, result());
    await keepServing(service, nextTick, options.keep.until);
    service.stop(systemClock.now());
  }
  // The orchestrator sees the stop at its next step, flushes and releases its lease; the harness waits for that.
  await harness.close({ idleWithinMs: SHUTDOWN_WAIT_MS });
  scheduler.destroy();
  return result();
}

/** Fires the schedule on its period, from `nextTick`, until `until` settles. */
async function keepServing(service: HostedService, nextTick: number, until: Promise<unknown>): Promise<void> {
  const { scheduler, functions } = service;
  let stopped = false;
  let wake: () => void = () => undefined;
  const onStop = (): void => {
    stopped = true;
    wake();
  };
  until.then(onStop, onStop);
  for (let tick = nextTick; !stopped; tick += functions.schedule.periodMs) {
    // A timer cleared on stop, so that a stopped stack leaves none behind to hold the process up to a period.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, tick - systemClock.now()));
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
      if (stopped) wake();
    });
    if (!stopped) await fireSchedule(scheduler, functions.schedule.functionName, systemClock.now());
  }
}

/** The service hosted on this machine, ready for its schedule to fire: what {@link hostService} returns. */
export interface HostedService {
  readonly harness: LocalHarness;
  readonly functions: PackagedFunctions;
  /** The scenario as run: with an external API, its `api` block emptied. */
  readonly scenario: Scenario;
  /** Where EventBridge's ticks come from (see {@link fireSchedule}). */
  readonly scheduler: LambdaClient;
  /** Each function's AWS requests. */
  readonly meters: { readonly orchestrator: RequestMeter; readonly worker: RequestMeter };
  /** Seconds the workers spent waiting on the API's answers. */
  apiCallSeconds(): number;
  /** The settlements the workers have appended so far (see {@link LocalRunResult.settlements}). */
  readonly settlements: readonly Settlement[];
  readonly api: ObservedApi;
  /** What the simulated provider has checked so far; none with an external API. */
  readonly provider?: () => ProviderCheck;
  /** The instant the API began counting, once the jobs were queued. */
  readonly start: number;
  readonly lane: string;
  /** Tells the orchestrator to stop at its next step (it flushes and releases its lease). */
  stop(at: number): void;
  /** Where the stack is and what its functions read: what `npm start -- --keep` writes (see {@link LocalStackInfo}). */
  readonly info: LocalStackInfo;
}

/**
 * The packaged template's table and queues on the emulators, its two functions with the real handlers behind a local
 * Lambda Invoke endpoint, metered, and the simulated API over HTTP (or an external one, whose calls the workers
 * record); the backlog of `jobs` (see `backlogOf`) is queued before the API starts counting.
 */
export async function hostService(options: LocalRunOptions, jobs: readonly JobSpec[]): Promise<HostedService> {
  const scenario: Scenario =
    options.externalApi === undefined ? options.scenario : { ...options.scenario, api: { latencyMs: 0, outages: [] } };
  const { harness, functions } = await LocalHarness.fromTemplate(options.template, { emulators: options.emulators });
  const { orchestrator, worker } = functions;
  const lane = options.overrides.includes('lane')
    ? scenario.config.lane
    : (worker.environment[CONFIG_ENV.lane] ?? 'default');
  await seed(harness.clients.sqs, harness.resources.queueUrls, backlogOf(jobs), namedUnits(scenario.config.quotas));
  const start = systemClock.now();
  const { api, urls, recorder, provider } = await apiOf(options, scenario, start, harness);
  const env = (fn: FunctionDefinition): Env => ({
    ...fn.environment,
    ...Object.fromEntries(options.overrides.map((key) => [CONFIG_ENV[key], jsonOrText(scenario.config[key])])),
    [RESOURCE_ENV.apiUrl]: urls.apiUrl,
    [RESOURCE_ENV.healthUrl]: urls.healthUrl,
    // The simulated provider wants the scenario's headers and the local key, read from the local parameter store;
    // an external API gets the calls serverless.yml describes, without a key.
    ...(provider === undefined ? {} : requestEnv(scenario.request)),
    [RESOURCE_ENV.apiKeyParameter]: provider === undefined ? undefined : LOCAL_API_KEY.parameter,
  });
  let endedAt: number | undefined;
  let apiCallMs = 0;
  const settlements: Settlement[] = [];
  // Each function's clients are metered, so the run can tell what the service itself asked of AWS.
  const meters = { orchestrator: new RequestMeter(), worker: new RequestMeter() };
  const hosted = (kind: HostedFunction['kind'], fn: FunctionDefinition): HostedFunction => ({
    kind,
    env: env(fn),
    name: fn.name,
    timeoutMs: fn.timeoutMs,
    maximumRetryAttempts: fn.maximumRetryAttempts,
    ...(fn.reservedConcurrency === undefined ? {} : { reservedConcurrency: fn.reservedConcurrency }),
    ...(fn.onFailureQueueUrl === undefined ? {} : { onFailure: sendTo(harness.clients.sqs, fn.onFailureQueueUrl) }),
  });
  const endpoint = await harness.host(
    [hosted('orchestrator', orchestrator), hosted('worker', worker)],
    {
      clients: (clients, fn) => {
        const meter = meters[fn.kind];
        meter.attach(clients.dynamodb, 'dynamodb');
        meter.attach(clients.sqs, 'sqs');
        meter.attach(clients.lambda, 'lambda');
        if (options.awsLatency !== undefined) addAwsLatency(clients, options.awsLatency);
      },
      // The workers' time on the API is theirs to spend: the rest of what they bill is the service's overhead.
      workerDeps: (deps) => ({
        ...deps,
        api: timedApi(recorder?.around(deps.api) ?? deps.api, (ms) => (apiCallMs += ms)),
        stores: { ...deps.stores, ledger: recordedSettlements(deps.stores.ledger, settlements) },
      }),
      shouldStop: () => endedAt !== undefined,
      log: options.log,
    },
    { timing: new InvokeTiming(scenario.invokeTiming, seededRandom(scenario.seed + 1)) },
  );
  const functionInfo = (fn: FunctionDefinition) => ({
    name: fn.name,
    environment: Object.fromEntries(Object.entries(env(fn)).filter((e): e is [string, string] => e[1] !== undefined)),
  });
  const info: LocalStackInfo = {
    version: 1,
    pid: process.pid,
    region: LOCAL_ACCOUNT.region,
    credentials: FAKE_CREDENTIALS,
    endpoints: { dynamodb: harness.emulators.dynamodbEndpoint, sqs: harness.emulators.sqsEndpoint, lambda: endpoint },
    api: { apiUrl: urls.apiUrl, healthUrl: urls.healthUrl },
    lane,
    tableName: harness.resources.tableName,
    queueUrls: harness.resources.queueUrls,
    functions: { orchestrator: functionInfo(orchestrator), worker: functionInfo(worker) },
  };
  return {
    info,
    harness,
    functions,
    scenario,
    // EventBridge does not retry a throttled tick: one attempt, as every Lambda client makes.
    scheduler: lambdaClient(endpoint),
    meters,
    apiCallSeconds: () => apiCallMs / 1000,
    settlements,
    api,
    ...(provider === undefined ? {} : { provider }),
    start,
    lane,
    stop: (at) => (endedAt ??= at),
  };
}

/**
 * The API a local run drives and where the workers find it: the simulated one, served here over HTTP; or an external
 * one, which the workers call themselves, each worker's caller wrapped by the returned `recorder` (see RecordingApi).
 */
async function apiOf(
  options: LocalRunOptions,
  scenario: Scenario,
  start: number,
  harness: LocalHarness,
): Promise<{
  readonly api: ObservedApi;
  readonly urls: { readonly apiUrl: string; readonly healthUrl: string };
  readonly recorder?: RecordingApi;
  readonly provider?: () => ProviderCheck;
}> {
  if (options.externalApi !== undefined) {
    const recorder = new RecordingApi(systemClock);
    return { api: recorder, urls: options.externalApi, recorder };
  }
  const { quotas } = scenario.config;
  const { latencyMs, outages, llm, concurrency, allowed } = scenario.api;
  const simulated = new VirtualApi({
    clock: systemClock,
    tiers: quotas,
    latencyMs,
    outages: outageTimes(outages, start),
    ...(llm === undefined ? {} : { llm }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(allowed === undefined ? {} : { allowed: allowedFrom(allowed, start) }),
  });
  const headers = requiredHeaders(scenario.request, LOCAL_API_KEY.value);
  const store = await harness.serveParameters({ [LOCAL_API_KEY.parameter]: LOCAL_API_KEY.value });
  const server = await harness.serveApi(simulated, {
    requiredHeaders: headers,
    callMethod: scenario.request.apiMethod,
  });
  const provider = (): ProviderCheck => ({ headers, refused: server.refusals(), keyReads: store.reads() });
  return { api: simulated, urls: server, provider };
}

/**
 * Makes each request of `clients` take `profile`'s latency more, inside the meter (which counts it as waited): the
 * emulators on localhost answer in well under a millisecond, AWS in a region in several.
 */
function addAwsLatency(clients: FunctionClients, profile: AwsLatencyProfile): void {
  const delayed =
    (ms: number): LooseMiddleware =>
    (next) =>
    async (args) => {
      await systemClock.sleep(ms);
      return next(args);
    };
  addMiddleware(clients.lambda, delayed(profile.lambdaMs), { step: 'initialize', name: 'awsLatency', priority: 'low' });
  addMiddleware(clients.dynamodb, delayed(profile.dynamodbMs), {
    step: 'initialize',
    name: 'awsLatency',
    priority: 'low',
  });
  addMiddleware(clients.sqs, delayed(profile.sqsMs), { step: 'initialize', name: 'awsLatency', priority: 'low' });
}

/** `ledger` that also appends to `into` the settlements of each write it accepts. */
function recordedSettlements(ledger: WorkerStores['ledger'], into: Settlement[]): WorkerStores['ledger'] {
  return {
    addSettlements: async (lane, ...settlements) => {
      const accepted = await ledger.addSettlements(lane, ...settlements);
      if (accepted) into.push(...settlements);
      return accepted;
    },
  };
}

/** `api` with each call's duration told to `took`. */
function timedApi(api: ApiCaller, took: (ms: number) => void): ApiCaller {
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const startedAt = performance.now();
    try {
      return await call();
    } finally {
      took(performance.now() - startedAt);
    }
  };
  return { call: (body, context) => timed(() => api.call(body, context)), probe: () => timed(() => api.probe()) };
}

/** The event EventBridge sends on a schedule; `time` has whole seconds, as EventBridge's does. */
function scheduledEvent(now: number): object {
  const time = new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: LOCAL_ACCOUNT.accountId,
    time,
    region: LOCAL_ACCOUNT.region,
    resources: [],
    detail: {},
  };
}

/**
 * Starts the scheduled function as EventBridge does. A tick that falls inside a run is throttled by the reserved
 * concurrency of 1 and dropped, as the short `maximumEventAge` drops it on AWS.
 */
export async function fireSchedule(scheduler: LambdaClient, functionName: string, now: number): Promise<void> {
  try {
    await scheduler.send(
      new InvokeCommand({
        FunctionName: functionName,
        InvocationType: 'Event',
        Payload: Buffer.from(JSON.stringify(scheduledEvent(now))),
      }),
    );
  } catch (error) {
    if (!(error instanceof TooManyRequestsException)) throw error;
  }
}

function jsonOrText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** An on-failure destination: the destination record, as a message of the failure queue. */
export function sendTo(sqs: SQSClient, queueUrl: string) {
  return async (record: unknown): Promise<void> => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(record) }));
  };
}

/** Number message attributes in the SDK's shape, or none. */
function messageAttributes(numbers: Readonly<Record<string, string>>): {
  MessageAttributes?: Record<string, { DataType: string; StringValue: string }>;
} {
  const entries = Object.entries(numbers);
  return entries.length === 0
    ? {}
    : {
        MessageAttributes: Object.fromEntries(
          entries.map(([name, value]) => [name, { DataType: 'Number', StringValue: value }]),
        ),
      };
}

/**
 * Sends the backlog, ten messages a request: each with its estimate of the units the tiers count (`counted`) as
 * Number attributes, FIFO jobs with their group and a deduplication id.
 */
export async function seed(
  sqs: SQSClient,
  queueUrls: Readonly<Record<QueueName, string>>,
  jobs: readonly JobSpec[],
  counted: readonly string[],
): Promise<void> {
  for (const queue of ['main', 'fifo', 'bulk'] as const) {
    const batch = jobs.filter((job) => job.queue === queue);
    for (let i = 0; i < batch.length; i += 10) {
      const entries = batch.slice(i, i + 10).map((job, j) => ({
        Id: String(j),
        MessageBody: job.body,
        ...messageAttributes(unitAttributes(job, counted)),
        ...(job.groupId === undefined ? {} : { MessageGroupId: job.groupId, MessageDeduplicationId: randomUUID() }),
      }));
      const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrls[queue], Entries: entries }));
      if ((result.Failed ?? []).length > 0)
        throw new Error(`seeding ${queue} failed: ${JSON.stringify(result.Failed)}`);
    }
  }
}

/** Per-second rows: the API's own log of calls, the circuit as polled, and queue depths as sampled. */
function timelineOf(
  start: number,
  end: number,
  api: ObservedApi,
  changes: readonly CircuitChange[],
  samples: readonly { at: number; queued: number; inFlight: number }[],
): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (let second = 0; start + second * 1000 < end; second++) {
    const from = start + second * 1000;
    const calls = api.callLog.filter((c) => c.at >= from && c.at < from + 1000);
    const sample = samples.filter((s) => s.at < from + 1000).pop();
    const circuit = changes.filter((c) => c.at < from + 1000).pop()?.status ?? 'closed';
    rows.push({
      second,
      calls: calls.length,
      accepted: calls.filter((c) => c.status === 200 || c.status === 400).length,
      rejected: calls.filter((c) => c.status === 429).length,
      failed: calls.filter((c) => c.status >= 500).length,
      circuit,
      queued: sample?.queued ?? 0,
      inFlight: sample?.inFlight ?? 0,
    });
  }
  return rows;
}
