/**
 * The example worker's settings, which serverless.yml alone has: one parser checks them, run by packaging
 * (lib/deploy/quotaSettings.ts, on `custom.quotaOrchestrator`) and by the worker's cold start
 * (`workerSettingsFromEnv`, on the environment packaging wrote), as both run `parseServiceConfig`. Each names the
 * settings as they are written where it reads them.
 */
import type { ServiceConfig } from './config';
import { ConfigError } from './errors';
import { parseRequestSettings, type ApiMethod, type RequestSettings } from './requestSettings';
import { parseResultDestination, type ResultDestination } from './resultDestination';
import { wholeNumber } from './settingChecks';

/**
 * The keys of `custom.quotaOrchestrator` that serverless.yml alone has: the others are {@link ServiceConfig}'s. Their
 * descriptions here are the ones docs/configuration.md shows (`npm run docs:config`).
 */
export interface DeploySettings {
  /** The URL the example worker sends each job's body to (JSON, as the producer sent it; see `apiMethod`). Required. */
  readonly apiUrl: string;
  /** The URL the example worker's health checks GET while the circuit is open. Required. */
  readonly healthUrl: string;
  /** The method of a job's call: `POST`, `PUT` or `PATCH`. @default POST */
  readonly apiMethod?: ApiMethod;
  /**
   * Headers every call and health check carries, as written (e.g. `{ anthropic-version: '2023-06-01' }`): at most 20,
   * each value 1 to 1024 printable ASCII characters. Not the key's header, `idempotency-key` (each job's own),
   * `content-length`, `host` or another header HTTP sets per connection. A `content-type` here replaces
   * `application/json`. Never a secret: these sit in the template and the environment as written (the key belongs in
   * `apiKeyParameter`). @default none
   */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /**
   * The header that carries the API key read from `apiKeyParameter`, e.g. `x-api-key` for Anthropic.
   * @default authorization
   */
  readonly apiKeyHeader?: string;
  /**
   * What goes before the key and a space in `apiKeyHeader` (`Bearer`, `Basic`, `token`), or `none` to send the key
   * alone. @default Bearer on the authorization header, none on any other
   */
  readonly apiKeyScheme?: string;
  /**
   * Whether health checks carry the API key (and `requestHeaders`, which they always carry). False only for a
   * health URL that refuses a key; then `circuit.probeChecksKey` must be false too, and a health check does not wait
   * for the key's read (nor fail with it). @default true
   */
  readonly healthCheckSendsKey?: boolean;
  /**
   * How long the example worker waits for the API's answer, in ms: below `functions.worker.timeout` and below
   * `circuit.healthCheckTimeoutSeconds`. @default 10000, or half the worker's timeout if that is shorter
   */
  readonly apiTimeoutMs?: number;
  /**
   * Name of an SSM Parameter Store SecureString holding the API key, which the worker reads before its first call and
   * sends in `apiKeyHeader` (`authorization: Bearer <key>` by default); without such a parameter, calls carry no key.
   * The worker's role may read this one parameter; the key never sits in the environment or the template.
   * @default /quota-orchestrator/<stage>/api-key (set in serverless.yml)
   */
  readonly apiKeyParameter?: string;
  /**
   * How long the worker keeps the API key it read (or found missing) before reading the parameter again, in seconds,
   * from 1 to 3600: a rotated key is in use at most this long after it is put in the parameter. @default 300
   */
  readonly apiKeyCacheSeconds?: number;
  /**
   * How long the worker waits for the API key from Parameter Store (the read and its decryption), in ms, from 100 to
   * 30000. A read that takes longer fails: the job goes back to its queue, its attempt unspent, and the circuit is
   * told nothing. With `apiKeyParameter` set, it plus `apiTimeoutMs` must be below
   * `circuit.healthCheckTimeoutSeconds`. @default 2000
   */
  readonly apiKeyReadTimeoutMs?: number;
  /**
   * Where the worker sends the API's answer (status, headers, body) to each succeeded job: `{ type: sqs, queueArn }`
   * or `{ type: eventbridge, busName, source?, detailType? }` (see `ResultDestination` in lib/resultDestination.ts).
   * The worker's role is granted the send on it. A result the destination refuses is logged and dropped; the job
   * stays succeeded. @default none: results are dropped
   */
  readonly results?: ResultDestination;
}

