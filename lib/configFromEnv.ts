import { parseServiceConfig, type ServiceConfig } from './config';
import { ConfigError } from './errors';
import type { Deployment } from './adapters/metrics/serviceMetrics';
import type { QueueName } from './ports/QueueReceiver';
import { describeValue } from './domain/describeValue';
import { parseWorkerSettings, type DeploySettingKey, type WorkerSettings } from './workerSettings';

/**
 * Environment variables holding the service configuration (set by the `quotaOrchestrator` block of `custom` in
 * serverless.yml). `QUOTAS` is required; the JSON objects are optional and default field by field.
 */
export const CONFIG_ENV = {
  lane: 'LANE',
  timeZone: 'TIME_ZONE',
  quotas: 'QUOTAS',
  maxInFlight: 'MAX_IN_FLIGHT',
  units: 'UNITS',
  usagePreset: 'USAGE_PRESET',
  pools: 'POOLS',
  limits: 'LIMITS',
  priorities: 'PRIORITIES',
  pacing: 'PACING',
  circuit: 'CIRCUIT',
  retry: 'RETRY',
  orchestrator: 'ORCHESTRATOR',
} as const satisfies Record<keyof ServiceConfig, string>;

/** Environment variables holding each queue's URL. */
export const QUEUE_URL_ENV = {
  main: 'MAIN_QUEUE_URL',
  fifo: 'FIFO_QUEUE_URL',
  requeue: 'REQUEUE_QUEUE_URL',
  bulk: 'BULK_QUEUE_URL',
  'main-dlq': 'MAIN_DLQ_URL',
  'fifo-dlq': 'FIFO_DLQ_URL',
  'requeue-dlq': 'REQUEUE_DLQ_URL',
  'bulk-dlq': 'BULK_DLQ_URL',
} as const satisfies Record<QueueName, string>;

/** Environment variables naming the other AWS resources and the example worker's API. */
export const RESOURCE_ENV = {
  tableName: 'TABLE_NAME',
  workerFunctionName: 'WORKER_FUNCTION_NAME',
  apiUrl: 'API_URL',
  healthUrl: 'HEALTH_URL',
  apiTimeoutMs: 'API_TIMEOUT_MS',
  /** The method of a job's call. */
  apiMethod: 'API_METHOD',
  /** The headers every call and health check carries, as a JSON object. */
  requestHeaders: 'REQUEST_HEADERS',
  /** The header that carries the API key. */
  apiKeyHeader: 'API_KEY_HEADER',
  /** What goes before the key in its header, or `none`. */
  apiKeyScheme: 'API_KEY_SCHEME',
  /** `true` or `false`: whether health checks carry the API key. */
  healthCheckSendsKey: 'HEALTH_CHECK_SENDS_KEY',
  /** Name of the SSM parameter holding the example worker's API key; the key itself never sits in the environment. */
  apiKeyParameter: 'API_KEY_PARAMETER',
  /** How long the worker keeps the API key it read (or found missing) before reading the parameter again, in seconds. */
  apiKeyCacheSeconds: 'API_KEY_CACHE_SECONDS',
  /** How long the worker waits for the API key from SSM, in ms. */
  apiKeyReadTimeoutMs: 'API_KEY_READ_TIMEOUT_MS',
  /** The worker's result destination as JSON (`custom.quotaOrchestrator.results`, see `ResultDestination`); unset for none. */
  resultDestination: 'RESULT_DESTINATION',
} as const;

/** The variable of each of the worker's settings (see `DeploySettings`): packaging writes it, the cold start reads it. */
export const WORKER_ENV = {
  apiUrl: RESOURCE_ENV.apiUrl,
  healthUrl: RESOURCE_ENV.healthUrl,
  apiMethod: RESOURCE_ENV.apiMethod,
  requestHeaders: RESOURCE_ENV.requestHeaders,
  apiKeyHeader: RESOURCE_ENV.apiKeyHeader,
  apiKeyScheme: RESOURCE_ENV.apiKeyScheme,
  healthCheckSendsKey: RESOURCE_ENV.healthCheckSendsKey,
  apiTimeoutMs: RESOURCE_ENV.apiTimeoutMs,
  apiKeyParameter: RESOURCE_ENV.apiKeyParameter,
  apiKeyCacheSeconds: RESOURCE_ENV.apiKeyCacheSeconds,
  apiKeyReadTimeoutMs: RESOURCE_ENV.apiKeyReadTimeoutMs,
  results: RESOURCE_ENV.resultDestination,
} as const satisfies Record<DeploySettingKey, string>;

/** Environment variables naming the deployment (serverless.yml sets them from `service` and the stage). */
export const DEPLOYMENT_ENV = { service: 'SERVICE_NAME', stage: 'STAGE' } as const;

/**
 * The deployment a function runs in, from `SERVICE_NAME` and `STAGE`, which scope its metrics; `undefined` when
 * either is unset or empty (a function run outside a deployment).
 */
export function deploymentFromEnv(env: Env): Deployment | undefined {
  const service = env[DEPLOYMENT_ENV.service];
  const stage = env[DEPLOYMENT_ENV.stage];
  return service === undefined || service === '' || stage === undefined || stage === ''
    ? undefined
    : { service, stage };
}

