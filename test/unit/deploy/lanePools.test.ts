import { serviceConfigFromEnv, type Env } from '../../../lib/configFromEnv';
import { resolveQuotaSettings, type ServiceView } from '../../../lib/deploy/quotaSettings';
import { ConfigError } from '../../../lib/errors';
import { laneEnvs, readLane } from '../../../lib/lanes/laneEnv';
import { queueNames, service } from '../../helpers/serviceView';
import { thrown } from '../../helpers/thrown';

const gpt = {
  quotas: [{ limit: 500, per: 'minute' }],
  units: { tokens: { default: 2000 } },
  apiUrl: 'https://api.openai.com/v1/chat/completions',
  healthUrl: 'https://api.openai.com/v1/models',
};
const org = { quotas: [{ limit: 100000, per: 'minute', unit: 'tokens' }] };

function lanesService(settings: Record<string, unknown>): ServiceView {
  const base = service();
  return { ...base, custom: { ...base.custom, quotaOrchestrator: settings, names: queueNames('qo-dev-') } };
}

describe('pools in the lanes form', () => {
  it('gives each lane the pools it names, with their tiers, and the functions read them back', () => {
    const resolved = resolveQuotaSettings(
      lanesService({
        pools: { org: { ...org, rateLimitScope: 'pool' } },
        lanes: {
          'gpt-4o': { ...gpt, pools: [{ name: 'org', weight: 3 }] },
          mini: { ...gpt, pools: ['org'] },
          plain: { ...gpt, units: undefined },
        },
      }),
    );
    expect(
      resolved.lanes.map(({ config }) => config.pools?.map((p) => [p.name, p.quotas.map((t) => t.limit)])),
    ).toEqual([[['org', [100000]]], [['org', [100000]]], undefined]);
    expect(resolved.lanes.map(({ config }) => config.pools?.[0]?.weight)).toEqual([3, undefined, undefined]);
    expect(resolved.lanes.map(({ config }) => config.pools?.[0]?.rateLimitScope)).toEqual(['pool', 'pool', undefined]);
    const env = Object.fromEntries(
      Object.entries({ ...resolved.provider, QUEUE_URL_PREFIX: 'https://sqs/1/qo-dev-' }).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    ) as Env;
    const read = laneEnvs(env).map((lane) => readLane(lane, serviceConfigFromEnv));
    expect(read).toEqual(resolved.lanes.map(({ config }) => config));
  });

  it.each([
    ['pools without lanes', { ...gpt, pools: { org } }, 'custom.quotaOrchestrator.pools'],
    [
      'a lane naming no pool there is',
      { pools: { org }, lanes: { a: { ...gpt, pools: ['org', 'other'] } } },
      'custom.quotaOrchestrator.lanes.a.pools[1]',
    ],
    [
      'a pool no lane draws from',
      { pools: { org, spare: org }, lanes: { a: { ...gpt, pools: ['org'] } } },
      'custom.quotaOrchestrator.pools.spare',
    ],
    [
      "a lane's weight in a pool out of range",
      { pools: { org }, lanes: { a: { ...gpt, pools: [{ name: 'org', weight: 0 }] } } },
      'custom.quotaOrchestrator.lanes.a.pools[0].weight',
    ],
    [
      'an unknown key beside a pool name',
      { pools: { org }, lanes: { a: { ...gpt, pools: [{ name: 'org', share: 2 }] } } },
      'custom.quotaOrchestrator.lanes.a.pools[0]',
    ],
    [
      'a rateLimitScope that is neither lane nor pool',
      { pools: { org: { ...org, rateLimitScope: 'account' } }, lanes: { a: { ...gpt, pools: ['org'] } } },
      'custom.quotaOrchestrator.pools.org.rateLimitScope',
    ],
    [
      'a bad tier in a pool',
      { pools: { org: { quotas: [{ limit: 1, per: 'week' }] } }, lanes: { a: { ...gpt, pools: ['org'] } } },
      'custom.quotaOrchestrator.pools.org.quotas[0].per',
    ],
  ])('refuses %s, naming the field', (_, settings, field) => {
    expect(thrown(ConfigError, () => resolveQuotaSettings(lanesService(settings))).field).toMatch(
      new RegExp(`^${field.replace(/[.[\]]/g, '\\$&')}`),
    );
  });
});