/** A key of {@link DeploySettings}. */
export type DeploySettingKey = keyof DeploySettings;

/** The keys of {@link DeploySettings}, in the order packaging writes their environment variables. */
export const DEPLOY_SETTING_KEYS = [
  'apiUrl',
  'healthUrl',
  'apiMethod',
  'requestHeaders',
  'apiKeyHeader',
  'apiKeyScheme',
  'healthCheckSendsKey',
  'apiTimeoutMs',
  'apiKeyParameter',
  'apiKeyCacheSeconds',
  'apiKeyReadTimeoutMs',
  'results',
] as const satisfies readonly DeploySettingKey[];

/** {@link DeploySettings} as read, before they are checked: values of any type, `undefined` for a setting not set. */
export type DeploySettingsInput = { readonly [K in DeploySettingKey]?: unknown };

/** The worker's settings, checked, with their defaults. */
export interface WorkerSettings extends RequestSettings {
  readonly apiUrl: string;
  readonly healthUrl: string;
  /** @default {@link defaultApiTimeoutMs} of the worker's timeout */
  readonly apiTimeoutMs: number;
  /** @default none: calls carry no key */
  readonly apiKeyParameter?: string;
  /** @default API_KEY_CACHE_SECONDS.default */
  readonly apiKeyCacheSeconds: number;
  /** @default API_KEY_READ_TIMEOUT_MS.default */
  readonly apiKeyReadTimeoutMs: number;
  /** @default none: results are dropped */
  readonly results?: ResultDestination;
}

/** Where the worker's settings were read, which names them in refusals. */
export interface SettingsOrigin {
  /** The name of `key` there: `custom.quotaOrchestrator.apiTimeoutMs` in serverless.yml, `API_TIMEOUT_MS` in the environment. */
  field(key: DeploySettingKey): string;
  /** The value of `key` as written there, for "got …": serverless.yml's as JSON, a variable's text in quotes. */
  shown(key: DeploySettingKey): string;
  /** The name of the circuit's `healthCheckTimeoutSeconds` there. */
  readonly healthCheckTimeoutField: string;
  /** The name of the circuit's `probeChecksKey` there. */
  readonly probeChecksKeyField: string;
  /**
   * The name of the worker's timeout, which bounds `apiTimeoutMs`, where it is written beside it (serverless.yml's
   * `functions.worker.timeout`). @default none: the refusal gives the range alone
   */
  readonly workerTimeoutField?: string;
}

/** Bounds and default of the API key's cache time, in seconds (`API_KEY_CACHE_SECONDS`, `apiKeyCacheSeconds`). */
export const API_KEY_CACHE_SECONDS = { min: 1, max: 3600, default: 300 } as const;

/**
 * Bounds and default of how long a read of the API key may take, in ms (`API_KEY_READ_TIMEOUT_MS`,
 * `apiKeyReadTimeoutMs`): SSM's GetParameter with KMS decryption takes tens of ms, a new container's first a few
 * hundred, and the SDK's retries of a throttled read more.
 */
export const API_KEY_READ_TIMEOUT_MS = { min: 100, max: 30_000, default: 2_000 } as const;

/** A fully qualified SSM parameter name (the worker's role is granted exactly that parameter's ARN). */
const SSM_PARAMETER_NAME = /^\/[A-Za-z0-9_.\-/]{1,1010}$/;

/**
 * The worker's API timeout when `apiTimeoutMs` is not set: 10 s, or half the worker timeout if that is shorter,
 * so a call stays well inside the worker's run.
 */
