/**
 * A scenario of several lanes (`lanes` in the JSON of `--scenario FILE`): each lane a scenario of its own (its quotas
 * and other service settings, its jobs, its API and its requests), the run's settings (`seed`, `timeZone`,
 * `orchestrator`, start delays, `maxSeconds`, …) shared at the top.
 */
import { describeValue } from '../../lib/domain/describeValue';
import { ConfigError } from '../../lib/errors';
import { LANE_NAME, MAX_LANES } from '../../lib/deploy/laneSettings';
import { isRecord } from '../../lib/settingChecks';
import type { PoolConfig } from '../../lib/config';
import { parseTiers } from '../../lib/domain/quota/tiers';
import { CONFIG_KEYS, parseScenario, type Scenario } from './scenario';
import { SHARED_SETTING_KEYS } from '../../lib/lanes/laneEnv';

/** The keys each lane of a scenario sets for itself: its service settings but the shared ones, its jobs, API and requests. */
export const LANE_SCENARIO_KEYS: readonly string[] = [
  ...CONFIG_KEYS.filter((key) => !(SHARED_SETTING_KEYS as readonly string[]).includes(key)),
  'pools',
  'jobs',
  'api',
  'request',
];

/** A validated scenario of several lanes. */
export interface LanesScenario {
  readonly name: string;
  /** Each lane's scenario, in the order written: its `config.lane` is its name, the run's settings the same in all. */
  readonly lanes: readonly Scenario[];
  /**
   * Each lane's settings as serverless.yml writes them, by lane: its service settings as written (its `pools` by
   * name), and its `request` settings beside them.
   */
  readonly written: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** The pools the lanes share (see `ServiceConfig.pools`), in the order written. */
  readonly pools: readonly PoolConfig[];
  /** The pools as serverless.yml writes them: `{ <pool>: { quotas } }`. */
  readonly writtenPools?: Readonly<Record<string, unknown>>;
}

/** Whether `input` is a scenario of several lanes: an object with `lanes`. */
export function hasLanes(input: unknown): boolean {
  return isRecord(input) && input.lanes !== undefined;
}

/**
 * Validates a scenario of several lanes: `lanes` an object of 1 to 10 lanes named as serverless.yml names them, each
 * of `LANE_SCENARIO_KEYS`, checked with the rest of the scenario as one lane's scenario (see `parseScenario`), the
 * lane's seed the scenario's plus its place (so that two lanes draw different jobs).
 * @throws ConfigError naming the field (`lanes.<lane>.quotas[0].per`, or a shared one at the top).
 */
export function parseLanesScenario(input: unknown): LanesScenario {
  if (!isRecord(input) || !isRecord(input.lanes) || Object.keys(input.lanes).length === 0)
    throw new ConfigError('lanes', `must be an object of 1 to ${MAX_LANES} lanes; got ${describeValue(input)}`);
  const { lanes, pools: writtenPools, ...shared } = input;
  const pools = scenarioPools(writtenPools);
  const names = Object.keys(lanes);
  if (names.length > MAX_LANES)
    throw new ConfigError('lanes', `must hold at most ${MAX_LANES} lanes; got ${names.length}`);
  for (const key of Object.keys(shared))
    if (LANE_SCENARIO_KEYS.includes(key))
      throw new ConfigError(key, `is a lane's own setting: set it in each lane (lanes.<lane>.${key})`);
  const name = typeof shared.name === 'string' ? shared.name : 'lanes';
  const seed = typeof shared.seed === 'number' ? shared.seed : 1;
  const written: Record<string, Record<string, unknown>> = {};
  const parsed = names.map((lane, i) => {
    const own = lanes[lane];
    if (!LANE_NAME.test(lane))
      throw new ConfigError(`lanes.${lane}`, `a lane's name must be 1 to 64 letters, digits, '-' or '_'`);
    if (!isRecord(own)) throw new ConfigError(`lanes.${lane}`, `must be an object; got ${describeValue(own)}`);
    for (const key of Object.keys(own))
      if (!LANE_SCENARIO_KEYS.includes(key))
        throw new ConfigError(`lanes.${lane}.${key}`, `unknown key; a lane's are ${LANE_SCENARIO_KEYS.join(', ')}`);
    const settings = Object.fromEntries(
      Object.entries(own).filter(([key]) => !['jobs', 'api', 'request'].includes(key)),
    );
    written[lane] = { ...settings, ...(isRecord(own.request) ? own.request : {}) };
    const { pools: poolNames, ...scenarioOwn } = own;
    const drawn = lanePools(poolNames, pools, `lanes.${lane}.pools`);
    try {
      const scenario = parseScenario({ ...shared, ...scenarioOwn, name: `${name}: ${lane}`, seed: seed + i });
      return { ...scenario, config: { ...scenario.config, lane, ...(drawn.length === 0 ? {} : { pools: drawn }) } };
    } catch (error) {
      if (!(error instanceof ConfigError) || !LANE_SCENARIO_KEYS.some((key) => error.field.startsWith(key)))
        throw error;
      throw new ConfigError(`lanes.${lane}.${error.field}`, error.problem, { cause: error });
    }
  });
  const unused = pools.find((pool) => !parsed.some((lane) => lane.config.pools?.some((p) => p.name === pool.name)));
  if (unused !== undefined)
    throw new ConfigError(`pools.${unused.name}`, `no lane draws from it: name it in a lane's pools`);
  return { name, lanes: parsed, written, pools, ...(isRecord(writtenPools) ? { writtenPools } : {}) };
}

/**
 * The scenario's `pools`, `{ <pool>: { quotas } }` as serverless.yml writes them.
 * @throws ConfigError naming the pool, or the field of its tiers.
 */
function scenarioPools(input: unknown): readonly PoolConfig[] {
  if (input === undefined) return [];
  if (!isRecord(input))
    throw new ConfigError('pools', `must be an object of pools, each { quotas }; got ${describeValue(input)}`);
  return Object.entries(input).map(([pool, settings]) => {
    if (!LANE_NAME.test(pool))
      throw new ConfigError(`pools.${pool}`, `a pool's name must be 1 to 64 letters, digits, '-' or '_'`);
    if (!isRecord(settings))
      throw new ConfigError(`pools.${pool}`, `must be { quotas }; got ${describeValue(settings)}`);
    return { name: pool, quotas: parseTiers(settings.quotas, { field: `pools.${pool}.quotas` }) };
  });
}

/**
 * The pools a lane names (`input`, at `field`), of `pools`: each a name, or `{ name, weight }` as serverless.yml takes
 * it (the weight is checked with the lane's settings when it is packaged).
 * @throws ConfigError naming the entry that names no pool.
 */
function lanePools(input: unknown, pools: readonly PoolConfig[], field: string): readonly PoolConfig[] {
  if (input === undefined) return [];
  if (!Array.isArray(input)) throw new ConfigError(field, `must be a list of pool names; got ${describeValue(input)}`);
  return input.map((entry: unknown, i) => {
    const { name, weight } = isRecord(entry) ? entry : { name: entry, weight: undefined };
    const pool = pools.find((p) => p.name === name);
    if (pool === undefined)
      throw new ConfigError(
        `${field}[${i}]`,
        `names no pool of pools (${pools.map((p) => p.name).join(', ') || 'none'}); got ${describeValue(entry)}`,
      );
    return typeof weight === 'number' ? { ...pool, weight } : pool;
  });
}
