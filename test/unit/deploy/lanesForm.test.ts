import { serviceConfigFromEnv, workerSettingsFromEnv, type Env } from '../../../lib/configFromEnv';
import { laneInputs, MAX_LANES } from '../../../lib/deploy/laneSettings';
import { LAMBDA_ENVIRONMENT_BYTES } from '../../../lib/deploy/lanesEnvironment';
import { laneResources } from '../../../lib/deploy/laneResources';
import { resolveQuotaSettings, type ServiceView } from '../../../lib/deploy/quotaSettings';
import { ConfigError } from '../../../lib/errors';
import { laneEnvs, readLane } from '../../../lib/lanes/laneEnv';
import { queueNames, service } from '../../helpers/serviceView';
import { thrown } from '../../helpers/thrown';

const NAMES = queueNames('qo-dev-');

const openai = {
  quotas: [{ limit: 500, per: 'minute' }],
  apiUrl: 'https://api.openai.com/v1/chat/completions',
  healthUrl: 'https://api.openai.com/v1/models',
  apiKeyParameter: '/qo/dev/openai',
};
const anthropic = {
  quotas: [{ limit: 50, per: 'minute' }],
  maxInFlight: 8,
  apiUrl: 'https://api.anthropic.com/v1/messages',
  healthUrl: 'https://api.anthropic.com/v1/models',
  apiKeyHeader: 'x-api-key',
  requestHeaders: { 'anthropic-version': '2023-06-01' },
  apiKeyParameter: '/qo/dev/anthropic',
  results: { type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:answers' },
};

/** The service of `service()` with `settings` as its whole `custom.quotaOrchestrator`. */
function lanesService(settings: Record<string, unknown>, names: unknown = NAMES): ServiceView {
  const base = service();
  return {
    ...base,
    provider: { ...base.provider, region: 'us-east-1' },
    custom: { ...base.custom, quotaOrchestrator: settings, names },
  };
}

/** The functions' environment the resolved settings give, as CloudFormation would resolve it. */
function deployedEnv(provider: Readonly<Record<string, unknown>>): Env {
  const resolved = { ...provider, QUEUE_URL_PREFIX: 'https://sqs.us-east-1.amazonaws.com/123456789012/qo-dev-' };
  return Object.fromEntries(
    Object.entries(resolved).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

describe('the lanes form of custom.quotaOrchestrator', () => {
  it('checks each lane as a one-lane deployment, and the functions read back exactly what packaging checked', () => {
    const resolved = resolveQuotaSettings(
      lanesService({ timeZone: 'Europe/Paris', lanes: { openai, 'claude-sonnet': anthropic } }),
    );
    expect(resolved.inLanes).toBe(true);
    expect(resolved.lanes.map(({ config }) => [config.lane, config.timeZone])).toEqual([
      ['openai', 'Europe/Paris'],
      ['claude-sonnet', 'Europe/Paris'],
    ]);
    expect(resolved.worker).toEqual({});
    expect(Object.keys(resolved.provider)).toEqual(['TIME_ZONE', 'ORCHESTRATOR', 'LANES', 'QUEUE_URL_PREFIX']);

    const lanes = laneEnvs(deployedEnv(resolved.provider));
    expect(lanes.map(({ lane }) => lane)).toEqual(['openai', 'claude-sonnet']);
    lanes.forEach((lane, i) => {
      const config = readLane(lane, serviceConfigFromEnv);
      expect(config).toEqual(resolved.lanes[i]!.config);
      expect(readLane(lane, (env) => workerSettingsFromEnv(env, config))).toEqual(resolved.lanes[i]!.worker);
    });
  });

  it("grants each lane's result destination under a statement of its own", () => {
    const resolved = resolveQuotaSettings(
      lanesService({ lanes: { openai: { ...openai, results: anthropic.results }, claude: anthropic } }),
    );
    expect(resolved.workerStatements.map(({ Sid }) => Sid)).toEqual([
      'ResultDestinationOpenai',
      'ResultDestinationClaude',
    ]);
  });

  it('names a refusal by where the setting is written: in its lane, or at the top for a shared one', () => {
    const badTier = { ...anthropic, quotas: [{ limit: 50, per: 'fortnight' }] };
    expect(
      thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: { openai, claude: badTier } }))).field,
    ).toBe('custom.quotaOrchestrator.lanes.claude.quotas[0].per');
    const badKey = { ...anthropic, apiKeyHeader: 'idempotency-key' };
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: { claude: badKey } }))).field).toBe(
      'custom.quotaOrchestrator.lanes.claude.apiKeyHeader',
    );
    const shared = { orchestrator: { flushIntervalMs: 50 }, lanes: { openai } };
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService(shared))).field).toBe(
      'custom.quotaOrchestrator.orchestrator.flushIntervalMs',
    );
    const retries = { lanes: { openai: { ...openai, retry: { maxAttempts: 10 } } } };
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService(retries))).field).toBe(
      'custom.quotaOrchestrator.lanes.openai.retry.maxAttempts',
    );
  });

  it.each([
    ["a lane's setting beside lanes", { quotas: openai.quotas, lanes: { openai } }, 'custom.quotaOrchestrator.quotas'],
    ['the lane key beside lanes', { lane: 'x', lanes: { openai } }, 'custom.quotaOrchestrator.lane'],
    ['no lane', { lanes: {} }, 'custom.quotaOrchestrator.lanes'],
    ['lanes that are a list', { lanes: [openai] }, 'custom.quotaOrchestrator.lanes'],
    ['a lane with a bad name', { lanes: { 'gpt 4o': openai } }, 'custom.quotaOrchestrator.lanes.gpt 4o'],
    ['a lane that is no object', { lanes: { openai: 'x' } }, 'custom.quotaOrchestrator.lanes.openai'],
    [
      'a shared setting in a lane',
      { lanes: { openai: { ...openai, timeZone: 'UTC' } } },
      'custom.quotaOrchestrator.lanes.openai.timeZone',
    ],
    [
      'an unknown key in a lane',
      { lanes: { openai: { ...openai, pools: [] } } },
      'custom.quotaOrchestrator.lanes.openai.pools',
    ],
    [
      'two lanes whose resources would share names',
      { lanes: { 'a-b': openai, a_b: openai } },
      'custom.quotaOrchestrator.lanes.a_b',
    ],
  ])('refuses %s', (_, settings, field) => {
    const resolve = () => {
      const resolved = resolveQuotaSettings(lanesService(settings));
      // The resources' names are checked where they are made, as the plugin makes them.
      laneResources(
        { Resources: {}, Outputs: {} },
        resolved.lanes.map(({ config }) => ({ lane: config.lane })),
        'qo-dev-',
        'custom.quotaOrchestrator.lanes',
      );
    };
    expect(thrown(ConfigError, resolve).field).toBe(field);
  });

  it(`refuses more than ${MAX_LANES} lanes, and lanes whose settings outgrow Lambda's ${LAMBDA_ENVIRONMENT_BYTES} bytes of environment`, () => {
    const many = Object.fromEntries(Array.from({ length: MAX_LANES + 1 }, (_, i) => [`l${i}`, openai]));
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: many }))).field).toBe(
      'custom.quotaOrchestrator.lanes',
    );
    const wordy = { ...anthropic, requestHeaders: { 'x-note': 'n'.repeat(500) } };
    const big = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`l${i}`, wordy]));
    const error = thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: big })));
    expect(error.field).toBe('custom.quotaOrchestrator.lanes');
    expect(error.message).toMatch(
      /would take about \d+ bytes of the orchestrator function's environment, over Lambda's 4096/,
    );
  });

  it("refuses a lane whose queue names would pass SQS's 80 characters, and queue names that share no prefix", () => {
    const long = 'l'.repeat(64);
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: { [long]: openai } }))).field).toBe(
      `custom.quotaOrchestrator.lanes.${long}`,
    );
    const renamed = { ...NAMES, fifoQueue: 'jobs.fifo' };
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService({ lanes: { openai } }, renamed))).field).toBe(
      'custom.names.fifoQueue',
    );
  });
});

