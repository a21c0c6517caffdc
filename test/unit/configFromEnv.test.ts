import { DEFAULT_ORCHESTRATOR_SETTINGS, parseServiceConfig } from '../../lib/config';
import {
  deploymentFromEnv,
  queueUrlsFromEnv,
  requiredEnv,
  serviceConfigFromEnv,
  workerSettingsFromEnv,
  type Env,
} from '../../lib/configFromEnv';
import { ConfigError } from '../../lib/errors';
import { thrown } from '../helpers/thrown';

const QUOTAS = '[{"limit":10,"per":"second"}]';

/** Every queue URL variable, set to a plausible URL. */
const QUEUE_ENV: Env = {
  MAIN_QUEUE_URL: 'https://sqs.test/1/main',
  FIFO_QUEUE_URL: 'https://sqs.test/1/fifo.fifo',
  REQUEUE_QUEUE_URL: 'https://sqs.test/1/requeue',
  BULK_QUEUE_URL: 'https://sqs.test/1/bulk',
  MAIN_DLQ_URL: 'https://sqs.test/1/main-dlq',
  FIFO_DLQ_URL: 'https://sqs.test/1/fifo-dlq.fifo',
  REQUEUE_DLQ_URL: 'https://sqs.test/1/requeue-dlq',
  BULK_DLQ_URL: 'https://sqs.test/1/bulk-dlq',
};

