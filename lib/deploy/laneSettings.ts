/**
 * The lanes of `custom.quotaOrchestrator`, as packaging reads them. The one-lane form sets every setting at the top,
 * as before lanes existed. The lanes form sets the shared settings (`timeZone`, `orchestrator`) at the top and each
 * lane's own under `lanes.<lane>`; each lane is then checked as the one-lane form would be, with the shared settings
 * added.
 */
import { describeValue } from '../domain/describeValue';
import { ConfigError } from '../errors';
import { LANE_CONFIG_KEYS, SHARED_SETTING_KEYS } from '../lanes/laneEnv';
import { isRecord } from '../settingChecks';
import { DEPLOY_SETTING_KEYS } from '../workerSettings';
import { parseTiers } from '../domain/quota/tiers';

/** The key of the lanes form. */
export const LANES_KEY = 'lanes';

/** The key of the lanes form's pools: `{ <pool>: { quotas } }` at the top, which lanes name in their own `pools`. */
export const POOLS_KEY = 'pools';

/** The most lanes a deployment has: their settings share the functions' 4 KB of environment. */
export const MAX_LANES = 10;

/** A lane's name: it names its state items, its queues and its metrics. */
export const LANE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The settings each lane sets for itself in the lanes form. */
export const LANE_SETTING_KEYS: readonly string[] = [...LANE_CONFIG_KEYS, ...DEPLOY_SETTING_KEYS];

