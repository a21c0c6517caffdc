import { ConfigError } from '../../../lib/errors';
import { hasLanes, parseLanesScenario } from '../../../tools/simulation/lanesScenario';
import lanesJson from '../../../tools/simulation/scenarios/lanes.json';
import { thrown } from '../../helpers/thrown';

describe('parseLanesScenario', () => {
  it("reads each lane as a scenario of its own, with the run's settings shared and a seed of its own", () => {
    const scenario = parseLanesScenario({
      name: 'two',
      seed: 4,
      maxSeconds: 120,
      lanes: {
        a: { quotas: [{ limit: 5, per: 'second' }], jobs: { count: 10 }, request: { apiKeyHeader: 'x-api-key' } },
        b: { quotas: [{ limit: 7, per: 'minute' }] },
      },
    });
    expect(scenario.lanes.map((l) => [l.config.lane, l.seed, l.maxSeconds, l.jobs.count])).toEqual([
      ['a', 4, 120, 10],
      ['b', 5, 120, 300],
    ]);
    expect(scenario.lanes[0]!.request.apiKeyHeader).toBe('x-api-key');
    // What packaging takes of each lane: its settings, its requests beside them; not its jobs or API.
    expect(scenario.written).toEqual({
      a: { quotas: [{ limit: 5, per: 'second' }], apiKeyHeader: 'x-api-key' },
      b: { quotas: [{ limit: 7, per: 'minute' }] },
    });
  });

  it.each([
    ['a lane setting at the top', { quotas: [], lanes: { a: {} } }, 'quotas'],
    ['no lane', { lanes: {} }, 'lanes'],
    ['a lane with a bad name', { lanes: { 'a b': {} } }, 'lanes.a b'],
    ['a lane that is no object', { lanes: { a: 1 } }, 'lanes.a'],
    ['an unknown key in a lane', { lanes: { a: { seed: 1 } } }, 'lanes.a.seed'],
    ['a bad tier in a lane', { lanes: { a: { quotas: [{ limit: 1, per: 'week' }] } } }, 'lanes.a.quotas[0].per'],
  ])('refuses %s, naming the field', (_, input, field) => {
    expect(thrown(ConfigError, () => parseLanesScenario(input)).field).toBe(field);
  });

  it('reads the shipped lanes scenario: three lanes, two of them sharing a pool, one of those down for a while', () => {
    expect(hasLanes(lanesJson)).toBe(true);
    const scenario = parseLanesScenario(lanesJson);
    expect(scenario.lanes.map((l) => l.config.lane)).toEqual(['gpt-4o-mini', 'gpt-4o', 'claude-sonnet']);
    expect(scenario.lanes.filter((l) => l.api.outages.length > 0).map((l) => l.config.lane)).toEqual(['gpt-4o']);
    expect(scenario.pools.map((p) => p.name)).toEqual(['openai-org']);
    expect(scenario.lanes.map((l) => (l.config.pools ?? []).map((p) => p.name))).toEqual([
      ['openai-org'],
      ['openai-org'],
      [],
    ]);
    expect(scenario.written['gpt-4o']?.pools).toEqual(['openai-org']);
  });

  it('refuses a lane that names no pool of the scenario, and a pool no lane draws from', () => {
    const lanes = { a: { quotas: [{ limit: 5, per: 'second' }], pools: ['org'] } };
    expect(thrown(ConfigError, () => parseLanesScenario({ lanes }))).toMatchObject({ field: 'lanes.a.pools[0]' });
    const pools = { org: { quotas: [{ limit: 5, per: 'second' }] }, spare: { quotas: [{ limit: 1, per: 'second' }] } };
    expect(thrown(ConfigError, () => parseLanesScenario({ pools, lanes }))).toMatchObject({ field: 'pools.spare' });
    expect(thrown(ConfigError, () => parseLanesScenario({ pools: { org: { quotas: [] } }, lanes })).field).toBe(
      'pools.org.quotas',
    );
  });

  it("checks a lane's weight in a pool, and carries the pool's rateLimitScope, as packaging does", () => {
    const pools = { org: { quotas: [{ limit: 5, per: 'second' }], rateLimitScope: 'pool' } };
    const lane = (weight: number) => ({ quotas: [{ limit: 5, per: 'second' }], pools: [{ name: 'org', weight }] });
    expect(thrown(ConfigError, () => parseLanesScenario({ pools, lanes: { a: lane(0) } })).field).toBe(
      'lanes.a.pools[0].weight',
    );
    const scenario = parseLanesScenario({ pools, lanes: { a: lane(3) } });
    expect(scenario.lanes[0]?.config.pools).toEqual([
      { name: 'org', quotas: scenario.pools[0]?.quotas, weight: 3, rateLimitScope: 'pool' },
    ]);
    expect(scenario.pools.map(({ name, rateLimitScope }) => ({ name, rateLimitScope }))).toEqual([
      { name: 'org', rateLimitScope: 'pool' },
    ]);
  });
});