/** A process environment, or any record shaped like one. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * The value of the JSON text `text` of the variable `name`.
 * @throws ConfigError naming the variable when the text is not JSON.
 */
export function jsonFromEnv(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(name, `must be JSON; ${(error as Error).message}`, { cause: error });
  }
}

const JSON_KEYS = [
  'quotas',
  'maxInFlight',
  'units',
  'pools',
  'limits',
  'priorities',
  'pacing',
  'circuit',
  'retry',
  'orchestrator',
] as const;

/**
 * Reads and validates the service configuration from the environment, once at cold start.
 * @throws ConfigError naming the variable and the field inside it, e.g. `QUOTAS[1].per`, with the allowed values.
 */
export function serviceConfigFromEnv(env: Env): ServiceConfig {
  const raw: Record<string, unknown> = {};
  for (const key of ['lane', 'timeZone', 'usagePreset'] as const) {
    const value = env[CONFIG_ENV[key]];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const key of JSON_KEYS) {
    const name = CONFIG_ENV[key];
    const text = env[name];
    if (text === undefined || text === '') {
      if (key === 'quotas')
        throw new ConfigError(name, 'must be set to a JSON array of tiers such as [{"limit":10,"per":"second"}]');
      continue;
    }
    raw[key] = jsonFromEnv(name, text);
  }
  try {
    return parseServiceConfig(raw);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const key = error.field.match(/^[A-Za-z]+/)?.[0] as keyof typeof CONFIG_ENV | undefined;
    const name = key === undefined ? undefined : CONFIG_ENV[key];
    if (name === undefined || key === undefined) throw error;
    throw new ConfigError(name + error.field.slice(key.length), error.problem, { cause: error });
  }
}

/**
 * The value of a required variable.
 * @throws ConfigError when it is missing or empty.
 */
export function requiredEnv(env: Env, name: string): string {
  const value = env[name];
  if (value === undefined || value === '')
    throw new ConfigError(name, 'must be set (serverless.yml sets it on deploy)');
  return value;
}

/**
 * The URLs of the lane's eight queues.
 * @throws ConfigError naming the first missing variable.
 */
export function queueUrlsFromEnv(env: Env): Readonly<Record<QueueName, string>> {
  const entries = Object.entries(QUEUE_URL_ENV).map(([queue, name]) => [queue, requiredEnv(env, name)] as const);
  return Object.freeze(Object.fromEntries(entries) as Record<QueueName, string>);
}

/**
 * The worker's settings from its environment (`API_URL`, `HEALTH_URL`, `API_METHOD`, `REQUEST_HEADERS`,
 * `API_KEY_HEADER`, `API_KEY_SCHEME`, `HEALTH_CHECK_SENDS_KEY`, `API_TIMEOUT_MS`, `API_KEY_PARAMETER`,
 * `API_KEY_CACHE_SECONDS`, `API_KEY_READ_TIMEOUT_MS`, `RESULT_DESTINATION`; an empty variable counts as unset), checked by
 * `parseWorkerSettings` as packaging checked them, against the service's configuration `config`.
 * @throws ConfigError naming the variable (and the field inside a JSON one, e.g. `RESULT_DESTINATION.queueArn`) and
 * its allowed values, the value quoted as it was set.
 */
export function workerSettingsFromEnv(env: Env, config: ServiceConfig): WorkerSettings {
  const text = (key: DeploySettingKey): string | undefined => {
    const value = env[WORKER_ENV[key]];
    return value === '' ? undefined : value;
  };
  const number = (key: DeploySettingKey): number | undefined => {
    const value = text(key);
    return value === undefined ? undefined : Number(value);
  };
  const json = (key: DeploySettingKey): unknown => {
    const value = text(key);
    return value === undefined ? undefined : jsonFromEnv(WORKER_ENV[key], value);
  };
  const sendsKey = text('healthCheckSendsKey');
  const input = {
    apiUrl: text('apiUrl'),
    healthUrl: text('healthUrl'),
    apiMethod: text('apiMethod'),
    requestHeaders: json('requestHeaders'),
    apiKeyHeader: text('apiKeyHeader'),
    apiKeyScheme: text('apiKeyScheme'),
    healthCheckSendsKey: sendsKey === 'true' ? true : sendsKey === 'false' ? false : sendsKey,
    apiTimeoutMs: number('apiTimeoutMs'),
    apiKeyParameter: text('apiKeyParameter'),
    apiKeyCacheSeconds: number('apiKeyCacheSeconds'),
    apiKeyReadTimeoutMs: number('apiKeyReadTimeoutMs'),
    results: json('results'),
  };
  return parseWorkerSettings(input, config, {
    field: (key) => WORKER_ENV[key],
    shown: (key) => {
      const value = text(key);
      return value === undefined ? describeValue(value) : `'${value}'`;
    },
    healthCheckTimeoutField: `${CONFIG_ENV.circuit}.healthCheckTimeoutSeconds`,
    probeChecksKeyField: `${CONFIG_ENV.circuit}.probeChecksKey`,
  });
}
