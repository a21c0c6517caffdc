/**
 * A scenario of several lanes (`lanes` in the JSON of `--scenario FILE`): each lane a scenario of its own (its quotas
 * and other service settings, its jobs, its API and its requests), the run's settings (`seed`, `timeZone`,
 * `orchestrator`, start delays, `maxSeconds`, …) shared at the top.
 */
import { describeValue } from '../../lib/domain/describeValue';
import { ConfigError } from '../../lib/errors';
import { laneInputs, MAX_LANES } from '../../lib/deploy/laneSettings';
import { isRecord } from '../../lib/settingChecks';
import type { PoolConfig } from '../../lib/config';
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
  const names = Object.keys(lanes);
  if (names.length > MAX_LANES)
    throw new ConfigError('lanes', `must hold at most ${MAX_LANES} lanes; got ${names.length}`);
  for (const key of Object.keys(shared))
    if (LANE_SCENARIO_KEYS.includes(key))
      throw new ConfigError(key, `is a lane's own setting: set it in each lane (lanes.<lane>.${key})`);
  const name = typeof shared.name === 'string' ? shared.name : 'lanes';
  const seed = typeof shared.seed === 'number' ? shared.seed : 1;
  const drawn = drawnPools(lanes, writtenPools);
  const written: Record<string, Record<string, unknown>> = {};
  const parsed = names.map((lane, i) => {
    const own = lanes[lane];
    if (!isRecord(own)) throw new ConfigError(`lanes.${lane}`, `must be an object; got ${describeValue(own)}`);
    for (const key of Object.keys(own))
      if (!LANE_SCENARIO_KEYS.includes(key))
        throw new ConfigError(`lanes.${lane}.${key}`, `unknown key; a lane's are ${LANE_SCENARIO_KEYS.join(', ')}`);
    const settings = Object.fromEntries(
      Object.entries(own).filter(([key]) => !['jobs', 'api', 'request'].includes(key)),
    );
    written[lane] = { ...settings, ...(isRecord(own.request) ? own.request : {}) };
    const scenarioOwn = Object.fromEntries(Object.entries(own).filter(([key]) => key !== 'pools'));
    try {
      const scenario = parseScenario(
        { ...shared, ...scenarioOwn, name: `${name}: ${lane}`, seed: seed + i },
        drawn.get(lane),
      );
      if (scenario.jobs.arrivals !== undefined)
        throw new ConfigError('jobs.arrivals', "is not supported with lanes: each lane's jobs are queued at the start");
      return { ...scenario, config: { ...scenario.config, lane } };
    } catch (error) {
      if (!(error instanceof ConfigError) || !LANE_SCENARIO_KEYS.some((key) => error.field.startsWith(key)))
        throw error;
      throw new ConfigError(`lanes.${lane}.${error.field}`, error.problem, { cause: error });
    }
  });
  const drawnFrom = parsed.flatMap((lane) => lane.config.pools ?? []);
  const pools = Object.keys(isRecord(writtenPools) ? writtenPools : {}).flatMap((pool) => {
    const found = drawnFrom.find((p) => p.name === pool);
    if (found === undefined) return [];
    const { name: poolName, quotas, rateLimitScope } = found;
    return [{ name: poolName, quotas, ...(rateLimitScope === undefined ? {} : { rateLimitScope }) }];
  });
  return { name, lanes: parsed, written, pools, ...(isRecord(writtenPools) ? { writtenPools } : {}) };
}

/**
 * The pools each lane draws from, as the functions read them (see `ServiceConfig.pools`), by lane: the scenario's
 * `pools` and each lane's names of them, checked as packaging checks serverless.yml's (see `laneInputs`).
 * @throws ConfigError naming the pool, or the lane's entry that names no pool.
 */
function drawnPools(lanes: Readonly<Record<string, unknown>>, pools: unknown): ReadonlyMap<string, unknown> {
  const named = Object.fromEntries(
    Object.entries(lanes).map(([lane, own]) => [
      lane,
      isRecord(own) && own.pools !== undefined ? { pools: own.pools } : {},
    ]),
  );
  const { lanes: inputs } = laneInputs({ lanes: named, ...(pools === undefined ? {} : { pools }) }, '');
  return new Map(inputs.map(({ lane, settings }) => [lane, settings.pools]));
}
