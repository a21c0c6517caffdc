import { parseServiceConfig, type ServiceConfig } from './config';
import { ConfigError } from './errors';
import type { QueueName } from './ports/QueueReceiver';
import { parseResultDestination, type ResultDestination } from './resultDestination';

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
  'main-dlq': 'MAIN_DLQ_URL',
  'fifo-dlq': 'FIFO_DLQ_URL',
  'requeue-dlq': 'REQUEUE_DLQ_URL',
} as const satisfies Record<QueueName, string>;

/** Environment variables naming the other AWS resources and the example worker's API. */
export const RESOURCE_ENV = {
  tableName: 'TABLE_NAME',
  workerFunctionName: 'WORKER_FUNCTION_NAME',
  apiUrl: 'API_URL',
  healthUrl: 'HEALTH_URL',
  apiTimeoutMs: 'API_TIMEOUT_MS',
  /** Name of the SSM parameter holding the example worker's API key; the key itself never sits in the environment. */
  apiKeyParameter: 'API_KEY_PARAMETER',
  /** How long the worker keeps the API key it read (or found missing) before reading the parameter again, in seconds. */
  apiKeyCacheSeconds: 'API_KEY_CACHE_SECONDS',
  /** The worker's result destination as JSON (`custom.quotaOrchestrator.results`, see `ResultDestination`); unset for none. */
  resultDestination: 'RESULT_DESTINATION',
} as const;

/**
 * The worker's API timeout when `API_TIMEOUT_MS` is not set: 10 s, or half the worker timeout if that is shorter,
 * so a call stays well inside the worker's run.
 */
export function defaultApiTimeoutMs(workerTimeoutMs: number): number {
  return Math.min(10_000, Math.floor(workerTimeoutMs / 2));
}

/**
 * Checks that the worker's API timeout stays below the circuit's `healthCheckTimeoutSeconds`. A probe is presumed
 * lost, and another may start, that long after it started; a probe call still running then would overlap the next.
 * @param fields how the two settings are named where they were written, for the message.
 * @throws ConfigError naming `fields.apiTimeoutMs` and `fields.healthCheckTimeoutSeconds` when it does not.
 */
export function checkProbeOutlastsCall(
  apiTimeoutMs: number,
  healthCheckTimeoutSeconds: number,
  fields: { readonly apiTimeoutMs: string; readonly healthCheckTimeoutSeconds: string; readonly defaulted: boolean },
): void {
  const probeTimeoutMs = healthCheckTimeoutSeconds * 1000;
  if (apiTimeoutMs < probeTimeoutMs) return;
  throw new ConfigError(
    fields.apiTimeoutMs,
    `must be below ${fields.healthCheckTimeoutSeconds} (${probeTimeoutMs} ms), so a health probe still calling is never presumed lost and overlapped by the next; got ${apiTimeoutMs}${fields.defaulted ? ' (the default)' : ''}. Lower it or raise ${fields.healthCheckTimeoutSeconds}`,
  );
}

/** A process environment, or any record shaped like one. */
export type Env = Readonly<Record<string, string | undefined>>;

const JSON_KEYS = ['quotas', 'maxInFlight', 'units', 'pacing', 'circuit', 'retry', 'orchestrator'] as const;

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
    try {
      raw[key] = JSON.parse(text);
    } catch (error) {
      throw new ConfigError(name, `must be JSON; ${(error as Error).message}`, { cause: error });
    }
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
 * The URLs of the lane's six queues.
 * @throws ConfigError naming the first missing variable.
 */
export function queueUrlsFromEnv(env: Env): Readonly<Record<QueueName, string>> {
  const entries = Object.entries(QUEUE_URL_ENV).map(([queue, name]) => [queue, requiredEnv(env, name)] as const);
  return Object.freeze(Object.fromEntries(entries) as Record<QueueName, string>);
}

/**
 * A whole number of milliseconds from an optional variable.
 * @throws ConfigError naming the variable and its range when the value is not a whole number within it.
 */
export function millisecondsFromEnv(
  env: Env,
  name: string,
  fallback: number,
  range: { readonly min: number; readonly max: number },
): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new ConfigError(
      name,
      `must be a whole number of milliseconds from ${range.min} to ${range.max}; got '${text}'`,
    );
  }
  return value;
}

/** Bounds and default of the API key's cache time, in seconds (`API_KEY_CACHE_SECONDS`, `apiKeyCacheSeconds`). */
export const API_KEY_CACHE_SECONDS = { min: 1, max: 3600, default: 300 } as const;

/**
 * How long the worker keeps the API key, from `API_KEY_CACHE_SECONDS`: a rotated key is used within that.
 * @default API_KEY_CACHE_SECONDS.default, when unset or empty
 * @throws ConfigError naming the variable when it is not a whole number of seconds in {@link API_KEY_CACHE_SECONDS}.
 */
export function apiKeyCacheSecondsFromEnv(env: Env): number {
  const name = RESOURCE_ENV.apiKeyCacheSeconds;
  const text = env[name];
  if (text === undefined || text === '') return API_KEY_CACHE_SECONDS.default;
  const value = Number(text);
  if (!Number.isInteger(value) || value < API_KEY_CACHE_SECONDS.min || value > API_KEY_CACHE_SECONDS.max) {
    throw new ConfigError(
      name,
      `must be a whole number of seconds from ${API_KEY_CACHE_SECONDS.min} to ${API_KEY_CACHE_SECONDS.max}; got '${text}'`,
    );
  }
  return value;
}

/**
 * The worker's result destination from `RESULT_DESTINATION` (JSON), or `undefined` when it is unset or empty.
 * @throws ConfigError naming the variable and the field inside it (e.g. `RESULT_DESTINATION.queueArn`).
 */
export function resultDestinationFromEnv(env: Env): ResultDestination | undefined {
  const name = RESOURCE_ENV.resultDestination;
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(name, `must be JSON; ${(error as Error).message}`, { cause: error });
  }
  return parseResultDestination(value, name);
}
