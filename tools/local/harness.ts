import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { handlerFromEnv as orchestratorHandlerFromEnv } from '../../functions/orchestrator';
import { makeHandler as makeWorkerHandler, routeByLane } from '../../functions/worker';
import { laneEnvs } from '../../lib/lanes/laneEnv';
import { dynamoStores } from '../../lib/adapters/dynamodb/dynamoStores';
import type { Log } from '../../lib/adapters/log';
import type { MetricSink } from '../../lib/adapters/metrics/emfMetrics';
import type { Telemetry } from '../../lib/adapters/telemetry';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { queueUrlsFromEnv, requiredEnv, RESOURCE_ENV, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import { READ_ORDER, type QueueName, type ReceivedMessage } from '../../lib/ports/QueueReceiver';
import type { StateStores } from '../../lib/ports/StateStores';
import type { WorkerDeps } from '../../lib/services/worker/types';
import { workerDepsFromEnv } from '../../lib/wiring/workerDeps';
import { stampSentAt, startApiServer, type ApiServer, type ApiServerOptions } from './apiServer';
import { startParameterStore, type ParameterStore } from './parameterStore';
import { LaneQueuesView, type LaneDepths, type QueueDepth } from './laneQueuesView';

export type { LaneDepths, QueueDepth } from './laneQueuesView';
import {
  destroyClients,
  dynamodbClient,
  functionClients,
  ssmClient,
  sqsClient,
  type EmulatorEndpoints,
  type FunctionClients,
} from './clients';
import { startEmulators, type Emulators } from './emulators';
import {
  LocalLambdaHost,
  type LocalFunction,
  type LocalFunctionStats,
  type LocalLambdaHostOptions,
} from './lambdaHost';
import { killable, killableFetch } from './invocationScope';
import { createLaneQueues } from './laneQueues';
import { createStateTable, deleteStateTable } from './stateTable';
import { packagedFunctions, provisionStack, type PackagedFunctions, type Template } from './template';
import { waitFor } from './waitFor';

/** A name no other harness uses, for tables and queues shared through one emulator. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The lane's state table and eight queues, as the functions' environment names them. */
export interface LaneResources {
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
}

/** Where the harness runs: emulators already running (the test suite's), or by default its own, stopped on close. */
export interface HarnessOptions {
  readonly emulators?: EmulatorEndpoints;
}

/** Options of {@link LocalHarness.fresh}. */
export interface FreshHarnessOptions extends HarnessOptions {
  /** Redrive `maxReceiveCount` of the source queues. */
  readonly maxReceiveCount: number;
}

/**
 * A function of the service on the harness's Lambda host: one of the real handlers, built from `env` at its first
 * invocation (as Lambda's cold start builds it) with clients of its own.
 */
export interface HostedFunction extends Omit<LocalFunction, 'handler'> {
  /** Which handler: `functions/orchestrator.ts` or `functions/worker.ts`. */
  readonly kind: 'orchestrator' | 'worker';
  readonly env: Env;
}

/** What a harness changes in the functions it hosts; every hook is optional, and without them production runs unchanged. */
export interface FunctionHooks {
  /** Called once on each function's clients when it starts, e.g. to meter them or add fault middleware. */
  readonly clients?: (clients: FunctionClients, fn: HostedFunction) => void;
  /** Replaces parts of the worker's dependencies (its clock, its API caller) before its handler is built. */
  readonly workerDeps?: (deps: WorkerDeps) => WorkerDeps;
  /** Wraps the worker handler as the Lambda host calls it (e.g. to deliver an event twice). */
  readonly workerHandler?: (handler: (event: unknown) => Promise<unknown>) => (event: unknown) => Promise<unknown>;
  /** Ends orchestrator runs early, at their next step, with a clean exit (`makeHandler`'s `shouldStop`). @default never */
  readonly shouldStop?: () => boolean;
  /** The handlers' structured log. @default discard */
  readonly log?: Log;
}

/** Options of {@link LocalHarness.close}. */
export interface CloseOptions {
  /** How long to wait for the hosted functions to finish before closing the host under them. */
  readonly idleWithinMs: number;
}

/** The harness's own clients, for provisioning and looking; they never invoke Lambda. */
interface OwnClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * The service on this machine, as the local run, the integration tests and the fault suite share it: DynamoDB and
 * SQS emulators, the lane's table and queues on them (from the packaged template, or with fresh unique names), an
 * API served over HTTP, and the real handlers behind a local Lambda Invoke endpoint. It watches from outside
 * through the production adapters: queue depths, the circuit, whether everything has drained.
 *
 * Always {@link LocalHarness.close} it: it waits for the functions, closes the servers, deletes the table and, when
 * it started them, stops the emulators.
 */
export class LocalHarness {
  /** The production SQS adapter on the lane's queues, to send and look. */
  readonly queues: SqsQueues;
  /** The production DynamoDB stores on the state table, to look. */
  readonly stores: StateStores;
  /** The lane's queues, as an operator looks at them. */
  private readonly view: LaneQueuesView;

  /** The hosted functions' clients, destroyed on close. */
  private readonly hostedClients: FunctionClients[] = [];
  private apiServer: ApiServer | undefined;
  private parameterStore: ParameterStore | undefined;
  /** The workers' SSM clients on {@link parameterStore}, destroyed on close. */
  private readonly ssmClients: SSMClient[] = [];
  private lambda: { readonly host: LocalLambdaHost; readonly endpoint: string } | undefined;
  private closed = false;

  private constructor(
    readonly emulators: EmulatorEndpoints,
    readonly resources: LaneResources,
    /** The harness's own clients, for setting up and looking. */
    readonly clients: OwnClients,
    private readonly owned: Emulators | undefined,
  ) {
    this.queues = new SqsQueues({ client: clients.sqs, queueUrls: resources.queueUrls });
    this.view = new LaneQueuesView(clients.sqs, resources.queueUrls);
    this.stores = dynamoStores({
      client: DynamoDBDocumentClient.from(clients.dynamodb),
      tableName: resources.tableName,
    });
  }

  /** A harness on a fresh state table and eight queues, with names no other harness uses (see {@link uniqueName}). */
  static async fresh(options: FreshHarnessOptions): Promise<LocalHarness> {
    const { harness } = await LocalHarness.open(options, async (clients) => {
      const prefix = uniqueName('svc');
      const tableName = `${prefix}-state`;
      const [queueUrls] = await Promise.all([
        createLaneQueues(clients.sqs, prefix, { maxReceiveCount: options.maxReceiveCount }),
        createStateTable(clients.dynamodb, tableName),
      ]);
      return { resources: { tableName, queueUrls }, extra: undefined };
    });
    return harness;
  }

  /**
   * A harness on the tables and queues of a packaged template, created from the definitions the deployment uses;
   * with the template's functions (environments resolved against them) and schedule.
   * @throws Error when the template lacks a resource or a function the local stack needs.
   */
  static async fromTemplate(
    template: Template,
    options: HarnessOptions = {},
  ): Promise<{ readonly harness: LocalHarness; readonly functions: PackagedFunctions }> {
    const { harness, extra } = await LocalHarness.open(options, async (clients) => {
      const functions = packagedFunctions(await provisionStack(template, clients));
      const env = functions.worker.environment;
      // A template of several lanes: the harness looks at the first lane's queues.
      const [first] = laneEnvs(env);
      return {
        resources: {
          tableName: requiredEnv(env, RESOURCE_ENV.tableName),
          queueUrls: queueUrlsFromEnv(first?.env ?? env),
        },
        extra: functions,
      };
    });
    return { harness, functions: extra };
  }

  /** Starts the emulators unless given, then provisions; stops what it started if provisioning fails. */
  private static async open<T>(
    options: HarnessOptions,
    provision: (clients: OwnClients) => Promise<{ resources: LaneResources; extra: T }>,
  ): Promise<{ harness: LocalHarness; extra: T }> {
    let owned: Emulators | undefined;
    const emulators = options.emulators ?? (owned = await startEmulators());
    const clients = { dynamodb: dynamodbClient(emulators.dynamodbEndpoint), sqs: sqsClient(emulators.sqsEndpoint) };
    try {
      const { resources, extra } = await provision(clients);
      return { harness: new LocalHarness(emulators, resources, clients, owned), extra };
    } catch (error) {
      clients.dynamodb.destroy();
      clients.sqs.destroy();
      await owned?.stop();
      throw error;
    }
  }

  /**
   * Serves `api` over HTTP until {@link close}, with `options` (the headers it requires, say): its URLs are the
   * functions' `API_URL` and `HEALTH_URL`.
   */
  async serveApi(api: ApiCaller, options: Omit<ApiServerOptions, 'host' | 'port'> = {}): Promise<ApiServer> {
    if (this.apiServer !== undefined) throw new Error('the harness already serves an API');
    this.apiServer = await startApiServer(api, options);
    return this.apiServer;
  }

  /**
   * Serves `parameters` as SSM Parameter Store does until {@link close} (see `startParameterStore`): the workers
   * started after this read them through an SSM client on it, as their `API_KEY_PARAMETER` names them.
   */
  async serveParameters(parameters: Readonly<Record<string, string>>): Promise<ParameterStore> {
    if (this.parameterStore !== undefined) throw new Error('the harness already serves parameters');
    this.parameterStore = await startParameterStore(parameters);
    return this.parameterStore;
  }

  /**
   * Runs the functions on a local Lambda host until {@link close}.
   * @returns the host's endpoint, where a Lambda client invokes them.
   */
  async host(
    functions: readonly HostedFunction[],
    hooks: FunctionHooks = {},
    options: LocalLambdaHostOptions = {},
  ): Promise<string> {
    if (this.lambda !== undefined) throw new Error('the harness already hosts its functions');
    const host = new LocalLambdaHost(
      functions.map((fn): LocalFunction => {
        const { kind, env, ...lambda } = fn;
        let handler: LocalFunction['handler'] | undefined;
        // Built at the first invocation, as Lambda's cold start does, once the host's endpoint is known.
        const coldStart = (): LocalFunction['handler'] => {
          const clients = killableClients(this.runClients());
          this.hostedClients.push(clients);
          hooks.clients?.(clients, fn);
          return kind === 'orchestrator'
            ? orchestratorHandlerFromEnv(env, clients, localTelemetry(hooks.log), hooks.shouldStop)
            : this.worker(env, clients, hooks);
        };
        return { ...lambda, handler: (event, context) => (handler ??= coldStart())(event, context) };
      }),
      options,
    );
    this.lambda = { host, endpoint: await host.listen() };
    return this.lambda.endpoint;
  }

  /**
   * Fresh clients on the emulators and the Lambda host, as one function container has them (e.g. for an orchestrator
   * run started outside the host); the caller destroys them with `destroyClients`.
   * @throws Error before {@link host}.
   */
  runClients(): FunctionClients {
    if (this.lambda === undefined) throw new Error('the harness hosts no functions yet');
    return functionClients(this.emulators, this.lambda.endpoint);
  }

  /** A hosted function's counters. */
  stats(name: string): LocalFunctionStats {
    return this.hostOf().stats(name);
  }

  /** True when no hosted function is running or waiting for a retry. */
  idle(): boolean {
    return this.hostOf().idle();
  }

  /** Visible, in-flight and delayed messages of a queue. */
  depth(queue: QueueName): Promise<QueueDepth> {
    return this.view.depth(queue);
  }

  /** Messages anywhere in a queue: visible, in flight or delayed. */
  count(queue: QueueName): Promise<number> {
    return this.view.count(queue);
  }

  /** Messages per queue, for failure messages: `{ main: 0, 'main-dlq': 1, … }`. */
  counts(): Promise<Record<QueueName, number>> {
    return this.view.counts();
  }

  /** The source queues' waiting and in-flight messages, and the dead-letter queues' messages. */
  laneDepths(): Promise<LaneDepths> {
    return this.view.laneDepths();
  }

  /** True when the four source queues hold nothing (visible, in flight or delayed) and no function is running. */
  async drained(): Promise<boolean> {
    if (!this.idle()) return false;
    const counts = await Promise.all(READ_ORDER.map((q) => this.count(q)));
    return counts.every((n) => n === 0);
  }

  /** Receives every visible message of a queue, keeping them hidden for a minute (they stay in the queue). */
  receiveAll(queue: QueueName): Promise<ReceivedMessage[]> {
    return this.view.receiveAll(queue);
  }

  /** Every message of the four dead-letter queues, received as {@link receiveAll} does. */
  receiveDeadLetters(): Promise<ReceivedMessage[]> {
    return this.view.receiveDeadLetters();
  }

  /** A lane's circuit item as stored, through the production adapter. */
  circuit(lane: string): Promise<CircuitJSON | undefined> {
    return this.stores.circuit.loadCircuit(lane);
  }

  /**
   * Waits (up to `idleWithinMs`) for the functions to finish, closes the Lambda host and the API server, deletes
   * the table, destroys every client and stops the emulators it started. Safe to call twice.
   */
  async close(options: CloseOptions): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const host = this.lambda?.host;
    if (host !== undefined) {
      await waitFor(() => host.idle(), { timeoutMs: options.idleWithinMs, what: 'the functions to finish' }).catch(
        () => undefined,
      );
      await host.close();
    }
    await this.apiServer?.close();
    await this.parameterStore?.close();
    for (const ssm of this.ssmClients) ssm.destroy();
    await deleteStateTable(this.clients.dynamodb, this.resources.tableName).catch(() => undefined);
    this.clients.dynamodb.destroy();
    this.clients.sqs.destroy();
    for (const clients of this.hostedClients) destroyClients(clients);
    await this.owned?.stop();
  }

  private worker(env: Env, clients: FunctionClients, hooks: FunctionHooks): LocalFunction['handler'] {
    // The workers stamp their calls with when they sent them (see stampSentAt), whether the harness serves the API or
    // a test's own server does: an API that does not know the header counts arrivals, as it would anyway.
    const store = this.parameterStore;
    const ssm = store === undefined ? undefined : killable(ssmClient(store.endpoint));
    if (ssm !== undefined) this.ssmClients.push(ssm);
    const fetch = stampSentAt(killableFetch(globalThis.fetch));
    const workerClients = { ...clients, fetch, ...(ssm === undefined ? {} : { ssm }) };
    return routeByLane(env, (laneEnv) => {
      const deps = workerDepsFromEnv(laneEnv, workerClients);
      const handler = makeWorkerHandler(hooks.workerDeps?.(deps) ?? deps, localTelemetry(hooks.log));
      return hooks.workerHandler?.(handler) ?? handler;
    });
  }

  private hostOf(): LocalLambdaHost {
    if (this.lambda === undefined) throw new Error('the harness hosts no functions yet');
    return this.lambda.host;
  }
}

/** A hosted function's clients, whose requests stop when Lambda would have stopped the function (see `runInvocation`). */
function killableClients(clients: FunctionClients): FunctionClients {
  return { dynamodb: killable(clients.dynamodb), sqs: killable(clients.sqs), lambda: killable(clients.lambda) };
}

const discard: Log = () => undefined;

/** A metric sink that keeps nothing: local runs print no EMF lines. */
export const discardMetrics: MetricSink = { count: () => undefined, record: () => undefined, publish: () => undefined };

/** The handlers' telemetry in a local run: the log `log` (@default discard), and no metrics. */
export function localTelemetry(log: Log = discard): Telemetry {
  return { log, metrics: discardMetrics };
}
