/**
 * The functions' environment of the lanes form of `custom.quotaOrchestrator` (see `laneInputs`): the shared settings
 * in their own variables, each lane's in `LANES`, and the queues' URL prefix in `QUEUE_URL_PREFIX` (see `laneEnvs`,
 * which reads them back at cold start).
 */
import { CONFIG_ENV, WORKER_ENV } from '../configFromEnv';
import { describeValue } from '../domain/describeValue';
import { ConfigError } from '../errors';
import { LANE_CONFIG_KEYS, LANES_ENV, SHARED_SETTING_KEYS } from '../lanes/laneEnv';
import { laneQueueName, MAX_QUEUE_NAME_LENGTH, QUEUE_NAME_SUFFIXES } from '../lanes/laneQueueNames';
import type { QueueName } from '../ports/QueueReceiver';
import type { LaneInput } from './laneSettings';
import { isRecord } from '../settingChecks';

/** Lambda's limit on a function's environment: its variables' names and values, in bytes. */
export const LAMBDA_ENVIRONMENT_BYTES = 4096;

/** What a value that CloudFormation resolves at deploy time (a `Ref`, a `Fn::Sub`) is counted as, in bytes. */
export const RESOLVED_VALUE_BYTES = 128;

/** Where serverless.yml names each queue of the one-lane form (`custom.names`). */
export const QUEUE_NAME_KEYS: Readonly<Record<QueueName, string>> = Object.freeze({
  requeue: 'requeueQueue',
  fifo: 'fifoQueue',
  main: 'mainQueue',
  bulk: 'bulkQueue',
  'requeue-dlq': 'requeueDeadLetterQueue',
  'fifo-dlq': 'fifoDeadLetterQueue',
  'main-dlq': 'mainDeadLetterQueue',
  'bulk-dlq': 'bulkDeadLetterQueue',
});

/** A lane's settings as written, with the derived `workerTimeoutMs`, and where they are written. */
export interface WrittenLane {
  readonly lane: LaneInput;
  /** Its service settings (those of `CONFIG_ENV`) as written, shared ones included. */
  readonly written: Readonly<Record<string, unknown>>;
}

/**
 * The variables that carry `settings` as written: each set key's value under its variable in `names`, a string as
 * it is, anything else as JSON (which the cold start parses again).
 */
export function environmentOf(
  settings: Readonly<Record<string, unknown>>,
  names: Readonly<Record<string, string>>,
): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, name] of Object.entries(names)) {
    const value = settings[key];
    if (value !== undefined) environment[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return environment;
}

/** The values of `settings` under their variables' names in `names`, as written (see `LANES_ENV.lanes`). */
function valuesOf(
  settings: Readonly<Record<string, unknown>>,
  names: Readonly<Record<string, string>>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(names).flatMap(([key, name]) => (settings[key] === undefined ? [] : [[name, settings[key]]])),
  );
}

/**
 * What every queue name of the one-lane form starts with, `<service>-<stage>-` as serverless.yml writes them: the
 * lanes' queues are named after it (see `laneQueueName`).
 * @throws ConfigError naming `custom.names.<queue>` when the names do not all share it.
 */
export function queueNamePrefix(names: unknown): string {
  const named = (queue: QueueName): unknown =>
    typeof names === 'object' && names !== null
      ? (names as Record<string, unknown>)[QUEUE_NAME_KEYS[queue]]
      : undefined;
  const main = named('main');
  const prefix = typeof main === 'string' && main.endsWith(QUEUE_NAME_SUFFIXES.main) ? main.slice(0, -4) : undefined;
  for (const queue of Object.keys(QUEUE_NAME_KEYS) as QueueName[]) {
    const expected = prefix === undefined ? undefined : laneQueueName(prefix, 'default', queue);
    if (expected === undefined || named(queue) !== expected) {
      throw new ConfigError(
        `custom.names.${QUEUE_NAME_KEYS[queue]}`,
        `must be ${expected ?? `<prefix>${QUEUE_NAME_SUFFIXES[queue]}`} with ${'lanes'}: each lane's queues are named <prefix><lane>-${QUEUE_NAME_SUFFIXES[queue]}; got ${describeValue(named(queue))}`,
      );
    }
  }
  return prefix as string;
}