export function defaultApiTimeoutMs(workerTimeoutMs: number): number {
  return Math.min(10_000, Math.floor(workerTimeoutMs / 2));
}

/** @throws ConfigError naming `key` when `value` is not an http(s) URL. */
function httpUrl(value: unknown, key: DeploySettingKey, origin: SettingsOrigin): string {
  const expected = `must be an http(s) URL such as https://api.example.com/jobs; got ${origin.shown(key)}`;
  if (typeof value !== 'string') throw new ConfigError(origin.field(key), expected);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(origin.field(key), expected);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(origin.field(key), `must use http or https; got ${origin.shown(key)}`);
  return value;
}

/**
 * The API timeout, given or its default: below the worker's timeout, and below the circuit's
 * `healthCheckTimeoutSeconds`. A probe is presumed lost, and another may start, that long after it started; a probe
 * call still running then would overlap the next.
 * @throws ConfigError naming `apiTimeoutMs` (and `healthCheckTimeoutSeconds`, when it is the one to raise).
 */
function apiTimeout(value: unknown, config: ServiceConfig, origin: SettingsOrigin): number {
  const workerTimeoutMs = config.orchestrator.workerTimeoutMs;
  const field = origin.field('apiTimeoutMs');
  const apiTimeoutMs =
    value === undefined
      ? defaultApiTimeoutMs(workerTimeoutMs)
      : wholeNumber(
          value,
          { min: 1, max: workerTimeoutMs - 1 },
          {
            field,
            unit: 'milliseconds',
            note: origin.workerTimeoutField === undefined ? '' : `, below ${origin.workerTimeoutField}`,
            shown: origin.shown('apiTimeoutMs'),
          },
        );
  const probeTimeoutMs = config.circuit.healthCheckTimeoutSeconds * 1000;
  if (apiTimeoutMs < probeTimeoutMs) return apiTimeoutMs;
  const probe = origin.healthCheckTimeoutField;
  throw new ConfigError(
    field,
    `must be below ${probe} (${probeTimeoutMs} ms), so a health probe still calling is never presumed lost and overlapped by the next; got ${apiTimeoutMs}${value === undefined ? ' (the default)' : ''}. Lower it or raise ${probe}`,
  );
}

/**
 * The key read's timeout, given or its default, within {@link API_KEY_READ_TIMEOUT_MS}; when a key is read at all
 * (`keyParameter` set), below `circuit.healthCheckTimeoutSeconds` less `apiTimeoutMs`. A health check's worker reads
 * the key before it claims the check, whose timeout counts from the claim; the bound holds all the same for a probe
 * whose key is read after the claim, so a key read and a probe that both take their full time end before the check
 * is presumed lost and another probe may start.
 * @throws ConfigError naming `apiKeyReadTimeoutMs`, with its range.
 */
function keyReadTimeout(
  value: unknown,
  { apiTimeoutMs, keyParameter }: { readonly apiTimeoutMs: number; readonly keyParameter: string | undefined },
  config: ServiceConfig,
  origin: SettingsOrigin,
): number {
  const field = origin.field('apiKeyReadTimeoutMs');
  const keyReadMs =
    value === undefined
      ? API_KEY_READ_TIMEOUT_MS.default
      : wholeNumber(value, API_KEY_READ_TIMEOUT_MS, {
          field,
          unit: 'milliseconds',
          shown: origin.shown('apiKeyReadTimeoutMs'),
        });
  const probeTimeoutMs = config.circuit.healthCheckTimeoutSeconds * 1000;
  if (keyParameter === undefined || keyReadMs + apiTimeoutMs < probeTimeoutMs) return keyReadMs;
  const probe = origin.healthCheckTimeoutField;
  const most = probeTimeoutMs - apiTimeoutMs - 1;
  const must =
    most < API_KEY_READ_TIMEOUT_MS.min
      ? `has no allowed value (the least is ${API_KEY_READ_TIMEOUT_MS.min})`
      : `must be a whole number of milliseconds from ${API_KEY_READ_TIMEOUT_MS.min} to ${most}`;
  throw new ConfigError(
    field,
    `${must}: with ${origin.field('apiTimeoutMs')} (${apiTimeoutMs} ms) it must stay below ${probe} (${probeTimeoutMs} ms), so that a health check whose key read and probe both take their full time ends before it is presumed lost and a second probe starts; got ${keyReadMs}${value === undefined ? ' (the default)' : ''}. Lower either, or raise ${probe}`,
  );
}

