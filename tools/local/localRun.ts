import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient, TooManyRequestsException } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { handlerFromEnv as orchestratorFromEnv } from '../../functions/orchestrator';
import { handlerFromEnv as workerFromEnv } from '../../functions/worker';
import { CLIENT_CONFIG } from '../../lib/adapters/aws/clientConfig';
import { FAKE_CREDENTIALS, type FunctionClients } from './clients';
import { DynamoCircuitStore } from '../../lib/adapters/dynamodb/DynamoCircuitStore';
import type { Log } from '../../lib/adapters/log';
import { systemClock } from '../../lib/adapters/systemClock';
import type { ServiceConfig } from '../../lib/config';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuit';
import type { QueueName } from '../../lib/ports/QueueReceiver';
import { buildJobs, type JobSpec } from '../simulation/jobs';
import { seededRandom } from '../simulation/random';
import { buildReport, type CircuitChange, type Report } from '../simulation/report';
import type { Scenario } from '../simulation/scenario';
import { VirtualApi, type VirtualApiCall } from '../simulation/virtualApi';
import { HttpApiCaller } from '../../lib/adapters/http/HttpApiCaller';
import { startApiServer } from './apiServer';
import { RecordingApi, type ObservedApi } from './recordingApi';
import { startEmulators, type Emulators } from './emulators';
import { LocalLambdaHost, type LocalFunction, type LocalLambdaContext } from './lambdaHost';
import { RequestMeter, type RequestTally } from './requestMeter';
import { LOCAL_ACCOUNT, provisionStack, type LocalStack, type Template } from './template';

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
   * Send the workers' calls to this API instead of the simulated one. The run records the traffic on the way
   * (through a local proxy) to report calls, 429s, duplicates and FIFO order; the scenario's `api` block is ignored.
   */
  readonly externalApi?: { readonly apiUrl: string; readonly healthUrl: string };
  /** Emulators already running (the test suite's); by default the run starts its own and stops them at the end. */
  readonly emulators?: { readonly dynamodbEndpoint: string; readonly sqsEndpoint: string };
  /** The handlers' structured log. @default discard */
  readonly log?: Log;
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
  /** Attempts started (Lambda's `Invocations`). */
  readonly invocations: number;
  /** Summed attempt durations (Lambda's billed duration, before rounding). */
  readonly billedMs: number;
  /** The function's own AWS requests, by `service.Command`. */
  readonly requests: Readonly<Record<string, RequestTally>>;
}

/** What a local run produced. */
export interface LocalRunResult {
  readonly report: Report;
  readonly timeline: readonly TimelineRow[];
  readonly orchestrator: FunctionUsage;
  readonly worker: FunctionUsage;
  /** The most heap this process used during the run, sampled every poll: everything runs in it, so an upper bound. */
  readonly peakHeapBytes: number;
  /** Every job call as the API saw it, in arrival order. */
  readonly calls: readonly VirtualApiCall[];
  /** The circuit's statuses as polled, starting closed. */
  readonly circuitChanges: readonly CircuitChange[];
  /** The run's start instant (epoch ms): the jobs were queued and the first tick fired. */
  readonly start: number;
}

/** Handlers as serverless.yml names them. */
const WORKER_HANDLER = 'functions/worker.handler';
const ORCHESTRATOR_HANDLER = 'functions/orchestrator.handler';

const SOURCE_QUEUES = ['main', 'fifo', 'requeue'] as const;
const DEAD_LETTER_QUEUES = ['main-dlq', 'fifo-dlq', 'requeue-dlq'] as const;
/** Timeout of the recorder's own calls to an external API: longer than the worker's, so the worker's decides. */
const EXTERNAL_API_TIMEOUT_MS = 60_000;
/** How long the end of a run waits for the orchestrator and the workers to finish. */
const SHUTDOWN_WAIT_MS = 30_000;
/** How often the run polls the circuit, the queues and the API's counters. */
const POLL_MS = 100;
const PROGRESS_MS = 1_000;

/**
 * Runs the service on this machine as it would run on AWS: the packaged template's table and queues on the
 * emulators, its two functions with the real handlers behind a local Lambda Invoke endpoint, its schedule, and the
 * simulated API over HTTP. Seeds the scenario's jobs, fires the schedule, watches queues and circuit from outside,
 * and reports once every job has succeeded or been dead-lettered (or `maxSeconds` have passed).
 */
