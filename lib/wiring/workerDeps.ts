import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { CLIENT_CONFIG } from '../adapters/aws/clientConfig';
import { DynamoCircuitStore } from '../adapters/dynamodb/DynamoCircuitStore';
import { DynamoIdempotencyStore } from '../adapters/dynamodb/DynamoIdempotencyStore';
import { DynamoSettlementRecorder } from '../adapters/dynamodb/DynamoSettlementRecorder';
import { HttpApiCaller } from '../adapters/http/HttpApiCaller';
import { bearerFromParameter } from '../adapters/ssm/apiKeyParameter';
import { systemClock } from '../adapters/systemClock';
import { checkProbeOutlastsCall, CONFIG_ENV, defaultApiTimeoutMs, millisecondsFromEnv, requiredEnv, RESOURCE_ENV, type Env } from '../configFromEnv';
import type { WorkerDeps } from '../services/processJob';
import { stateAndQueuesFromEnv, type StateAndQueueClients } from './stateAndQueues';

/** The clients of the worker function: AWS's, and the HTTP client that calls the API. */
export interface WorkerClients extends StateAndQueueClients {
  /** Only read when `API_KEY_PARAMETER` names a parameter. @default a client with the SDK's defaults */
  readonly ssm?: SSMClient;
  /** The API caller's HTTP client. @default the global `fetch` */
  readonly fetch?: typeof fetch;
}

/** The worker's clients with the SDK's defaults and {@link CLIENT_CONFIG}. */
export function workerClients(): WorkerClients {
  return { dynamodb: new DynamoDBClient(CLIENT_CONFIG.dynamodb), sqs: new SQSClient(CLIENT_CONFIG.sqs), ssm: new SSMClient(CLIENT_CONFIG.ssm) };
}

/**
 * Builds the worker's adapters from its environment, validating the configuration. The example API caller posts
 * to `API_URL` and probes `HEALTH_URL`, with the key from the SSM parameter `API_KEY_PARAMETER` if one is named;
 * users replace it and keep the rest.
 * @throws ConfigError naming the missing or invalid variable, e.g. an `API_TIMEOUT_MS` not below the worker timeout,
 * or not below `CIRCUIT.healthCheckTimeoutSeconds`.
 */
export function workerDepsFromEnv(env: Env, clients: WorkerClients): WorkerDeps {
  const { table, ...shared } = stateAndQueuesFromEnv(env, clients);
  const workerTimeoutMs = shared.config.orchestrator.workerTimeoutMs;
  const timeoutMs = millisecondsFromEnv(env, RESOURCE_ENV.apiTimeoutMs, defaultApiTimeoutMs(workerTimeoutMs), {
    min: 1,
    max: workerTimeoutMs - 1,
  });
  checkProbeOutlastsCall(timeoutMs, shared.config.circuit.healthCheckTimeoutSeconds, {
    apiTimeoutMs: RESOURCE_ENV.apiTimeoutMs,
    healthCheckTimeoutSeconds: `${CONFIG_ENV.circuit}.healthCheckTimeoutSeconds`,
    defaulted: (env[RESOURCE_ENV.apiTimeoutMs] ?? '') === '',
  });
  const keyParameter = env[RESOURCE_ENV.apiKeyParameter];
  return {
    ...shared,
    stores: { idempotency: new DynamoIdempotencyStore(table), ledger: new DynamoSettlementRecorder(table), circuit: new DynamoCircuitStore(table) },
    clock: systemClock,
    api: new HttpApiCaller({
      apiUrl: requiredEnv(env, RESOURCE_ENV.apiUrl),
      healthUrl: requiredEnv(env, RESOURCE_ENV.healthUrl),
      timeoutMs,
      ...(clients.fetch === undefined ? {} : { fetch: clients.fetch }),
      ...(keyParameter === undefined || keyParameter === '' ? {} : { authorization: bearerFromParameter(clients.ssm ?? new SSMClient(CLIENT_CONFIG.ssm), keyParameter) }),
    }),
    random: Math.random,
  };
}