describe('serviceConfigFromEnv', () => {
  it('reads QUOTAS and fills every other section with its defaults when the other variables are absent', () => {
    const config = serviceConfigFromEnv({ QUOTAS });

    expect(config).toEqual(parseServiceConfig({ quotas: [{ limit: 10, per: 'second' }] }));
    expect(config.lane).toBe('default');
    expect(config.timeZone).toBe('UTC');
    expect(config.quotas).toEqual([{ limit: 10, per: 'second', unit: 'requests' }]);
    expect(config.orchestrator).toEqual(DEFAULT_ORCHESTRATOR_SETTINGS);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('treats empty optional variables as absent', () => {
    const config = serviceConfigFromEnv({
      QUOTAS,
      LANE: '',
      TIME_ZONE: '',
      PACING: '',
      CIRCUIT: '',
      RETRY: '',
      ORCHESTRATOR: '',
    });

    expect(config).toEqual(serviceConfigFromEnv({ QUOTAS }));
  });

  it('passes LANE and TIME_ZONE through', () => {
    const config = serviceConfigFromEnv({ QUOTAS, LANE: 'billing-api', TIME_ZONE: 'America/New_York' });

    expect(config.lane).toBe('billing-api');
    expect(config.timeZone).toBe('America/New_York');
  });

  it('parses each JSON variable into its section', () => {
    const config = serviceConfigFromEnv({
      QUOTAS: '[{"limit":100,"per":"minute"},{"limit":5000,"per":"day","unit":"cost"}]',
      PACING: '{"rampSeconds":0}',
      CIRCUIT: '{"openSeconds":45}',
      RETRY: '{"maxAttempts":7}',
      ORCHESTRATOR: '{"workerTimeoutMs":60000}',
    });

    expect(config.quotas).toEqual([
      { limit: 100, per: 'minute', unit: 'requests' },
      { limit: 5000, per: 'day', unit: 'cost' },
    ]);
    expect(config.pacing.rampSeconds).toBe(0);
    expect(config.circuit.openSeconds).toBe(45);
    expect(config.retry.maxAttempts).toBe(7);
    expect(config.orchestrator).toEqual({ ...DEFAULT_ORCHESTRATOR_SETTINGS, workerTimeoutMs: 60_000 });
  });

  it.each([
    ['absent', {}],
    ['empty', { QUOTAS: '' }],
  ])('refuses a configuration whose QUOTAS is %s, naming QUOTAS', (_, env: Env) => {
    const error = thrown(ConfigError, () => serviceConfigFromEnv(env));

    expect(error.field).toBe('QUOTAS');
    expect(error.message).toMatch(/^QUOTAS: must be set to a JSON array of tiers/);
  });

  it.each([
    ['QUOTAS', { QUOTAS: '[{"limit":10,' }],
    ['CIRCUIT', { QUOTAS, CIRCUIT: '{openSeconds: 5}' }],
    ['ORCHESTRATOR', { QUOTAS, ORCHESTRATOR: 'leaseTtlMs=5000' }],
  ])('names %s when its value is not JSON, with the parser’s reason', (name, env: Env) => {
    const error = thrown(ConfigError, () => serviceConfigFromEnv(env));

    expect(error.field).toBe(name);
    expect(error.message).toMatch(new RegExp(`^${name}: must be JSON; \\S`));
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });

  it.each([
    [
      { QUOTAS: '[{"limit":0,"per":"second"}]' },
      'QUOTAS[0].limit',
      'must be an integer from 1 to 1000000000000; got 0',
    ],
    [
      { QUOTAS: '[{"limit":10,"per":"second"},{"limit":10,"per":"fortnight"}]' },
      'QUOTAS[1].per',
      'must be one of second, minute, hour, day, month; got "fortnight"',
    ],
    [{ QUOTAS, CIRCUIT: '{"openSeconds":-1}' }, 'CIRCUIT.openSeconds', 'must be a number from 1 to 3600; got -1'],
    [
      { QUOTAS, ORCHESTRATOR: '{"leaseTtlMs":1000}' },
      'ORCHESTRATOR.leaseTtlMs',
      'must be an integer from 5000 to 900000; got 1000',
    ],
    [{ QUOTAS, PACING: '{"burstFraction":2}' }, 'PACING.burstFraction', 'must be a number from 0 to 1; got 2'],
    [{ QUOTAS, LANE: 'no spaces' }, 'LANE', `must be 1 to 64 letters, digits, '-' or '_'; got "no spaces"`],
    [
      { QUOTAS, TIME_ZONE: 'Mars/Olympus' },
      'TIME_ZONE',
      `must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"`,
    ],
  ])('names the field inside the variable with the allowed values: %j', (env: Env, field, problem) => {
    const error = thrown(ConfigError, () => serviceConfigFromEnv(env));

    expect(error.field).toBe(field);
    expect(error.message).toBe(`${field}: ${problem}`);
    expect(error.cause).toBeInstanceOf(ConfigError);
  });

  it('names the variable of a section that is valid JSON but not an object', () => {
    const error = thrown(ConfigError, () => serviceConfigFromEnv({ QUOTAS, RETRY: '[]' }));

    expect(error.field).toBe('RETRY');
    expect(error.message).toMatch(/^RETRY: must be an object/);
  });

  it('names the variable of a cross-field rule inside one section', () => {
    const error = thrown(ConfigError, () =>
      serviceConfigFromEnv({ QUOTAS, ORCHESTRATOR: '{"visibilityTimeoutMs":30000,"workerTimeoutMs":30000}' }),
    );

    expect(error.field).toBe('ORCHESTRATOR.visibilityTimeoutMs');
    expect(error.message).toMatch(/^ORCHESTRATOR\.visibilityTimeoutMs: must exceed .*workerTimeoutMs \(30000\)/);
  });
});

describe('requiredEnv', () => {
  it('returns the value of a set variable', () => {
    expect(requiredEnv({ TABLE_NAME: 'qo-dev-state' }, 'TABLE_NAME')).toBe('qo-dev-state');
  });

  it.each([
    ['absent', {}],
    ['empty', { TABLE_NAME: '' }],
  ])('refuses a variable that is %s, naming it', (_, env: Env) => {
    const error = thrown(ConfigError, () => requiredEnv(env, 'TABLE_NAME'));

    expect(error.field).toBe('TABLE_NAME');
    expect(error.message).toMatch(/^TABLE_NAME: must be set/);
  });
});

describe('queueUrlsFromEnv', () => {
  it('maps each queue to its URL variable', () => {
    const urls = queueUrlsFromEnv(QUEUE_ENV);

    expect(urls).toEqual({
      main: QUEUE_ENV.MAIN_QUEUE_URL,
      fifo: QUEUE_ENV.FIFO_QUEUE_URL,
      requeue: QUEUE_ENV.REQUEUE_QUEUE_URL,
      bulk: QUEUE_ENV.BULK_QUEUE_URL,
      'main-dlq': QUEUE_ENV.MAIN_DLQ_URL,
      'fifo-dlq': QUEUE_ENV.FIFO_DLQ_URL,
      'requeue-dlq': QUEUE_ENV.REQUEUE_DLQ_URL,
      'bulk-dlq': QUEUE_ENV.BULK_DLQ_URL,
    });
    expect(Object.isFrozen(urls)).toBe(true);
  });

  it.each(Object.keys(QUEUE_ENV))('refuses an environment without %s, naming it', (name) => {
    const error = thrown(ConfigError, () => queueUrlsFromEnv({ ...QUEUE_ENV, [name]: undefined }));

    expect(error.field).toBe(name);
  });

  it('names the first missing variable when several are missing', () => {
    const error = thrown(ConfigError, () =>
      queueUrlsFromEnv({ ...QUEUE_ENV, FIFO_QUEUE_URL: '', REQUEUE_DLQ_URL: undefined }),
    );

    expect(error.field).toBe('FIFO_QUEUE_URL');
  });
});

describe('workerSettingsFromEnv', () => {
  /** The worker's URLs, and a configuration whose health checks outlast any API timeout below the 30 s worker timeout. */
  const URL_ENV: Env = { API_URL: 'https://api.example.test/jobs', HEALTH_URL: 'https://api.example.test/health' };
  const config = parseServiceConfig({ quotas: JSON.parse(QUOTAS), circuit: { healthCheckTimeoutSeconds: 30 } });
  const settings = (env: Env) => workerSettingsFromEnv({ ...URL_ENV, ...env }, config);

  describe('API_TIMEOUT_MS', () => {
    it('is the default when the variable is absent or empty', () => {
      expect(settings({}).apiTimeoutMs).toBe(10_000);
      expect(settings({ API_TIMEOUT_MS: '' }).apiTimeoutMs).toBe(10_000);
    });

    it('accepts whole numbers at both ends of the range', () => {
      expect(settings({ API_TIMEOUT_MS: '1' }).apiTimeoutMs).toBe(1);
      expect(settings({ API_TIMEOUT_MS: '29999' }).apiTimeoutMs).toBe(29_999);
    });

    it.each(['0', '30000', '1.5', 'abc', '-5', 'Infinity'])('refuses %p, naming the variable and the range', (text) => {
      const error = thrown(ConfigError, () => settings({ API_TIMEOUT_MS: text }));

      expect(error.field).toBe('API_TIMEOUT_MS');
      expect(error.message).toBe(
        `API_TIMEOUT_MS: must be a whole number of milliseconds from 1 to 29999; got '${text}'`,
      );
    });
  });

  describe('the request settings', () => {
    it('reads the method, headers and key header as packaging wrote them', () => {
      const read = settings({
        API_METHOD: 'PUT',
        REQUEST_HEADERS: '{"anthropic-version":"2023-06-01"}',
        API_KEY_HEADER: 'x-api-key',
        HEALTH_CHECK_SENDS_KEY: 'false',
      });

      expect(read).toMatchObject({
        apiMethod: 'PUT',
        requestHeaders: { 'anthropic-version': '2023-06-01' },
        apiKeyHeader: 'x-api-key',
        apiKeyScheme: undefined,
        healthCheckSendsKey: false,
      });
      expect(settings({ API_KEY_SCHEME: 'none' }).apiKeyScheme).toBeUndefined();
      expect(settings({ HEALTH_CHECK_SENDS_KEY: 'true' }).healthCheckSendsKey).toBe(true);
    });

    it('names the variable, and the header inside REQUEST_HEADERS, when one is wrong', () => {
      expect(thrown(ConfigError, () => settings({ HEALTH_CHECK_SENDS_KEY: 'yes' })).message).toBe(
        "HEALTH_CHECK_SENDS_KEY: must be true or false; got 'yes'",
      );
      expect(thrown(ConfigError, () => settings({ REQUEST_HEADERS: '{"bad header":"x"}' })).field).toBe(
        'REQUEST_HEADERS.bad header',
      );
      expect(thrown(ConfigError, () => settings({ REQUEST_HEADERS: '{x' })).message).toMatch(
        /^REQUEST_HEADERS: must be JSON/,
      );
      expect(thrown(ConfigError, () => settings({ API_METHOD: 'GET' })).message).toBe(
        "API_METHOD: must be one of POST, PUT, PATCH; got 'GET'",
      );
    });
  });

  describe('RESULT_DESTINATION', () => {
    it('is none when RESULT_DESTINATION is unset or empty', () => {
      expect(settings({}).results).toBeUndefined();
      expect(settings({ RESULT_DESTINATION: '' }).results).toBeUndefined();
    });

    it('reads the destination as the packaging wrote it, with its defaults', () => {
      expect(settings({ RESULT_DESTINATION: '{"type":"eventbridge","busName":"jobs"}' }).results).toEqual({
        type: 'eventbridge',
        busName: 'jobs',
        source: 'quota-orchestrator',
        detailType: 'Job Result',
      });
    });

    it('names the variable and the field inside it when it is wrong', () => {
      expect(
        thrown(ConfigError, () => settings({ RESULT_DESTINATION: '{"type":"sqs","queueArn":"results"}' })).field,
      ).toBe('RESULT_DESTINATION.queueArn');
      expect(thrown(ConfigError, () => settings({ RESULT_DESTINATION: '{type:sqs}' })).message).toMatch(
        /^RESULT_DESTINATION: must be JSON/,
      );
    });
  });
});

describe('deploymentFromEnv', () => {
  it('names the deployment from SERVICE_NAME and STAGE, as serverless.yml sets them', () => {
    expect(deploymentFromEnv({ SERVICE_NAME: 'quota-orchestrator', STAGE: 'prod' })).toEqual({
      service: 'quota-orchestrator',
      stage: 'prod',
    });
  });

  it('is none outside a deployment: either variable unset or empty', () => {
    expect(deploymentFromEnv({})).toBeUndefined();
    expect(deploymentFromEnv({ SERVICE_NAME: 'quota-orchestrator' })).toBeUndefined();
    expect(deploymentFromEnv({ SERVICE_NAME: 'quota-orchestrator', STAGE: '' })).toBeUndefined();
  });
});
