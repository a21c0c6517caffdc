import { queueUrlsFromEnv, serviceConfigFromEnv, workerSettingsFromEnv, type Env } from '../../../lib/configFromEnv';
import { ConfigError } from '../../../lib/errors';
import { laneEnvs, readLane } from '../../../lib/lanes/laneEnv';
import { laneQueueName } from '../../../lib/lanes/laneQueueNames';
import { thrown } from '../../helpers/thrown';

const PREFIX = 'https://sqs.us-east-1.amazonaws.com/123456789012/qo-dev-';

/** A deployment of two lanes, `default` and `gpt-4o`, with the shared settings beside them. */
function lanesEnv(lanes: unknown = undefined): Env {
  return {
    TABLE_NAME: 'qo-dev',
    TIME_ZONE: 'Europe/Paris',
    ORCHESTRATOR: '{"workerTimeoutMs":30000}',
    QUEUE_URL_PREFIX: PREFIX,
    LANES: JSON.stringify(
      lanes ?? {
        default: {
          QUOTAS: [{ limit: 10, per: 'second' }],
          API_URL: 'https://a.test/jobs',
          HEALTH_URL: 'https://a.test/h',
        },
        'gpt-4o': {
          QUOTAS: '[{"limit":5,"per":"second"}]',
          MAX_IN_FLIGHT: 4,
          API_URL: 'https://b.test/jobs',
          HEALTH_URL: 'https://b.test/h',
          API_KEY_HEADER: 'x-api-key',
        },
      },
    ),
  };
}

describe('laneEnvs', () => {
  it('reads a deployment without LANES as its one lane, its environment as it is', () => {
    const env: Env = { LANE: 'openai', QUOTAS: '[{"limit":1,"per":"second"}]' };
    expect(laneEnvs(env)).toEqual([{ lane: 'openai', env, inLanes: false }]);
    expect(laneEnvs({})).toEqual([{ lane: 'default', env: {}, inLanes: false }]);
  });

  it("gives each lane of LANES its own settings, the shared ones, and its queues' URLs by the naming rule", () => {
    const [first, second] = laneEnvs(lanesEnv());
    expect([first?.lane, second?.lane]).toEqual(['default', 'gpt-4o']);
    const config = serviceConfigFromEnv(second!.env);
    expect(config).toMatchObject({ lane: 'gpt-4o', timeZone: 'Europe/Paris', maxInFlight: 4 });
    expect(config.quotas).toEqual([expect.objectContaining({ limit: 5, per: 'second' })]);
    expect(serviceConfigFromEnv(first!.env).quotas).toEqual([expect.objectContaining({ limit: 10, per: 'second' })]);
    expect(workerSettingsFromEnv(second!.env, config)).toMatchObject({
      apiUrl: 'https://b.test/jobs',
      apiKeyHeader: 'x-api-key',
    });
    expect(queueUrlsFromEnv(first!.env)).toMatchObject({
      main: `${PREFIX}main`,
      fifo: `${PREFIX}fifo.fifo`,
      'requeue-dlq': `${PREFIX}requeue-dlq`,
    });
    expect(queueUrlsFromEnv(second!.env)).toEqual({
      main: `${PREFIX}gpt-4o-main`,
      fifo: `${PREFIX}gpt-4o-fifo.fifo`,
      requeue: `${PREFIX}gpt-4o-requeue`,
      bulk: `${PREFIX}gpt-4o-bulk`,
      'main-dlq': `${PREFIX}gpt-4o-main-dlq`,
      'fifo-dlq': `${PREFIX}gpt-4o-fifo-dlq.fifo`,
      'requeue-dlq': `${PREFIX}gpt-4o-requeue-dlq`,
      'bulk-dlq': `${PREFIX}gpt-4o-bulk-dlq`,
    });
    // One lane's settings never leak into another's environment, nor does a lane's setting set for the deployment.
    expect(first!.env.MAX_IN_FLIGHT).toBeUndefined();
    expect(second!.env.LANES).toBeUndefined();
    const [stray] = laneEnvs({ ...lanesEnv(), API_KEY_HEADER: 'x-stray', TABLE_NAME: 'kept' });
    expect(stray!.env.TABLE_NAME).toBe('kept');
    expect('API_KEY_HEADER' in stray!.env).toBe(false);
  });

  it.each([
    ['not JSON', '{', 'LANES'],
    ['no lane', '{}', 'LANES'],
    ['a lane that is no object', '{"a":1}', 'LANES.a'],
    ["a variable that is not a lane's", '{"a":{"TABLE_NAME":"x"}}', 'LANES.a.TABLE_NAME'],
    ['a shared variable', '{"a":{"ORCHESTRATOR":{}}}', 'LANES.a.ORCHESTRATOR'],
  ])('refuses LANES holding %s, naming the field', (_, text, field) => {
    expect(thrown(ConfigError, () => laneEnvs({ LANES: text, QUEUE_URL_PREFIX: PREFIX })).field).toBe(field);
  });

  it('refuses LANES without QUEUE_URL_PREFIX', () => {
    const env = { ...lanesEnv(), QUEUE_URL_PREFIX: undefined };
    expect(thrown(ConfigError, () => laneEnvs(env)).field).toBe('QUEUE_URL_PREFIX');
  });
});

describe('readLane', () => {
  it("names a refusal of a lane's setting by its place in LANES, and a shared one with the lane it was read for", () => {
    const [lane] = laneEnvs(lanesEnv({ a: { QUOTAS: [{ limit: 1, per: 'fortnight' }] } }));
    const own = thrown(ConfigError, () => readLane(lane!, serviceConfigFromEnv));
    expect(own.field).toBe('LANES.a.QUOTAS[0].per');

    const shared = laneEnvs({
      ...lanesEnv({ a: { QUOTAS: [{ limit: 1, per: 'second' }] } }),
      TIME_ZONE: 'Mars/Olympus',
    });
    const error = thrown(ConfigError, () => readLane(shared[0]!, serviceConfigFromEnv));
    expect(error.field).toBe('TIME_ZONE');
    expect(error.message).toContain("(lane 'a')");
  });

  it("leaves a one-lane deployment's refusals as they are", () => {
    const [lane] = laneEnvs({ QUOTAS: '[{"limit":1,"per":"fortnight"}]' });
    expect(thrown(ConfigError, () => readLane(lane!, serviceConfigFromEnv)).field).toBe('QUOTAS[0].per');
  });
});

describe('laneQueueName', () => {
  it("names the default lane's queues as a one-lane deployment does, and any other lane's with the lane", () => {
    expect(laneQueueName('qo-dev-', 'default', 'fifo-dlq')).toBe('qo-dev-fifo-dlq.fifo');
    expect(laneQueueName('qo-dev-', 'claude', 'main')).toBe('qo-dev-claude-main');
  });
});
