/**
 * The lanes of a deployment, as its functions read them at cold start. A one-lane deployment sets each setting in a
 * variable of its own (`LANE`, `QUOTAS`, `API_URL`, `MAIN_QUEUE_URL`, …). A deployment of several lanes sets the shared
 * ones (`TIME_ZONE`, `ORCHESTRATOR`, `TABLE_NAME`, …) as before and each lane's in `LANES`, a JSON object that maps
 * each lane to its own variables (a lane's setting in a variable of the deployment is no lane's); its queues' URLs
 * follow from `QUEUE_URL_PREFIX` and the naming rule of `laneQueueName`. Each lane is then read as a one-lane
 * deployment would be, through the same parsers.
 */
import { CONFIG_ENV, jsonFromEnv, QUEUE_URL_ENV, requiredEnv, WORKER_ENV, type Env } from '../configFromEnv';
import { ConfigError } from '../errors';
import { QUEUE_NAMES } from '../ports/QueueReceiver';
import { isRecord } from '../settingChecks';
import { describeValue } from '../domain/describeValue';
import { laneQueueName, UNPREFIXED_LANE } from './laneQueueNames';

/** The variables of a deployment of several lanes. */
export const LANES_ENV = {
  /**
   * Each lane's own variables, as a JSON object `{ "<lane>": { "QUOTAS": [ … ], "API_URL": "…" } }`: a variable's
   * value is its text, or the JSON value its text would hold (not escaped again, to save the environment's room).
   */
  lanes: 'LANES',
  /** What each of the lanes' queue URLs starts with: `https://sqs.<region>.amazonaws.com/<account>/<service>-<stage>-`. */
  queueUrlPrefix: 'QUEUE_URL_PREFIX',
} as const;

/** The settings every lane of a deployment shares, which stay in variables of their own. */
export const SHARED_SETTING_KEYS = ['timeZone', 'orchestrator'] as const;

/** The service settings (`ServiceConfig`'s, by their keys in `CONFIG_ENV`) each lane sets for itself: all but its name and the shared ones. */
export const LANE_CONFIG_KEYS: readonly (keyof typeof CONFIG_ENV)[] = (
  Object.keys(CONFIG_ENV) as (keyof typeof CONFIG_ENV)[]
).filter((key) => key !== 'lane' && !(SHARED_SETTING_KEYS as readonly string[]).includes(key));

/** The variables a lane of `LANES` may set: those of its own settings ({@link LANE_CONFIG_KEYS}) and the worker's. */
export const LANE_VARIABLES: readonly string[] = [
  ...LANE_CONFIG_KEYS.map((key) => CONFIG_ENV[key]),
  ...Object.values(WORKER_ENV),
];

/** One lane of a deployment, and the environment its functions read it from. */
export interface LaneEnv {
  readonly lane: string;
  /** The deployment's environment with the lane's settings and queue URLs in the variables of a one-lane deployment. */
  readonly env: Env;
  /** Whether the deployment has its lanes in `LANES`: refusals then name the lane (see {@link readLane}). */
  readonly inLanes: boolean;
}

/**
 * The deployment's lanes: the one lane of a deployment without `LANES`, else each lane of `LANES`, in its order.
 * @throws ConfigError naming `LANES` (or a lane's entry in it) when it is not an object of lanes that each map
 * lane variables to strings, or `QUEUE_URL_PREFIX` when it is missing.
 */
export function laneEnvs(env: Env): readonly LaneEnv[] {
  const text = env[LANES_ENV.lanes];
  if (text === undefined || text === '') return [{ lane: env[CONFIG_ENV.lane] || 'default', env, inLanes: false }];
  const lanes = jsonFromEnv(LANES_ENV.lanes, text);
  if (!isRecord(lanes) || Object.keys(lanes).length === 0) {
    throw new ConfigError(
      LANES_ENV.lanes,
      `must be a JSON object of one or more lanes, each an object of its variables; got ${describeValue(lanes)}`,
    );
  }
  const prefix = requiredEnv(env, LANES_ENV.queueUrlPrefix);
  // A lane reads only its own settings: one a variable of the deployment sets is not any lane's.
  const shared = Object.fromEntries(
    Object.entries(env).filter(([name]) => name !== LANES_ENV.lanes && !LANE_VARIABLES.includes(name)),
  );
  return Object.entries(lanes).map(([lane, variables]) => {
    const field = `${LANES_ENV.lanes}.${lane}`;
    if (!isRecord(variables))
      throw new ConfigError(field, `must be an object of the lane's variables; got ${describeValue(variables)}`);
    const texts: Record<string, string> = {};
    for (const [name, value] of Object.entries(variables)) {
      if (!LANE_VARIABLES.includes(name))
        throw new ConfigError(`${field}.${name}`, `is not a lane's variable; allowed are ${LANE_VARIABLES.join(', ')}`);
      texts[name] = typeof value === 'string' ? value : JSON.stringify(value);
    }
    const queueUrls = Object.fromEntries(
      QUEUE_NAMES.map((queue) => [QUEUE_URL_ENV[queue], prefix + laneQueueName('', lane, queue)]),
    );
    const laneEnv: Env = { ...shared, ...texts, [CONFIG_ENV.lane]: lane, ...queueUrls };
    return { lane, env: laneEnv, inLanes: true };
  });
}

/**
 * `read(lane.env)`, with a refusal of a lane of `LANES` named as it is written there (`LANES.<lane>.QUOTAS[0].per`
 * rather than `QUOTAS[0].per`).
 * @throws ConfigError from `read`, renamed so.
 */
export function readLane<T>(lane: LaneEnv, read: (env: Env) => T): T {
  try {
    return read(lane.env);
  } catch (error) {
    if (!lane.inLanes || !(error instanceof ConfigError)) throw error;
    const shared = !LANE_VARIABLES.some(
      (name) => error.field === name || error.field.startsWith(`${name}.`) || error.field.startsWith(`${name}[`),
    );
    const field = shared ? error.field : `${LANES_ENV.lanes}.${lane.lane}.${error.field}`;
    throw new ConfigError(field, shared ? `${error.problem} (lane '${lane.lane}')` : error.problem, { cause: error });
  }
}

/**
 * The namespace of a lane's idempotency keys (see `DynamoIdempotencyStore`): its name, in a deployment of several lanes,
 * so that two lanes' jobs of one key (each lane's producer chose its keys) never share a record; none for a one-lane
 * deployment and for the lanes form's `default` lane, whose records keep the keys a one-lane deployment wrote.
 */
export function idempotencyNamespace(lane: LaneEnv): string | undefined {
  return lane.inLanes && lane.lane !== UNPREFIXED_LANE ? lane.lane : undefined;
}