/** Where `key` is written under `path`: `path.key`, or `key` alone at the top (an empty `path`). */
function fieldAt(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** One lane, as packaging checks it. */
export interface LaneInput {
  readonly lane: string;
  /** Its settings as the one-lane form would write them: its own, the shared ones, and (in the lanes form) its name. */
  readonly settings: Readonly<Record<string, unknown>>;
  /** Where its own settings are written: `custom.quotaOrchestrator`, or `custom.quotaOrchestrator.lanes.<lane>`. */
  readonly path: string;
  /** The pools it names (the lanes form's `pools`), in its order. */
  readonly pools: readonly string[];
  /** Where `field` (a setting's path inside the lane's settings, e.g. `quotas[0].limit`) is written in serverless.yml. */
  fieldOf(field: string): string;
}

/** The lanes of `settings` (written at `path`), and whether they are written in the lanes form. */
export interface LaneInputs {
  readonly inLanes: boolean;
  readonly lanes: readonly LaneInput[];
}

/**
 * The lanes of `settings`, `custom.quotaOrchestrator` at `path` (or a file's top, at `''`), an object whose keys the
 * caller checked.
 * @throws ConfigError naming `lanes` when it is not an object of 1 to {@link MAX_LANES} lanes; a lane whose name is
 * not {@link LANE_NAME}, or that is not an object of {@link LANE_SETTING_KEYS}; or a lane's setting written at the
 * top beside `lanes`.
 */
export function laneInputs(settings: Readonly<Record<string, unknown>>, path: string): LaneInputs {
  const lanes = settings[LANES_KEY];
  if (lanes === undefined) {
    if (settings[POOLS_KEY] !== undefined)
      throw new ConfigError(
        fieldAt(path, POOLS_KEY),
        `pools are shared by lanes: write the lanes under ${LANES_KEY}, and each lane's pools in its own ${POOLS_KEY}`,
      );
    const lane = typeof settings.lane === 'string' ? settings.lane : 'default';
    return { inLanes: false, lanes: [{ lane, settings, path, pools: [], fieldOf: (field) => fieldAt(path, field) }] };
  }
  const lanesPath = fieldAt(path, LANES_KEY);
  const count = isRecord(lanes) ? Object.keys(lanes).length : 0;
  if (!isRecord(lanes) || count === 0 || count > MAX_LANES) {
    throw new ConfigError(
      lanesPath,
      `must be an object of 1 to ${MAX_LANES} lanes, each named and set like a one-lane deployment; got ${describeValue(lanes)}`,
    );
  }
  for (const key of Object.keys(settings)) {
    if (key !== LANES_KEY && key !== POOLS_KEY && !(SHARED_SETTING_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(
        fieldAt(path, key),
        `is a lane's own setting: beside ${LANES_KEY}, only ${SHARED_SETTING_KEYS.join(' and ')} are set at the top; set it in each lane (${lanesPath}.<lane>.${key})`,
      );
    }
  }
  const shared = Object.fromEntries(SHARED_SETTING_KEYS.map((key) => [key, settings[key]]));
  const pools = poolDefinitions(settings[POOLS_KEY], fieldAt(path, POOLS_KEY));
  const inputs = Object.entries(lanes).map(([lane, own]) => laneInput(lane, own, lanesPath, shared, path, pools));
  const unused = Object.keys(pools).find((pool) => !inputs.some((input) => input.pools.includes(pool)));
  if (unused !== undefined)
    throw new ConfigError(
      `${fieldAt(path, POOLS_KEY)}.${unused}`,
      `no lane draws from it: name it in a lane's ${POOLS_KEY}`,
    );
  return { inLanes: true, lanes: inputs };
}

/** A pool as the lanes form writes it at the top (its fields are checked with each lane's settings: see `parsePools`). */
interface PoolDefinition {
  readonly quotas: unknown;
  readonly rateLimitScope?: unknown;
}

/**
 * The pools of the lanes form, `{ <pool>: { quotas, rateLimitScope? } }` at `path`, their tiers checked where they
 * are written.
 * @throws ConfigError naming the pool, or the field of its tiers.
 */
function poolDefinitions(input: unknown, path: string): Readonly<Record<string, PoolDefinition>> {
  if (input === undefined) return {};
  if (!isRecord(input) || Object.keys(input).length === 0)
    throw new ConfigError(path, `must be an object of pools, each { quotas }; got ${describeValue(input)}`);
  for (const [name, pool] of Object.entries(input)) {
    if (!LANE_NAME.test(name))
      throw new ConfigError(`${path}.${name}`, `a pool's name must be 1 to 64 letters, digits, '-' or '_'`);
    const keys = isRecord(pool) ? Object.keys(pool) : [];
    if (!isRecord(pool) || keys.some((key) => key !== 'quotas' && key !== 'rateLimitScope'))
      throw new ConfigError(
        `${path}.${name}`,
        `must be { quotas: [tiers], rateLimitScope?: lane | pool }; got ${describeValue(pool)}`,
      );
    parseTiers(pool.quotas, { field: `${path}.${name}.quotas` });
    if (pool.rateLimitScope !== undefined && pool.rateLimitScope !== 'lane' && pool.rateLimitScope !== 'pool')
      throw new ConfigError(
        `${path}.${name}.rateLimitScope`,
        `must be one of 'lane', 'pool'; got ${describeValue(pool.rateLimitScope)}`,
      );
  }
  return input as Record<string, PoolDefinition>;
}

/** A pool a lane draws from, as the lane names it: the pool's name, and the lane's weight in it if it gives one. */
interface NamedPool {
  readonly name: string;
  readonly weight?: unknown;
}

/**
 * The pools a lane names (its `pools`, at `field`): names of `pools` (written at `poolsPath`), each once, each a name
 * or `{ name, weight }` (the weight is checked with the lane's settings: see `parsePools`).
 * @throws ConfigError naming the lane's `pools`, or the entry that names no pool.
 */
function lanePools(
  input: unknown,
  field: string,
  pools: Readonly<Record<string, unknown>>,
  poolsPath: string,
): readonly NamedPool[] {
  if (input === undefined) return [];
  const known = Object.keys(pools);
  const entries = (Array.isArray(input) ? input : []).map((entry: unknown) =>
    isRecord(entry) ? { ...entry, name: entry.name } : { name: entry },
  );
  if (!Array.isArray(input) || input.length === 0 || new Set(entries.map((e) => e.name)).size !== input.length)
    throw new ConfigError(
      field,
      `must be a list of pool names (or { name, weight }), each once (${known.join(', ') || `none at ${poolsPath}`}); got ${describeValue(input)}`,
    );
  entries.forEach(({ name, ...rest }, i) => {
    const unknownKey = Object.keys(rest).find((key) => key !== 'weight');
    if (typeof name !== 'string' || !known.includes(name) || unknownKey !== undefined)
      throw new ConfigError(
        `${field}[${i}]`,
        `must name a pool of ${poolsPath} (${known.join(', ') || 'none'}), as a name or { name, weight }; got ${describeValue(input[i])}`,
      );
  });
  return entries as NamedPool[];
}

/** One lane of the lanes form (see {@link laneInputs}). */
function laneInput(
  lane: string,
  own: unknown,
  lanesPath: string,
  shared: Readonly<Record<string, unknown>>,
  path: string,
  pools: Readonly<Record<string, PoolDefinition>>,
): LaneInput {
  const lanePath = `${lanesPath}.${lane}`;
  if (!LANE_NAME.test(lane))
    throw new ConfigError(
      lanePath,
      `a lane's name must be 1 to 64 letters, digits, '-' or '_'; got ${describeValue(lane)}`,
    );
  if (!isRecord(own))
    throw new ConfigError(
      lanePath,
      `must be an object of the lane's settings (${LANE_SETTING_KEYS.join(', ')}); got ${describeValue(own)}`,
    );
  for (const key of Object.keys(own)) {
    if (!LANE_SETTING_KEYS.includes(key)) {
      const why = (SHARED_SETTING_KEYS as readonly string[]).includes(key)
        ? `is shared by every lane: set it once, at ${fieldAt(path, key)}`
        : `unknown key; a lane's settings are ${LANE_SETTING_KEYS.join(', ')}`;
      throw new ConfigError(`${lanePath}.${key}`, why);
    }
  }
  const settings: Record<string, unknown> = { lane };
  for (const [key, value] of Object.entries({ ...shared, ...own })) if (value !== undefined) settings[key] = value;
  const named = lanePools(own[POOLS_KEY], `${lanePath}.${POOLS_KEY}`, pools, fieldAt(path, POOLS_KEY));
  if (named.length > 0)
    settings[POOLS_KEY] = named.map(({ name, weight }) => ({
      name,
      quotas: pools[name]?.quotas,
      ...(weight === undefined ? {} : { weight }),
      ...(pools[name]?.rateLimitScope === undefined ? {} : { rateLimitScope: pools[name]?.rateLimitScope }),
    }));
  const isShared = (field: string) => SHARED_SETTING_KEYS.some((key) => field === key || field.startsWith(`${key}.`));
  return {
    lane,
    settings,
    pools: named.map(({ name }) => name),
    path: lanePath,
    fieldOf: (field) => fieldAt(isShared(field) ? path : lanePath, field),
  };
}