export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const scenario: Scenario = options.externalApi === undefined ? options.scenario : { ...options.scenario, api: { latencyMs: 0, outages: [] } };
  let owned: Emulators | undefined;
  const emulators = options.emulators ?? (owned = await startEmulators());
  const region = LOCAL_ACCOUNT.region;
  const dynamodb = new DynamoDBClient({ endpoint: emulators.dynamodbEndpoint, region, credentials: FAKE_CREDENTIALS });
  const sqs = new SQSClient({ endpoint: emulators.sqsEndpoint, region, credentials: FAKE_CREDENTIALS });
  const stack = await provisionStack(options.template, { dynamodb, sqs });
  const functions = functionsOf(stack);
  const worker = functionWith(functions, WORKER_HANDLER);
  const orchestrator = functionWith(functions, ORCHESTRATOR_HANDLER);
  const shared = worker.environment;
  const lane = options.overrides.includes('lane') ? scenario.config.lane : (shared[CONFIG_ENV.lane] ?? 'default');
  const queueUrls = Object.fromEntries(Object.entries(QUEUE_URL_ENV).map(([queue, name]) => [queue, String(shared[name])])) as Record<QueueName, string>;
  const jobs = buildJobs(scenario, seededRandom(scenario.seed));
  await seed(sqs, queueUrls, jobs);

  const start = systemClock.now();
  const api: ObservedApi =
    options.externalApi === undefined
      ? new VirtualApi({
          clock: systemClock,
          tiers: scenario.config.quotas,
          latencyMs: scenario.api.latencyMs,
          outages: scenario.api.outages.map((o) => ({ startMs: start + o.atSeconds * 1000, endMs: start + (o.atSeconds + o.forSeconds) * 1000 })),
        })
      : new RecordingApi(new HttpApiCaller({ ...options.externalApi, timeoutMs: EXTERNAL_API_TIMEOUT_MS }), systemClock);
  const apiServer = await startApiServer(api);
  const env = (fn: FunctionDefinition): Env => ({
    ...fn.environment,
    ...Object.fromEntries(options.overrides.map((key) => [CONFIG_ENV[key], jsonOrText(scenario.config[key])])),
    [RESOURCE_ENV.apiUrl]: apiServer.apiUrl,
    [RESOURCE_ENV.healthUrl]: apiServer.healthUrl,
    // There is no Parameter Store here: the local run's calls carry no API key.
    [RESOURCE_ENV.apiKeyParameter]: undefined,
  });
  let endedAt: number | undefined;
  const discard: Log = () => undefined;
  const log = options.log ?? discard;
  // Each function gets its own clients, metered, so the run can tell what the service itself asked of AWS.
  // Built at the function's first invocation, by which time `endpoint` is the host's below.
  const meters = { orchestrator: new RequestMeter(), worker: new RequestMeter() };
  const clientsFor = (meter: RequestMeter): FunctionClients => ({
    dynamodb: meter.attach(new DynamoDBClient({ endpoint: emulators.dynamodbEndpoint, region, credentials: FAKE_CREDENTIALS, ...CLIENT_CONFIG.dynamodb }), 'dynamodb'),
    sqs: meter.attach(new SQSClient({ endpoint: emulators.sqsEndpoint, region, credentials: FAKE_CREDENTIALS, ...CLIENT_CONFIG.sqs }), 'sqs'),
    lambda: meter.attach(new LambdaClient({ endpoint, region, credentials: FAKE_CREDENTIALS, ...CLIENT_CONFIG.lambda }), 'lambda'),
  });
  const host = new LocalLambdaHost(
    [orchestrator, worker].map((fn): LocalFunction => {
      let handler: ((event: unknown, context: LocalLambdaContext) => Promise<unknown>) | undefined;
      // Built at the first invocation, as Lambda's cold start does, once the Lambda client knows the host's endpoint.
      const coldStart = () =>
        fn.handler === WORKER_HANDLER
          ? workerFromEnv(env(fn), clientsFor(meters.worker), log)
          : orchestratorFromEnv(env(fn), clientsFor(meters.orchestrator), log, () => endedAt !== undefined);
      return {
        name: fn.name,
        handler: (event, context) => (handler ??= coldStart())(event, context),
        timeoutMs: fn.timeoutMs,
        maximumRetryAttempts: fn.maximumRetryAttempts,
        ...(fn.reservedConcurrency === undefined ? {} : { reservedConcurrency: fn.reservedConcurrency }),
        ...(fn.onFailureQueueUrl === undefined ? {} : { onFailure: sendTo(sqs, fn.onFailureQueueUrl) }),
      };
    }),
  );
  const endpoint = await host.listen();
  // EventBridge does not retry a throttled tick: one attempt.
  const scheduler = new LambdaClient({ endpoint, region, credentials: FAKE_CREDENTIALS, maxAttempts: 1 });

  const store = new DynamoCircuitStore({ client: DynamoDBDocumentClient.from(dynamodb), tableName: String(shared[RESOURCE_ENV.tableName]) });
  const changes: CircuitChange[] = [{ at: start, status: 'closed' }];
  const samples: { at: number; queued: number; inFlight: number }[] = [];
  const schedule = scheduleOf(stack);
  let nextTick = start;
  let peakHeapBytes = 0;
  let lastProgress = start - PROGRESS_MS;
  while (endedAt === undefined) {
    const now = systemClock.now();
    if (now >= nextTick) {
      await fireSchedule(scheduler, schedule.functionName, now);
      nextTick += schedule.periodMs;
    }
    peakHeapBytes = Math.max(peakHeapBytes, process.memoryUsage().heapUsed);
    const circuit = (await store.loadCircuit(lane))?.state.status ?? 'closed';
    if (circuit !== changes[changes.length - 1]?.status) changes.push({ at: now, status: circuit });
    const depths = await queueDepths(sqs, queueUrls);
    const succeeded = api.succeededIds().length;
    if (now - lastProgress >= PROGRESS_MS) {
      lastProgress = now;
      samples.push({ at: now, queued: depths.queued, inFlight: depths.inFlight });
      options.onProgress?.({ elapsedSeconds: (now - start) / 1000, jobs: jobs.length, succeeded, deadLettered: depths.deadLettered, queued: depths.queued, inFlight: depths.inFlight, circuit });
    }
    const allEnded = succeeded + depths.deadLettered >= jobs.length && depths.queued + depths.inFlight === 0 && host.stats(worker.name).running === 0;
    if (allEnded || now - start >= scenario.maxSeconds * 1000) endedAt = now;
    await systemClock.sleep(POLL_MS);
  }

  const deadLetterBodies = await drainBodies(sqs, DEAD_LETTER_QUEUES.map((q) => queueUrls[q]));
  const invocations = host.stats(worker.name).invocations;
  const report = buildReport({ scenario, jobs, api: api.report(), succeededIds: new Set(api.succeededIds()), deadLetterBodies, circuitChanges: changes, invocations, durationMs: endedAt - start });
  const timeline = timelineOf(start, endedAt, api, changes, samples);
  // The orchestrator sees `endedAt` at its next step, flushes and releases its lease; wait for that before closing.
  while (!host.idle() && systemClock.now() - endedAt < SHUTDOWN_WAIT_MS) await systemClock.sleep(POLL_MS);
  await host.close();
  await apiServer.close();
  await owned?.stop();
  const usage = (fn: FunctionDefinition, meter: RequestMeter): FunctionUsage => {
    const { invocations, billedMs } = host.stats(fn.name);
    return { invocations, billedMs, requests: meter.snapshot() };
  };
  return { report, timeline, orchestrator: usage(orchestrator, meters.orchestrator), worker: usage(worker, meters.worker), peakHeapBytes, calls: api.callLog, circuitChanges: changes, start };
}