describe('laneInputs', () => {
  it('reads the one-lane form as one lane, its settings at the top', () => {
    const settings = { lane: 'openai', ...openai };
    const { inLanes, lanes } = laneInputs(settings, 'custom.quotaOrchestrator');
    expect(inLanes).toBe(false);
    expect(lanes).toHaveLength(1);
    expect(lanes[0]).toMatchObject({ lane: 'openai', settings, path: 'custom.quotaOrchestrator' });
    expect(lanes[0]!.fieldOf('quotas[0].limit')).toBe('custom.quotaOrchestrator.quotas[0].limit');
  });

  it("adds the shared settings to each lane's own, and names each field where it is written", () => {
    const orchestrator = { leaseTtlMs: 60_000 };
    const { lanes } = laneInputs({ orchestrator, lanes: { openai } }, 'custom.quotaOrchestrator');
    expect(lanes[0]!.settings).toEqual({ lane: 'openai', orchestrator, ...openai });
    expect(lanes[0]!.fieldOf('orchestrator.leaseTtlMs')).toBe('custom.quotaOrchestrator.orchestrator.leaseTtlMs');
    expect(lanes[0]!.fieldOf('circuit.openSeconds')).toBe('custom.quotaOrchestrator.lanes.openai.circuit.openSeconds');
  });
});
