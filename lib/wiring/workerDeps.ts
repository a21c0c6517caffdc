import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { CLIENT_CONFIG } from '../adapters/aws/clientConfig';
import { DynamoLimitStore } from '../adapters/dynamodb/DynamoLimitStore';
import { DynamoCircuitStore } from '../adapters/dynamodb/DynamoCircuitStore';
import { DynamoIdempotencyStore } from '../adapters/dynamodb/DynamoIdempotencyStore';
import { DynamoSettlementRecorder } from '../adapters/dynamodb/DynamoSettlementRecorder';
import { HttpApiCaller } from '../adapters/http/HttpApiCaller';
import { keyFromParameter } from '../adapters/ssm/apiKeyParameter';
import { EventBridgeResultDestination } from '../adapters/results/EventBridgeResultDestination';
import { SqsResultDestination } from '../adapters/results/SqsResultDestination';
import { systemClock } from '../adapters/systemClock';
import { workerSettingsFromEnv, type Env } from '../configFromEnv';
import type { ResultHandler } from '../ports/ResultHandler';
import type { ResultDestination } from '../resultDestination';
import type { WorkerDeps } from '../services/worker/types';
import { CircuitReadTimes } from '../services/worker/circuitReadTimes';
import { LimitReportMemory } from '../services/worker/limitReportMemory';
import { stateAndQueuesFromEnv, type StateAndQueueClients } from './stateAndQueues';
import { shardCounts } from '../domain/quota/settlementShards';

/** The clients of the worker function: AWS's, and the HTTP client that calls the API. */
export interface WorkerClients extends StateAndQueueClients {
  /** Only read when `API_KEY_PARAMETER` names a parameter. @default a client with the SDK's defaults */
  readonly ssm?: SSMClient;
  /** The API caller's HTTP client. @default the global `fetch` */
  readonly fetch?: typeof fetch;
  /** Only used with an EventBridge result destination. @default a client with the SDK's defaults and {@link CLIENT_CONFIG} */
  readonly eventbridge?: EventBridgeClient;
}

/**
 * The default result handler: one that sends to `destination` (`RESULT_DESTINATION`), with the worker's SQS client
 * or an EventBridge client; none without a destination.
 */
function resultHandlerFor(
  destination: ResultDestination | undefined,
  clients: WorkerClients,
): ResultHandler | undefined {
  if (destination === undefined) return undefined;
  if (destination.type === 'sqs')
    return new SqsResultDestination({ client: clients.sqs, queueArn: destination.queueArn });
  const { busName, source, detailType } = destination;
  return new EventBridgeResultDestination({
    client: clients.eventbridge ?? new EventBridgeClient(CLIENT_CONFIG.eventbridge),
    busName,
    source,
    detailType,
  });
}

/** The worker's clients with the SDK's defaults and {@link CLIENT_CONFIG}. */
export function workerClients(): WorkerClients {
  return {
    dynamodb: new DynamoDBClient(CLIENT_CONFIG.dynamodb),
    sqs: new SQSClient(CLIENT_CONFIG.sqs),
    ssm: new SSMClient(CLIENT_CONFIG.ssm),
  };
}

/**
 * Builds the worker's adapters from its environment, validating the configuration. The example API caller sends
 * to `API_URL` and probes `HEALTH_URL`, with the headers `REQUEST_HEADERS` and the key from the SSM parameter
 * `API_KEY_PARAMETER` if one is named (in `API_KEY_HEADER`, read again every `API_KEY_CACHE_SECONDS`, within
 * `API_KEY_READ_TIMEOUT_MS`); users replace it and keep the rest. The answers to succeeded jobs go to
 * the result destination `RESULT_DESTINATION`, if one is set.
 * @param idempotencyNamespace the lane's namespace of idempotency keys (see `idempotencyNamespace`), if it has one.
 * @throws ConfigError naming the missing or invalid variable, e.g. an `API_TIMEOUT_MS` not below the worker timeout,
 * or not below `CIRCUIT.healthCheckTimeoutSeconds`.
 */
export function workerDepsFromEnv(env: Env, clients: WorkerClients, idempotencyNamespace?: string): WorkerDeps {
  const { table, ...shared } = stateAndQueuesFromEnv(env, clients);
  const settings = workerSettingsFromEnv(env, shared.config);
  const keyParameter = settings.apiKeyParameter;
  const results = resultHandlerFor(settings.results, clients);
  return {
    ...shared,
    stores: {
      idempotency: new DynamoIdempotencyStore(table, idempotencyNamespace),
      ledger: new DynamoSettlementRecorder(table, shardCounts(shared.config.quotas, shared.config.pools)),
      circuit: new DynamoCircuitStore(table),
      limits: new DynamoLimitStore(table),
    },
    clock: systemClock,
    api: new HttpApiCaller({
      apiUrl: settings.apiUrl,
      healthUrl: settings.healthUrl,
      method: settings.apiMethod,
      headers: settings.requestHeaders,
      keyHeader: {
        name: settings.apiKeyHeader,
        ...(settings.apiKeyScheme === undefined ? {} : { scheme: settings.apiKeyScheme }),
      },
      probeSendsKey: settings.healthCheckSendsKey,
      timeoutMs: settings.apiTimeoutMs,
      ...(clients.fetch === undefined ? {} : { fetch: clients.fetch }),
      ...(keyParameter === undefined
        ? {}
        : {
            keyReadTimeoutMs: settings.apiKeyReadTimeoutMs,
            apiKey: keyFromParameter(
              new SSMProvider({ awsSdkV3Client: clients.ssm ?? new SSMClient(CLIENT_CONFIG.ssm) }),
              keyParameter,
              { maxAgeSeconds: settings.apiKeyCacheSeconds },
            ),
          }),
    }),
    random: Math.random,
    circuitReads: new CircuitReadTimes(),
    limitReports: new LimitReportMemory(),
    ...(results === undefined ? {} : { results }),
  };
}