/** What the local run needs of one `AWS::Lambda::Function` and its `AWS::Lambda::EventInvokeConfig`. */
interface FunctionDefinition {
  readonly name: string;
  readonly handler: string;
  readonly timeoutMs: number;
  readonly reservedConcurrency?: number;
  readonly maximumRetryAttempts: number;
  readonly onFailureQueueUrl?: string;
  readonly environment: Readonly<Record<string, string>>;
}

/** The template's functions, with their environments resolved against the local resources. */
function functionsOf(stack: LocalStack): FunctionDefinition[] {
  const invokeConfigs = stack.idsOf('AWS::Lambda::EventInvokeConfig').map((id) => stack.properties(id, ['FunctionName', 'MaximumRetryAttempts', 'DestinationConfig']));
  return stack.idsOf('AWS::Lambda::Function').map((id) => {
    const p = stack.properties(id, ['FunctionName', 'Handler', 'Timeout', 'ReservedConcurrentExecutions', 'Environment']);
    const name = String(p.FunctionName);
    const invokeConfig = invokeConfigs.find((c) => c.FunctionName === name);
    const onFailure = (invokeConfig?.DestinationConfig as { OnFailure?: { Destination?: string } } | undefined)?.OnFailure?.Destination;
    const reserved = p.ReservedConcurrentExecutions;
    return {
      name,
      handler: String(p.Handler),
      timeoutMs: Number(p.Timeout ?? 6) * 1000,
      ...(reserved === undefined ? {} : { reservedConcurrency: Number(reserved) }),
      // Lambda's default for asynchronous invocations is two retries.
      maximumRetryAttempts: Number(invokeConfig?.MaximumRetryAttempts ?? 2),
      ...(onFailure === undefined ? {} : { onFailureQueueUrl: stack.queueUrlOfArn(onFailure) }),
      environment: ((p.Environment as { Variables?: Record<string, string> } | undefined)?.Variables ?? {}) as Record<string, string>,
    };
  });
}