/** The logical id of the worker's on-failure queue (resources/sqs.yml), which every lane shares. */
export const FAILURE_QUEUE_ID = 'WorkerFailureQueue';

/**
 * `QUEUE_URL_PREFIX`: the URL of the worker's failure queue up to its name, then `prefix`. Taken from a queue's real
 * URL, it holds wherever the stack runs (any region, partition or URL form, and the local stack's emulator).
 * @throws ConfigError naming `custom.names.workerFailureQueue` when it is not a name.
 */
export function queueUrlPrefix(names: unknown, prefix: string): unknown {
  const failureQueue = isRecord(names) ? names.workerFailureQueue : undefined;
  if (typeof failureQueue !== 'string' || failureQueue === '')
    throw new ConfigError(
      'custom.names.workerFailureQueue',
      `must be the worker's failure queue's name, from which the lanes' queue URLs are made; got ${describeValue(failureQueue)}`,
    );
  const base = { 'Fn::Select': [0, { 'Fn::Split': [failureQueue, { Ref: FAILURE_QUEUE_ID }] }] };
  return { 'Fn::Join': ['', [base, prefix]] };
}

/**
 * The variables of the lanes form, added to `provider.environment`: `TIME_ZONE` and `ORCHESTRATOR` (shared), `LANES`
 * and `QUEUE_URL_PREFIX` (`urlPrefix`, see {@link queueUrlPrefix}).
 * @throws ConfigError naming a lane whose queue names would exceed SQS's 80 characters.
 */
export function lanesEnvironment(
  lanes: readonly WrittenLane[],
  prefix: string,
  urlPrefix: unknown,
): Record<string, unknown> {
  const ownNames = Object.fromEntries(LANE_CONFIG_KEYS.map((key) => [key, CONFIG_ENV[key]]));
  const sharedNames = Object.fromEntries(SHARED_SETTING_KEYS.map((key) => [key, CONFIG_ENV[key]]));
  for (const { lane } of lanes) {
    const longest = laneQueueName(prefix, lane.lane, 'fifo-dlq');
    if (longest.length > MAX_QUEUE_NAME_LENGTH)
      throw new ConfigError(
        lane.path,
        `a lane's name must leave its queue names within SQS's ${MAX_QUEUE_NAME_LENGTH} characters; '${longest}' has ${longest.length}`,
      );
  }
  const variables = Object.fromEntries(
    lanes.map(({ lane, written }) => [
      lane.lane,
      { ...valuesOf(written, ownNames), ...valuesOf(lane.settings, WORKER_ENV) },
    ]),
  );
  return {
    ...environmentOf(lanes[0]?.written ?? {}, sharedNames),
    [LANES_ENV.lanes]: JSON.stringify(variables),
    [LANES_ENV.queueUrlPrefix]: urlPrefix,
  };
}

/**
 * Checks that a function's environment, `environments` merged, fits in Lambda's 4 KB; a value CloudFormation
 * resolves counts as {@link RESOLVED_VALUE_BYTES}.
 * @throws ConfigError naming `field` (the lanes) and the size it would take.
 */
export function checkEnvironmentSize(
  field: string,
  fn: string,
  ...environments: readonly (Readonly<Record<string, unknown>> | undefined)[]
): void {
  const merged = Object.assign({}, ...environments) as Record<string, unknown>;
  const bytes = Object.entries(merged).reduce(
    (sum, [name, value]) =>
      sum + Buffer.byteLength(name) + (typeof value === 'string' ? Buffer.byteLength(value) : RESOLVED_VALUE_BYTES),
    0,
  );
  if (bytes > LAMBDA_ENVIRONMENT_BYTES) {
    throw new ConfigError(
      field,
      `would take about ${bytes} bytes of the ${fn} function's environment, over Lambda's ${LAMBDA_ENVIRONMENT_BYTES}: set fewer lanes or shorter settings`,
    );
  }
}
