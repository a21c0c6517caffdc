import { ConfigError } from '../../lib/errors';
import {
  MAX_HEADER_VALUE_LENGTH,
  MAX_REQUEST_HEADERS,
  parseRequestSettings,
  RESERVED_HEADERS,
  type RequestSettingsInput,
} from '../../lib/requestSettings';
import { thrown } from '../helpers/thrown';

/** Names each setting `at.<key>` and shows its value as JSON. */
const parse = (input: RequestSettingsInput, probeChecksKey = false) =>
  parseRequestSettings(input, probeChecksKey, {
    field: (key) => `at.${key}`,
    shown: (key) => JSON.stringify(input[key]),
    probeChecksKeyField: 'at.circuit.probeChecksKey',
  });

describe('parseRequestSettings', () => {
  it("defaults to today's requests: a POST, no static headers, the key as authorization: Bearer, probes with it", () => {
    expect(parse({})).toEqual({
      apiMethod: 'POST',
      requestHeaders: {},
      apiKeyHeader: 'authorization',
      apiKeyScheme: 'Bearer',
      healthCheckSendsKey: true,
    });
  });

  it("takes Anthropic's lane as documented: x-api-key with the key alone, and anthropic-version", () => {
    expect(parse({ apiKeyHeader: 'X-Api-Key', requestHeaders: { 'Anthropic-Version': '2023-06-01' } })).toEqual({
      apiMethod: 'POST',
      requestHeaders: { 'anthropic-version': '2023-06-01' },
      apiKeyHeader: 'x-api-key',
      apiKeyScheme: undefined,
      healthCheckSendsKey: true,
    });
  });

  it('keeps a scheme given on any header, and sends the key alone on authorization with none', () => {
    expect(parse({ apiKeyHeader: 'x-key', apiKeyScheme: 'Token' }).apiKeyScheme).toBe('Token');
    expect(parse({ apiKeyScheme: 'none' }).apiKeyScheme).toBeUndefined();
    expect(parse({ apiKeyScheme: 'Basic' }).apiKeyScheme).toBe('Basic');
  });

  it.each([
    [{ apiMethod: 'GET' }, 'at.apiMethod: must be one of POST, PUT, PATCH; got "GET"'],
    [{ apiKeyHeader: 'x api key' }, 'at.apiKeyHeader: must be an HTTP header name'],
    [{ apiKeyHeader: 'Host' }, 'at.apiKeyHeader: must not be host, which the worker or HTTP sets itself'],
    [{ apiKeyScheme: 'Bearer x' }, 'at.apiKeyScheme: must be a scheme such as Bearer, Basic or token'],
    [{ apiKeyScheme: '' }, 'at.apiKeyScheme: must be a scheme'],
    [{ requestHeaders: ['x'] }, 'at.requestHeaders: must be a map of header names to values'],
    [{ requestHeaders: { 'x-a': 1 } }, 'at.requestHeaders.x-a: must be text of 1 to 1024 printable ASCII'],
    [{ requestHeaders: { 'x-a': 'one\r\nx-b: two' } }, 'at.requestHeaders.x-a: must be text'],
    [{ requestHeaders: { 'x-a': ' padded' } }, 'at.requestHeaders.x-a: must be text'],
    [{ requestHeaders: { 'x-a': 'é' } }, 'at.requestHeaders.x-a: must be text'],
    [{ requestHeaders: { 'x-a': '' } }, 'at.requestHeaders.x-a: must be text'],
    [
      { requestHeaders: { Authorization: 'Bearer k' } },
      "at.requestHeaders.Authorization: must not be the key's header",
    ],
    [{ requestHeaders: { 'Idempotency-Key': 'k' } }, 'at.requestHeaders.Idempotency-Key: must not be idempotency-key'],
    [{ requestHeaders: { 'x-a': '1', 'X-A': '2' } }, 'at.requestHeaders.X-A: is given twice'],
    [{ healthCheckSendsKey: 'no' }, 'at.healthCheckSendsKey: must be true or false; got "no"'],
  ])('refuses %p, naming the setting', (input, message) => {
    expect(thrown(ConfigError, () => parse(input)).message).toContain(message);
  });

  it('refuses every reserved header, as a static header and as the key header', () => {
    for (const name of RESERVED_HEADERS) {
      expect(thrown(ConfigError, () => parse({ requestHeaders: { [name]: 'x' } })).field).toBe(
        `at.requestHeaders.${name}`,
      );
      expect(thrown(ConfigError, () => parse({ apiKeyHeader: name })).field).toBe('at.apiKeyHeader');
    }
  });

  it('bounds the count of headers and the length of a value', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_REQUEST_HEADERS + 1 }, (_, i) => [`x-h${i}`, 'v']));
    expect(thrown(ConfigError, () => parse({ requestHeaders: many })).message).toBe(
      `at.requestHeaders: must hold at most ${MAX_REQUEST_HEADERS} headers; got ${MAX_REQUEST_HEADERS + 1}`,
    );
    const longest = 'v'.repeat(MAX_HEADER_VALUE_LENGTH);
    expect(parse({ requestHeaders: { 'x-a': longest } }).requestHeaders['x-a']).toBe(longest);
    expect(() => parse({ requestHeaders: { 'x-a': `${longest}v` } })).toThrow(ConfigError);
  });

  it('refuses health checks without the key while the circuit trusts a probe to check it', () => {
    expect(parse({ healthCheckSendsKey: false }).healthCheckSendsKey).toBe(false);
    expect(thrown(ConfigError, () => parse({ healthCheckSendsKey: false }, true)).message).toBe(
      'at.healthCheckSendsKey: must be true while at.circuit.probeChecksKey is true: a health check without the key cannot show that the key works',
    );
  });

  it('freezes what it returns', () => {
    const settings = parse({ requestHeaders: { 'x-a': 'b' } });
    expect(Object.isFrozen(settings)).toBe(true);
    expect(Object.isFrozen(settings.requestHeaders)).toBe(true);
  });
});