/**
 * The function with a given handler.
 * @throws Error when the template has none.
 */
function functionWith(functions: readonly FunctionDefinition[], handler: string): FunctionDefinition {
  const found = functions.find((fn) => fn.handler === handler);
  if (found === undefined) throw new Error(`the packaged template has no function with handler ${handler}`);
  return found;
}

/** The scheduled rule: which function it starts, and how often (`rate(N minute[s])`). */
function scheduleOf(stack: LocalStack): { readonly functionName: string; readonly periodMs: number } {
  for (const id of stack.idsOf('AWS::Events::Rule')) {
    const p = stack.properties(id, ['ScheduleExpression', 'Targets']);
    const rate = /^rate\((\d+) minutes?\)$/.exec(String(p.ScheduleExpression));
    const target = (p.Targets as { Arn?: string }[] | undefined)?.[0]?.Arn;
    if (rate?.[1] !== undefined && target !== undefined) return { functionName: target.split(':').pop() ?? target, periodMs: Number(rate[1]) * 60_000 };
  }
  throw new Error('the packaged template has no rate(N minutes) schedule rule targeting a function');
}

/** The event EventBridge sends on a schedule; `time` has whole seconds, as EventBridge's does. */
function scheduledEvent(now: number): object {
  const time = new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  return { version: '0', id: randomUUID(), 'detail-type': 'Scheduled Event', source: 'aws.events', account: LOCAL_ACCOUNT.accountId, time, region: LOCAL_ACCOUNT.region, resources: [], detail: {} };
}

/**
 * Starts the scheduled function as EventBridge does. A tick that falls inside a run is throttled by the reserved
 * concurrency of 1 and dropped, as the short `maximumEventAge` drops it on AWS.
 */
async function fireSchedule(scheduler: LambdaClient, functionName: string, now: number): Promise<void> {
  try {
    await scheduler.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'Event', Payload: Buffer.from(JSON.stringify(scheduledEvent(now))) }));
  } catch (error) {
    if (!(error instanceof TooManyRequestsException)) throw error;
  }
}

function jsonOrText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** An on-failure destination: the destination record, as a message of the failure queue. */
function sendTo(sqs: SQSClient, queueUrl: string) {
  return async (record: unknown): Promise<void> => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(record) }));
  };
}

/** Sends the backlog, ten messages a request: FIFO jobs with their group and a deduplication id. */
async function seed(sqs: SQSClient, queueUrls: Readonly<Record<QueueName, string>>, jobs: readonly JobSpec[]): Promise<void> {
  for (const queue of ['main', 'fifo'] as const) {
    const batch = jobs.filter((job) => job.queue === queue);
    for (let i = 0; i < batch.length; i += 10) {
      const entries = batch.slice(i, i + 10).map((job, j) => ({
        Id: String(j),
        MessageBody: job.body,
        ...(job.cost === 1 ? {} : { MessageAttributes: { cost: { DataType: 'Number', StringValue: String(job.cost) } } }),
        ...(job.groupId === undefined ? {} : { MessageGroupId: job.groupId, MessageDeduplicationId: randomUUID() }),
      }));
      const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrls[queue], Entries: entries }));
      if ((result.Failed ?? []).length > 0) throw new Error(`seeding ${queue} failed: ${JSON.stringify(result.Failed)}`);
    }
  }
}

/** Messages waiting and in flight in the source queues, and messages in the dead-letter queues. */
async function queueDepths(sqs: SQSClient, queueUrls: Readonly<Record<QueueName, string>>): Promise<{ queued: number; inFlight: number; deadLettered: number }> {
  const counts = async (queue: QueueName) => {
    const { Attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrls[queue], AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] }),
    );
    return { visible: Number(Attributes.ApproximateNumberOfMessages ?? 0) + Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0), hidden: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) };
  };
  const sources = await Promise.all(SOURCE_QUEUES.map(counts));
  const dead = await Promise.all(DEAD_LETTER_QUEUES.map(counts));
  return {
    queued: sources.reduce((sum, c) => sum + c.visible, 0),
    inFlight: sources.reduce((sum, c) => sum + c.hidden, 0),
    deadLettered: dead.reduce((sum, c) => sum + c.visible + c.hidden, 0),
  };
}

/** Every body in the given queues (received once, with a long visibility, and left there). */
async function drainBodies(sqs: SQSClient, queueUrls: readonly string[]): Promise<string[]> {
  const bodies: string[] = [];
  for (const QueueUrl of queueUrls) {
    for (;;) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 600, WaitTimeSeconds: 0 }));
      if (Messages.length === 0) break;
      bodies.push(...Messages.map((m) => m.Body ?? ''));
    }
  }
  return bodies;
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
