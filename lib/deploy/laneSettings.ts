/**
 * The lanes of `custom.quotaOrchestrator`, as packaging reads them. The one-lane form sets every setting at the top,
 * as before lanes existed. The lanes form sets the shared settings (`timeZone`, `orchestrator`) at the top and each
 * lane's own under `lanes.<lane>`; each lane is then checked as the one-lane form would be, with the shared settings
 * added.
 */
import { CONFIG_ENV } from '../configFromEnv';
import { describeValue } from '../domain/describeValue';
import { ConfigError } from '../errors';
import { SHARED_SETTING_KEYS } from '../lanes/laneEnv';
import { isRecord } from '../settingChecks';
import { DEPLOY_SETTING_KEYS } from '../workerSettings';

/** The key of the lanes form. */
export const LANES_KEY = 'lanes';

/** The most lanes a deployment has: their settings share the functions' 4 KB of environment. */
export const MAX_LANES = 10;

/** A lane's name: it names its state items, its queues and its metrics. */
export const LANE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The settings each lane sets for itself in the lanes form. */
export const LANE_SETTING_KEYS: readonly string[] = [
  ...Object.keys(CONFIG_ENV).filter(
    (key) => key !== 'lane' && !(SHARED_SETTING_KEYS as readonly string[]).includes(key),
  ),
  ...DEPLOY_SETTING_KEYS,
];

/** One lane, as packaging checks it. */
export interface LaneInput {
  readonly lane: string;
  /** Its settings as the one-lane form would write them: its own, the shared ones, and (in the lanes form) its name. */
  readonly settings: Readonly<Record<string, unknown>>;
  /** Where its own settings are written: `custom.quotaOrchestrator`, or `custom.quotaOrchestrator.lanes.<lane>`. */
  readonly path: string;
  /** Where `field` (a setting's path inside the lane's settings, e.g. `quotas[0].limit`) is written in serverless.yml. */
  fieldOf(field: string): string;
}

/** The lanes of `settings` (written at `path`), and whether they are written in the lanes form. */
export interface LaneInputs {
  readonly inLanes: boolean;
  readonly lanes: readonly LaneInput[];
}

/**
 * The lanes of `settings`, `custom.quotaOrchestrator` at `path`, an object whose keys the caller checked.
 * @throws ConfigError naming `lanes` when it is not an object of 1 to {@link MAX_LANES} lanes; a lane whose name is
 * not {@link LANE_NAME}, or that is not an object of {@link LANE_SETTING_KEYS}; or a lane's setting written at the
 * top beside `lanes`.
 */
export function laneInputs(settings: Readonly<Record<string, unknown>>, path: string): LaneInputs {
  const lanes = settings[LANES_KEY];
  if (lanes === undefined) {
    const lane = typeof settings.lane === 'string' ? settings.lane : 'default';
    return { inLanes: false, lanes: [{ lane, settings, path, fieldOf: (field) => `${path}.${field}` }] };
  }
  const lanesPath = `${path}.${LANES_KEY}`;
  const count = isRecord(lanes) ? Object.keys(lanes).length : 0;
  if (!isRecord(lanes) || count === 0 || count > MAX_LANES) {
    throw new ConfigError(
      lanesPath,
      `must be an object of 1 to ${MAX_LANES} lanes, each named and set like a one-lane deployment; got ${describeValue(lanes)}`,
    );
  }
  for (const key of Object.keys(settings)) {
    if (key !== LANES_KEY && !(SHARED_SETTING_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(
        `${path}.${key}`,
        `is a lane's own setting: beside ${LANES_KEY}, only ${SHARED_SETTING_KEYS.join(' and ')} are set at the top; set it in each lane (${lanesPath}.<lane>.${key})`,
      );
    }
  }
  const shared = Object.fromEntries(SHARED_SETTING_KEYS.map((key) => [key, settings[key]]));
  return {
    inLanes: true,
    lanes: Object.entries(lanes).map(([lane, own]) => laneInput(lane, own, lanesPath, shared, path)),
  };
}

/** One lane of the lanes form (see {@link laneInputs}). */
function laneInput(
  lane: string,
  own: unknown,
  lanesPath: string,
  shared: Readonly<Record<string, unknown>>,
  path: string,
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
        ? `is shared by every lane: set it once, at ${path}.${key}`
        : `unknown key; a lane's settings are ${LANE_SETTING_KEYS.join(', ')}`;
      throw new ConfigError(`${lanePath}.${key}`, why);
    }
  }
  const settings: Record<string, unknown> = { lane };
  for (const [key, value] of Object.entries({ ...shared, ...own })) if (value !== undefined) settings[key] = value;
  const isShared = (field: string) => SHARED_SETTING_KEYS.some((key) => field === key || field.startsWith(`${key}.`));
  return {
    lane,
    settings,
    path: lanePath,
    fieldOf: (field) => `${isShared(field) ? path : lanePath}.${field}`,
  };
}
