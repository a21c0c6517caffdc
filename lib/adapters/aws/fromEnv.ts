import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { ServiceConfig } from '../../config';
import { millisecondsFromEnv, queueUrlsFromEnv, requiredEnv, RESOURCE_ENV, serviceConfigFromEnv, type Env } from '../../configFromEnv';
import type { OrchestratorDeps } from '../../services/runOrchestrator';
import type { WorkerDeps } from '../../services/processJob';
import { DynamoStateStore } from '../dynamodb/DynamoStateStore';
import { HttpApiCaller } from '../http/HttpApiCaller';
import { bearerFromParameter } from '../ssm/apiKeyParameter';
import { LambdaInvoker } from '../lambda/LambdaInvoker';
import { SqsQueues } from '../sqs/SqsQueues';
import { systemClock } from '../systemClock';

/**
 * The AWS clients of one function. Endpoints, region and credentials come from the SDK's own environment
 * (`AWS_REGION`, `AWS_ENDPOINT_URL_SQS`, …), which is how the local run points them at the emulators.
 */
export interface AwsClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  /** Only the worker needs it, and only when `API_KEY_PARAMETER` is set. @default a client with the SDK's defaults */
  readonly ssm?: SSMClient;
}

/**
 * What every client of the service sets beyond the SDK's defaults.
 * - Request timeouts, so that a request to a hung endpoint fails with a `TimeoutError` (which the SDK retries)
 *   instead of holding a function until its Lambda timeout. The SDK's default is to wait forever, and without
 *   `throwOnRequestTimeout` its `requestTimeout` only logs a warning. SQS allows for the longest long poll
 *   (`idleWaitMs` is at most 20 s).
 * - One attempt per Lambda invoke: the orchestrator retries a failed invoke itself, with a fresh reservation in its
 *   own pacing; an SDK retry would start the worker later than its reserved instant, unpaced.
 */
export const CLIENT_CONFIG = {
  dynamodb: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true } },
  sqs: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 25_000, throwOnRequestTimeout: true } },
  lambda: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true }, maxAttempts: 1 },
  ssm: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true } },
} as const;

/** Clients with the SDK's defaults (endpoints, region, credentials, retries) and {@link CLIENT_CONFIG}. */
export function defaultAwsClients(): AwsClients {
  return {
    dynamodb: new DynamoDBClient(CLIENT_CONFIG.dynamodb),
    sqs: new SQSClient(CLIENT_CONFIG.sqs),
    lambda: new LambdaClient(CLIENT_CONFIG.lambda),
    ssm: new SSMClient(CLIENT_CONFIG.ssm),
  };
}

/** The orchestrator's dependencies except `owner` (one per run) and `onEvent` (the handler's logger). */
export type OrchestratorBaseDeps = Omit<OrchestratorDeps, 'owner' | 'onEvent'>;

function sharedDeps(env: Env, clients: AwsClients): { config: ServiceConfig; store: DynamoStateStore; queues: SqsQueues } {
  const config = serviceConfigFromEnv(env);
  return {
    config,
    store: new DynamoStateStore({ client: DynamoDBDocumentClient.from(clients.dynamodb), tableName: requiredEnv(env, RESOURCE_ENV.tableName) }),
    queues: new SqsQueues({ client: clients.sqs, queueUrls: queueUrlsFromEnv(env) }),
  };
}

/**
 * Builds the orchestrator's adapters from its environment, validating the configuration.
 * @throws ConfigError naming the missing or invalid variable.
 */
export function orchestratorDepsFromEnv(env: Env, clients: AwsClients): OrchestratorBaseDeps {
  return {
    ...sharedDeps(env, clients),
    clock: systemClock,
    invoker: new LambdaInvoker({ client: clients.lambda, functionName: requiredEnv(env, RESOURCE_ENV.workerFunctionName) }),
    random: Math.random,
    newId: randomUUID,
  };
}

/** Default timeout of one API call, kept well inside the worker's own timeout. */
const DEFAULT_API_TIMEOUT_MS = 10_000;

/**
 * Builds the worker's adapters from its environment, validating the configuration. The example API caller posts
 * to `API_URL` and probes `HEALTH_URL`, with the key from the SSM parameter `API_KEY_PARAMETER` if one is named;
 * users replace it and keep the rest.
 * @throws ConfigError naming the missing or invalid variable, e.g. an `API_TIMEOUT_MS` not below the worker timeout.
 */
export function workerDepsFromEnv(env: Env, clients: AwsClients): WorkerDeps {
  const shared = sharedDeps(env, clients);
  const workerTimeoutMs = shared.config.orchestrator.workerTimeoutMs;
  const timeoutMs = millisecondsFromEnv(env, RESOURCE_ENV.apiTimeoutMs, Math.min(DEFAULT_API_TIMEOUT_MS, Math.floor(workerTimeoutMs / 2)), {
    min: 1,
    max: workerTimeoutMs - 1,
  });
  const keyParameter = env[RESOURCE_ENV.apiKeyParameter];
  return {
    ...shared,
    clock: systemClock,
    api: new HttpApiCaller({
      apiUrl: requiredEnv(env, RESOURCE_ENV.apiUrl),
      healthUrl: requiredEnv(env, RESOURCE_ENV.healthUrl),
      timeoutMs,
      ...(keyParameter === undefined || keyParameter === '' ? {} : { authorization: bearerFromParameter(clients.ssm ?? new SSMClient({}), keyParameter) }),
    }),
    random: Math.random,
  };
}
