/**
 * How the example worker's requests look to the API: the method of a job's call, the static headers every request
 * carries, and which header carries the API key, in which form. Different providers want different ones (OpenAI
 * `authorization: Bearer <key>`, Anthropic `x-api-key: <key>` with `anthropic-version`), so they are settings, checked
 * here for packaging and the worker's cold start alike (see `parseWorkerSettings`).
 */
import { describeValue } from './domain/describeValue';
import { ConfigError } from './errors';
import { isRecord } from './settingChecks';

/** The methods a job's call may use: each sends the job's body. */
export const API_METHODS = ['POST', 'PUT', 'PATCH'] as const;

/** A method of {@link API_METHODS}. */
export type ApiMethod = (typeof API_METHODS)[number];

/**
 * Headers the worker sets itself, or that HTTP sets per connection or per request: none may be a static header or
 * the key's header. `idempotency-key` is each job's own, so a static value would make every job one to the API.
 */
export const RESERVED_HEADERS: readonly string[] = [
  'idempotency-key',
  'content-length',
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
];

/** The most static headers (Lambda's environment, which carries them, holds 4 KB in all). */
export const MAX_REQUEST_HEADERS = 20;

/** The longest static header value, in characters. */
export const MAX_HEADER_VALUE_LENGTH = 1024;

/** The scheme value that sends the key alone, with no scheme before it. */
export const NO_KEY_SCHEME = 'none';

/** The default header of the key, and the scheme it takes by default. */
export const DEFAULT_KEY_HEADER = { name: 'authorization', scheme: 'Bearer' } as const;

/** An HTTP field name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A field value the worker can send: visible ASCII, spaces and tabs inside, no line breaks. */
const FIELD_VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

/** The request settings as written, before they are checked. */
export interface RequestSettingsInput {
  readonly apiMethod?: unknown;
  readonly requestHeaders?: unknown;
  readonly apiKeyHeader?: unknown;
  readonly apiKeyScheme?: unknown;
  readonly healthCheckSendsKey?: unknown;
}

/** A key of {@link RequestSettingsInput}. */
export type RequestSettingKey = keyof RequestSettingsInput;

/** How the worker's requests look, checked, with their defaults. */
export interface RequestSettings {
  /** The method of a job's call. @default 'POST' */
  readonly apiMethod: ApiMethod;
  /** Sent with every call and health check, under lower-case names. @default none */
  readonly requestHeaders: Readonly<Record<string, string>>;
  /** The header that carries the key, lower case. @default 'authorization' */
  readonly apiKeyHeader: string;
  /** Written before the key and a space (`Bearer`), or `undefined` to send the key alone. */
  readonly apiKeyScheme: string | undefined;
  /** Whether health checks carry the key too. @default true */
  readonly healthCheckSendsKey: boolean;
}

/** How the settings are named where they were read (see `SettingsOrigin`). */
export interface RequestSettingsOrigin {
  field(key: RequestSettingKey): string;
  shown(key: RequestSettingKey): string;
  /** The name of the circuit's `probeChecksKey` there. */
  readonly probeChecksKeyField: string;
}

/** `value` as a header name, lower case. @throws ConfigError naming `field` when it is not an HTTP token. */
function headerName(value: unknown, field: string, shown: string): string {
  if (typeof value !== 'string' || !TOKEN.test(value))
    throw new ConfigError(field, `must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~); got ${shown}`);
  const name = value.toLowerCase();
  if (RESERVED_HEADERS.includes(name))
    throw new ConfigError(field, `must not be ${name}, which the worker or HTTP sets itself; got ${shown}`);
  return name;
}

