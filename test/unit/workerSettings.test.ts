import { parseServiceConfig } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import {
  API_KEY_CACHE_SECONDS,
  API_KEY_READ_TIMEOUT_MS,
  defaultApiTimeoutMs,
  parseWorkerSettings,
  type DeploySettingsInput,
  type SettingsOrigin,
} from '../../lib/workerSettings';
import { thrown } from '../helpers/thrown';

const config = parseServiceConfig({ quotas: [{ limit: 10, per: 'second' }] });
const URLS = { apiUrl: 'https://api.example.test/jobs', healthUrl: 'https://api.example.test/health' };

/** Names each setting `at.<key>` and shows its value as `<value>`; names the worker's timeout when `bound` is given. */
function origin(input: DeploySettingsInput, bound?: string): SettingsOrigin {
  return {
    field: (key) => `at.${key}`,
    shown: (key) => `<${String(input[key])}>`,
    healthCheckTimeoutField: 'at.circuit.healthCheckTimeoutSeconds',
    probeChecksKeyField: 'at.circuit.probeChecksKey',
    ...(bound === undefined ? {} : { workerTimeoutField: bound }),
  };
}

/** What a job's call and a probe look like when no request setting is given: today's `authorization: Bearer`. */
const REQUEST_DEFAULTS = {
  apiMethod: 'POST',
  requestHeaders: {},
  apiKeyHeader: 'authorization',
  apiKeyScheme: 'Bearer',
  healthCheckSendsKey: true,
};

const parse = (input: DeploySettingsInput, bound?: string) => parseWorkerSettings(input, config, origin(input, bound));

describe('parseWorkerSettings', () => {
  it('fills in the defaults of the settings left out', () => {
    expect(parse(URLS)).toEqual({
      ...URLS,
      ...REQUEST_DEFAULTS,
      apiTimeoutMs: defaultApiTimeoutMs(config.orchestrator.workerTimeoutMs),
      apiKeyCacheSeconds: API_KEY_CACHE_SECONDS.default,
      apiKeyReadTimeoutMs: API_KEY_READ_TIMEOUT_MS.default,
    });
  });

  it('keeps the settings given, the result destination with its defaults', () => {
    const settings = parse({
      ...URLS,
      apiTimeoutMs: 5000,
      apiKeyParameter: '/qo/prod/api-key',
      apiKeyCacheSeconds: 60,
      apiKeyReadTimeoutMs: 500,
      results: { type: 'eventbridge', busName: 'jobs' },
    });

    expect(settings).toEqual({
      ...URLS,
      ...REQUEST_DEFAULTS,
      apiTimeoutMs: 5000,
      apiKeyParameter: '/qo/prod/api-key',
      apiKeyCacheSeconds: 60,
      apiKeyReadTimeoutMs: 500,
      results: { type: 'eventbridge', busName: 'jobs', source: 'quota-orchestrator', detailType: 'Job Result' },
    });
    expect(Object.isFrozen(settings)).toBe(true);
  });

  it.each([
    [
      { ...URLS, apiUrl: undefined },
      'at.apiUrl: must be an http(s) URL such as https://api.example.com/jobs; got <undefined>',
    ],
    [{ ...URLS, healthUrl: 'ftp://x.test/' }, 'at.healthUrl: must use http or https; got <ftp://x.test/>'],
    [{ ...URLS, apiKeyParameter: 'key' }, 'at.apiKeyParameter: must be an SSM parameter name'],
    [
      { ...URLS, apiKeyCacheSeconds: 0 },
      'at.apiKeyCacheSeconds: must be a whole number of seconds from 1 to 3600; got <0>',
    ],
    [
      { ...URLS, apiKeyReadTimeoutMs: 99 },
      'at.apiKeyReadTimeoutMs: must be a whole number of milliseconds from 100 to 30000; got <99>',
    ],
    [{ ...URLS, results: { type: 'sns' } }, 'at.results.type: must be one of sqs, eventbridge'],
  ])('refuses %p, naming the setting as its origin does', (input, message) => {
    expect(thrown(ConfigError, () => parse(input)).message).toContain(message);
  });

  it("words the API timeout's range with the worker's timeout where the origin names it", () => {
    const input = { ...URLS, apiTimeoutMs: 30_000 };

    expect(thrown(ConfigError, () => parse(input)).message).toBe(
      'at.apiTimeoutMs: must be a whole number of milliseconds from 1 to 29999; got <30000>',
    );
    expect(thrown(ConfigError, () => parse(input, 'the timeout')).message).toBe(
      'at.apiTimeoutMs: must be a whole number of milliseconds from 1 to 29999, below the timeout; got <30000>',
    );
  });

  it('refuses an API timeout, given or default, not below the health-check timeout', () => {
    const probe = parseServiceConfig({
      quotas: [{ limit: 10, per: 'second' }],
      circuit: { healthCheckTimeoutSeconds: 5 },
    });
    const given = { ...URLS, apiTimeoutMs: 5000 };

    expect(thrown(ConfigError, () => parseWorkerSettings(given, probe, origin(given))).message).toBe(
      'at.apiTimeoutMs: must be below at.circuit.healthCheckTimeoutSeconds (5000 ms), so a health probe still calling is never presumed lost and overlapped by the next; got 5000. Lower it or raise at.circuit.healthCheckTimeoutSeconds',
    );
    expect(thrown(ConfigError, () => parseWorkerSettings(URLS, probe, origin(URLS))).message).toContain(
      'got 10000 (the default)',
    );
  });

  describe('with an API key to read', () => {
    const probe = parseServiceConfig({
      quotas: [{ limit: 10, per: 'second' }],
      circuit: { healthCheckTimeoutSeconds: 15 },
    });
    const keyed = { ...URLS, apiKeyParameter: '/qo/prod/api-key', apiTimeoutMs: 9_900 };

    it('refuses a key read timeout that, with the API timeout, could outlive the health check', () => {
      const input = { ...keyed, apiKeyReadTimeoutMs: 6_000 };

      expect(thrown(ConfigError, () => parseWorkerSettings(input, probe, origin(input))).message).toBe(
        'at.apiKeyReadTimeoutMs: must be a whole number of milliseconds from 100 to 5099: with at.apiTimeoutMs (9900 ms) it must stay below at.circuit.healthCheckTimeoutSeconds (15000 ms), so that a health check whose key read and probe both take their full time ends before it is presumed lost and a second probe starts; got 6000. Lower either, or raise at.circuit.healthCheckTimeoutSeconds',
      );
    });

    it('refuses the default key read timeout too, and says when the API timeout leaves it no room', () => {
      const tight = { ...keyed, apiTimeoutMs: 14_950 };

      expect(thrown(ConfigError, () => parseWorkerSettings(tight, probe, origin(tight))).message).toContain(
        'at.apiKeyReadTimeoutMs: has no allowed value (the least is 100): with at.apiTimeoutMs (14950 ms) it must stay below',
      );
      expect(thrown(ConfigError, () => parseWorkerSettings(tight, probe, origin(tight))).message).toContain(
        'got 2000 (the default)',
      );
    });

    it('accepts a key read and a probe that together end before the check times out, and any without a key', () => {
      const input = { ...keyed, apiKeyReadTimeoutMs: 5_099 };

      expect(parseWorkerSettings(input, probe, origin(input)).apiKeyReadTimeoutMs).toBe(5_099);
      const unkeyed = { ...URLS, apiTimeoutMs: 9_900, apiKeyReadTimeoutMs: 6_000 };
      expect(parseWorkerSettings(unkeyed, probe, origin(unkeyed)).apiKeyReadTimeoutMs).toBe(6_000);
    });
  });
});