/** @throws ConfigError naming `apiKeyParameter` when `value` is set and not an SSM parameter name. */
function ssmParameterName(value: unknown, origin: SettingsOrigin): string | undefined {
  if (value === undefined || (typeof value === 'string' && SSM_PARAMETER_NAME.test(value))) return value;
  throw new ConfigError(
    origin.field('apiKeyParameter'),
    `must be an SSM parameter name such as /quota-orchestrator/prod/api-key: a leading '/', then up to 1010 letters, digits and _ . - /; got ${origin.shown('apiKeyParameter')}`,
  );
}

/**
 * Checks the worker's settings (see {@link DeploySettings}) against the service's configuration `config` and fills in
 * their defaults. The checks, in this order: `apiUrl` and `healthUrl` are http(s) URLs; the request's method, headers
 * and key header (`parseRequestSettings`); `apiTimeoutMs` is below the
 * worker's timeout and below `circuit.healthCheckTimeoutSeconds`; `apiKeyParameter` is an SSM parameter name;
 * `apiKeyCacheSeconds` is within {@link API_KEY_CACHE_SECONDS}; `apiKeyReadTimeoutMs` is within
 * {@link API_KEY_READ_TIMEOUT_MS} and, with a key parameter, below `circuit.healthCheckTimeoutSeconds` less
 * `apiTimeoutMs`; `results` is a result destination (`parseResultDestination`).
 * @throws ConfigError naming the setting as `origin` writes it (e.g. `custom.quotaOrchestrator.apiTimeoutMs` or
 * `API_TIMEOUT_MS`, `RESULT_DESTINATION.queueArn`) and its allowed values.
 */
export function parseWorkerSettings(
  input: DeploySettingsInput,
  config: ServiceConfig,
  origin: SettingsOrigin,
): WorkerSettings {
  const apiUrl = httpUrl(input.apiUrl, 'apiUrl', origin);
  const healthUrl = httpUrl(input.healthUrl, 'healthUrl', origin);
  const request = parseRequestSettings(input, config.circuit.probeChecksKey, origin);
  const apiTimeoutMs = apiTimeout(input.apiTimeoutMs, config, origin);
  const apiKeyParameter = ssmParameterName(input.apiKeyParameter, origin);
  const apiKeyCacheSeconds =
    input.apiKeyCacheSeconds === undefined
      ? API_KEY_CACHE_SECONDS.default
      : wholeNumber(input.apiKeyCacheSeconds, API_KEY_CACHE_SECONDS, {
          field: origin.field('apiKeyCacheSeconds'),
          unit: 'seconds',
          shown: origin.shown('apiKeyCacheSeconds'),
        });
  const apiKeyReadTimeoutMs = keyReadTimeout(
    input.apiKeyReadTimeoutMs,
    { apiTimeoutMs, keyParameter: apiKeyParameter },
    config,
    origin,
  );
  const results =
    input.results === undefined ? undefined : parseResultDestination(input.results, origin.field('results'));
  return Object.freeze({
    apiUrl,
    healthUrl,
    ...request,
    apiTimeoutMs,
    ...(apiKeyParameter === undefined ? {} : { apiKeyParameter }),
    apiKeyCacheSeconds,
    apiKeyReadTimeoutMs,
    ...(results === undefined ? {} : { results }),
  });
}