/** @throws ConfigError naming `custom…requestHeaders.<name>` for a name or value the worker cannot send. */
function staticHeaders(value: unknown, keyHeader: string, origin: RequestSettingsOrigin): Record<string, string> {
  const field = origin.field('requestHeaders');
  if (value === undefined) return {};
  if (!isRecord(value))
    throw new ConfigError(
      field,
      `must be a map of header names to values, such as { anthropic-version: '2023-06-01' }; got ${origin.shown('requestHeaders')}`,
    );
  const entries = Object.entries(value);
  if (entries.length > MAX_REQUEST_HEADERS)
    throw new ConfigError(field, `must hold at most ${MAX_REQUEST_HEADERS} headers; got ${entries.length}`);
  const headers: Record<string, string> = {};
  for (const [given, headerValue] of entries) {
    const name = headerName(given, `${field}.${given}`, JSON.stringify(given));
    if (name === keyHeader)
      throw new ConfigError(`${field}.${given}`, `must not be the key's header (apiKeyHeader: ${keyHeader})`);
    if (Object.hasOwn(headers, name))
      throw new ConfigError(`${field}.${given}`, `is given twice (header names are case-insensitive)`);
    if (
      typeof headerValue !== 'string' ||
      headerValue.length > MAX_HEADER_VALUE_LENGTH ||
      !FIELD_VALUE.test(headerValue)
    )
      throw new ConfigError(
        `${field}.${given}`,
        `must be text of 1 to ${MAX_HEADER_VALUE_LENGTH} printable ASCII characters, without line breaks or spaces at either end; got ${describeValue(headerValue)}`,
      );
    headers[name] = headerValue;
  }
  return headers;
}

/** The key's scheme: `undefined` for the key alone. @throws ConfigError naming `apiKeyScheme`. */
function keyScheme(value: unknown, keyHeader: string, origin: RequestSettingsOrigin): string | undefined {
  if (value === undefined) return keyHeader === DEFAULT_KEY_HEADER.name ? DEFAULT_KEY_HEADER.scheme : undefined;
  if (value === NO_KEY_SCHEME) return undefined;
  if (typeof value === 'string' && value.length <= 64 && TOKEN.test(value)) return value;
  throw new ConfigError(
    origin.field('apiKeyScheme'),
    `must be a scheme such as Bearer, Basic or token (up to 64 letters, digits and !#$%&'*+-.^_\`|~), or ${NO_KEY_SCHEME} to send the key alone; got ${origin.shown('apiKeyScheme')}`,
  );
}

/**
 * Checks the request settings and fills in their defaults: `apiMethod` is one of {@link API_METHODS};
 * `requestHeaders` maps at most {@link MAX_REQUEST_HEADERS} header names (none reserved, none the key's header,
 * none twice in any case) to printable values; `apiKeyHeader` is a header name not reserved; `apiKeyScheme` is a
 * token or `none` (default `Bearer` on `authorization`, `none` on any other header); `healthCheckSendsKey` is a
 * boolean, and not false while `circuit.probeChecksKey` (`probeChecksKey`) says a probe checks the key.
 * @throws ConfigError naming the setting as `origin` writes it, and its allowed values.
 */
export function parseRequestSettings(
  input: RequestSettingsInput,
  probeChecksKey: boolean,
  origin: RequestSettingsOrigin,
): RequestSettings {
  const method = input.apiMethod ?? 'POST';
  if (!API_METHODS.includes(method as ApiMethod))
    throw new ConfigError(
      origin.field('apiMethod'),
      `must be one of ${API_METHODS.join(', ')}; got ${origin.shown('apiMethod')}`,
    );
  const apiKeyHeader =
    input.apiKeyHeader === undefined
      ? DEFAULT_KEY_HEADER.name
      : headerName(input.apiKeyHeader, origin.field('apiKeyHeader'), origin.shown('apiKeyHeader'));
  const sendsKey = input.healthCheckSendsKey ?? true;
  if (typeof sendsKey !== 'boolean')
    throw new ConfigError(
      origin.field('healthCheckSendsKey'),
      `must be true or false; got ${origin.shown('healthCheckSendsKey')}`,
    );
  if (!sendsKey && probeChecksKey)
    throw new ConfigError(
      origin.field('healthCheckSendsKey'),
      `must be true while ${origin.probeChecksKeyField} is true: a health check without the key cannot show that the key works`,
    );
  return Object.freeze({
    apiMethod: method as ApiMethod,
    requestHeaders: Object.freeze(staticHeaders(input.requestHeaders, apiKeyHeader, origin)),
    apiKeyHeader,
    apiKeyScheme: keyScheme(input.apiKeyScheme, apiKeyHeader, origin),
    healthCheckSendsKey: sendsKey,
  });
}
