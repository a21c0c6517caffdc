/**
 * The pure part of the quota-config osls plugin (`quotaConfigPlugin.cjs`): it validates `custom.quotaOrchestrator`
 * with the service's own parser, cross-checks it against the functions and queues of serverless.yml, and works
 * out the environment variables that carry it to the functions.
 */
import { parseServiceConfig, type ServiceConfig } from '../config';
import { CONFIG_ENV, QUEUE_URL_ENV, WORKER_ENV } from '../configFromEnv';
import { describeValue } from '../domain/describeValue';
import { ConfigError } from '../errors';
import type { ResultDestination } from '../resultDestination';
import { SCHEDULE_EXPRESSION, SCHEDULE_PERIOD_MS } from '../schedule';
import { isRecord, wholeNumber } from '../settingChecks';
import {
  DEPLOY_SETTING_KEYS,
  parseWorkerSettings,
  type DeploySettingsInput,
  type SettingsOrigin,
  type WorkerSettings,
} from '../workerSettings';
import { laneInputs, LANES_KEY, type LaneInput } from './laneSettings';
import {
  checkEnvironmentSize,
  environmentOf,
  lanesEnvironment,
  queueNamePrefix,
  queueUrlPrefix,
  type WrittenLane,
} from './lanesEnvironment';
import { logicalIdPrefix } from './laneResources';

export { laneResources } from './laneResources';
import { checkAlarmSettings } from './alarmSettings';
import { checkRedrive } from './redriveChecks';
import { resultDestinationStatement, type IamStatement } from './resultDestinationStatement';

/** Where the settings live in serverless.yml; every field in an error message starts with it. */
export const SETTINGS_PATH = 'custom.quotaOrchestrator';

/** Lambda's longest timeout. */
export const MAX_LAMBDA_TIMEOUT_SECONDS = 900;

/** The function timeout osls applies when neither the function nor the provider sets one. */
export const OSLS_DEFAULT_TIMEOUT_SECONDS = 6;

const SERVICE_KEYS = Object.keys(CONFIG_ENV) as (keyof typeof CONFIG_ENV)[];
const ALLOWED_KEYS: readonly string[] = [...SERVICE_KEYS, ...DEPLOY_SETTING_KEYS, LANES_KEY];

/** The parts of an osls function definition read here. */
export interface FunctionView {
  readonly timeout?: unknown;
  /** Seconds Lambda keeps an async event before dropping it (Lambda's default when unset: 21600). */
  readonly maximumEventAge?: unknown;
  readonly environment?: Readonly<Record<string, unknown>>;
  readonly events?: readonly unknown[];
}

/** The parts of the resolved serverless.yml (osls's `serverless.service`) that the plugin reads. */
export interface ServiceView {
  readonly custom?: {
    readonly quotaOrchestrator?: unknown;
    readonly queues?: { readonly maxReceiveCount?: unknown; readonly fifoMaxReceiveCount?: unknown };
    readonly alarms?: unknown;
    /** The resources' names (`custom.names`): the lanes' queues are named after the one-lane form's. */
    readonly names?: unknown;
  };
  readonly provider: {
    readonly timeout?: unknown;
    readonly region?: unknown;
    readonly environment?: Readonly<Record<string, unknown>>;
  };
  readonly functions?: Readonly<Record<string, FunctionView | undefined>>;
}

/** What the plugin adds to serverless.yml: validated settings as environment variables. */
export interface QuotaEnvironment {
  /** Each lane's parsed configuration, as the functions will read it at cold start, in the order written. */
  readonly lanes: readonly LaneEnvironment[];
  /** Whether the settings are written in the lanes form (`lanes`): the plugin then gives each lane its resources. */
  readonly inLanes: boolean;
  /** In the lanes form, what the queues' names start with (see `laneResources`). */
  readonly queueNamePrefix?: string;
  /**
   * Added to `provider.environment` (both functions): `LANE`, `TIME_ZONE`, `QUOTAS`, `MAX_IN_FLIGHT`, `UNITS`,
   * `USAGE_PRESET`, `PACING`, `CIRCUIT`, `RETRY`, `ORCHESTRATOR` (those set); in the lanes form `TIME_ZONE`,
   * `ORCHESTRATOR`, `LANES` (each lane's own variables, worker's included) and `QUEUE_URL_PREFIX`.
   */
  readonly provider: Readonly<Record<string, unknown>>;
  /**
   * Added to `functions.worker.environment`: `API_URL`, `HEALTH_URL` and, if set, `API_METHOD`, `REQUEST_HEADERS`,
   * `API_KEY_HEADER`, `API_KEY_SCHEME`, `HEALTH_CHECK_SENDS_KEY`, `API_TIMEOUT_MS`, `API_KEY_PARAMETER`,
   * `API_KEY_CACHE_SECONDS`, `API_KEY_READ_TIMEOUT_MS` and `RESULT_DESTINATION`.
   */
  readonly worker: Readonly<Record<string, string>>;
  /** Added to the worker role's policy (`WorkerRole` in resources/iam.yml): the send to the result destination, if one is set. */
  readonly workerStatements: readonly IamStatement[];
  /** Added to `functions.orchestrator.events`: its schedule, unless a run of the plugin already added it. */
  readonly orchestratorEvents: readonly { readonly schedule: string }[];
}

/** One lane of {@link QuotaEnvironment}. */
export interface LaneEnvironment {
  readonly config: ServiceConfig;
  readonly worker: WorkerSettings;
}

/**
 * A function's timeout in whole seconds, as osls resolves it (the function's, else the provider's, else 6).
 * @throws ConfigError naming `functions.<name>` when the function is missing, or its `timeout` when that is not an
 * integer from `min` to 900.
 */
function timeoutSeconds(service: ServiceView, name: string, min: number, why: string): number {
  const fn = service.functions?.[name];
  if (fn === undefined || fn === null) {
    throw new ConfigError(
      `functions.${name}`,
      `is missing; the quota-config plugin configures the functions 'orchestrator' and 'worker'`,
    );
  }
  const timeout = fn.timeout ?? service.provider.timeout ?? OSLS_DEFAULT_TIMEOUT_SECONDS;
  return wholeNumber(
    timeout,
    { min, max: MAX_LAMBDA_TIMEOUT_SECONDS },
    { field: `functions.${name}.timeout`, unit: 'seconds', note: why },
  );
}

/**
 * The `orchestrator` settings to validate, with `workerTimeoutMs` derived from the worker's timeout. The two must
 * agree: the orchestrator only dispatches a message while its visibility covers a whole worker run, so a smaller
 * `workerTimeoutMs` than the real timeout could let a message reappear while its worker still runs.
 * @throws ConfigError naming both fields when `workerTimeoutMs` is set and differs from the worker's timeout.
 */
function withWorkerTimeout(orchestrator: unknown, workerTimeoutMs: number): { value: unknown; derived: boolean } {
  if (orchestrator !== undefined && !isRecord(orchestrator)) return { value: orchestrator, derived: false };
  const given = orchestrator?.workerTimeoutMs;
  if (given === undefined) return { value: { ...orchestrator, workerTimeoutMs }, derived: true };
  if (given !== workerTimeoutMs) {
    throw new ConfigError(
      `${SETTINGS_PATH}.orchestrator.workerTimeoutMs`,
      `must equal functions.worker.timeout in milliseconds (${workerTimeoutMs}); got ${describeValue(given)}. Leave it out to derive it from the timeout, or change both`,
    );
  }
  return { value: orchestrator, derived: false };
}

/** Lambda's bounds of `maximumEventAge`, in seconds. */
const EVENT_AGE_SECONDS = { min: 60, max: 21_600 } as const;

/**
 * Checks that a message's visibility outlasts any delivery of the worker event dispatched for it: an event may start
 * up to `functions.worker.maximumEventAge` after its invoke (throttled, or queued by Lambda) and then run for the
 * worker's timeout. A message received again before that is dispatched again while its first event may still start.
 * @throws ConfigError naming `functions.worker.maximumEventAge` when it is unset (Lambda would keep events 6 hours)
 * or out of Lambda's range, or `custom.quotaOrchestrator.orchestrator.visibilityTimeoutMs` when it is too short.
 */
function checkVisibilityOutlastsEvent(service: ServiceView, config: ServiceConfig, workerTimeoutMs: number): void {
  const age = wholeNumber(service.functions?.worker?.maximumEventAge, EVENT_AGE_SECONDS, {
    field: 'functions.worker.maximumEventAge',
    unit: 'seconds',
    note: ", set (Lambda's default keeps events 6 hours) and below the messages' visibility",
  });
  const neededMs = age * 1000 + workerTimeoutMs;
  if (config.orchestrator.visibilityTimeoutMs <= neededMs) {
    throw new ConfigError(
      `${SETTINGS_PATH}.orchestrator.visibilityTimeoutMs`,
      `must exceed functions.worker.maximumEventAge plus functions.worker.timeout (${neededMs}), or a message could be dispatched again while its first event may still start; got ${config.orchestrator.visibilityTimeoutMs}`,
    );
  }
}

/**
 * `custom.quotaOrchestrator`, an object of known keys.
 * @throws ConfigError naming it when it is not an object, or the first unknown key.
 */
function settingsOf(service: ServiceView): Record<string, unknown> {
  const settings = service.custom?.quotaOrchestrator;
  if (!isRecord(settings)) {
    throw new ConfigError(
      SETTINGS_PATH,
      `must be an object with keys ${ALLOWED_KEYS.join(', ')} (quotas, apiUrl and healthUrl required); got ${describeValue(settings)}`,
    );
  }
  for (const key of Object.keys(settings)) {
    if (!ALLOWED_KEYS.includes(key))
      throw new ConfigError(`${SETTINGS_PATH}.${key}`, `unknown key; allowed keys are ${ALLOWED_KEYS.join(', ')}`);
  }
  return settings;
}

/**
 * The worker's timeout in ms, once the orchestrator's is checked to exceed the schedule period (so a run spans a tick).
 * @throws ConfigError naming `functions.<name>.timeout` (see {@link timeoutSeconds}).
 */
function checkFunctionTimeouts(service: ServiceView): number {
  const periodSeconds = SCHEDULE_PERIOD_MS / 1000;
  timeoutSeconds(
    service,
    'orchestrator',
    periodSeconds + 1,
    `, more than the ${periodSeconds} s schedule period so a run spans a tick`,
  );
  return timeoutSeconds(service, 'worker', 1, '') * 1000;
}

/**
 * A lane's settings as written, with the derived `workerTimeoutMs` (`written`), and as `parseServiceConfig` reads
 * them (`config`).
 * @throws ConfigError naming the setting where it is written, saying when `workerTimeoutMs` was derived.
 */
function parseServiceSettings(
  lane: LaneInput,
  workerTimeoutMs: number,
): { readonly written: Record<string, unknown>; readonly config: ServiceConfig } {
  const { settings } = lane;
  const written: Record<string, unknown> = {};
  for (const key of SERVICE_KEYS) if (settings[key] !== undefined) written[key] = settings[key];
  const orchestrator = withWorkerTimeout(settings.orchestrator, workerTimeoutMs);
  written.orchestrator = orchestrator.value;
  try {
    return { written, config: parseServiceConfig(written) };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const hint =
      orchestrator.derived && error.problem.includes('workerTimeoutMs')
        ? ' (workerTimeoutMs is derived from functions.worker.timeout)'
        : '';
    throw new ConfigError(lane.fieldOf(error.field), error.problem + hint, { cause: error });
  }
}

/** How a lane's worker settings are named in serverless.yml: where they are written, shown as JSON. */
function packagingOrigin(lane: LaneInput): SettingsOrigin {
  const settings: DeploySettingsInput = lane.settings;
  return {
    field: (key) => lane.fieldOf(key),
    shown: (key) => describeValue(settings[key]),
    healthCheckTimeoutField: lane.fieldOf('circuit.healthCheckTimeoutSeconds'),
    probeChecksKeyField: lane.fieldOf('circuit.probeChecksKey'),
    workerTimeoutField: 'functions.worker.timeout',
  };
}

/**
 * Validates `custom.quotaOrchestrator` with `parseServiceConfig` (the parser the functions run at cold start) and
 * cross-checks it against serverless.yml:
 * - `orchestrator.workerTimeoutMs` is derived from `functions.worker.timeout`, and must equal it when given;
 * - `functions.orchestrator.timeout` exceeds the schedule period (`lib/schedule.ts`), so every run spans at least one
 *   tick; the schedule itself is the plugin's to add, and serverless.yml gives the orchestrator no other schedule;
 * - `apiTimeoutMs` (or its default) is below `circuit.healthCheckTimeoutSeconds`, so a health probe still calling is
 *   never presumed lost and overlapped by the next; with `apiKeyParameter` set, so is `apiKeyReadTimeoutMs` plus
 *   `apiTimeoutMs`, so that a key read and a probe that both take their full time are never overlapped either;
 * - `orchestrator.visibilityTimeoutMs` exceeds `functions.worker.maximumEventAge` plus `functions.worker.timeout`:
 *   a worker event may start up to its maximum age after the invoke and then run its timeout, and its message must
 *   not be received (dispatched) again before;
 * - `results`, when set, is a result destination (`parseResultDestination`), whose send the worker's role is granted
 *   (`workerStatements`);
 * - `custom.queues.maxReceiveCount` exceeds `retry.maxAttempts`, and `custom.queues.fifoMaxReceiveCount` is at least
 *   `fifoRedriveThreshold(retry.maxAttempts)`: SQS redrive must not pre-empt the service's own dead-lettering (which
 *   records the reason), and a FIFO message is received again on every retry and every hand-back of its group;
 * - `custom.alarms`, when present, holds the alarms' settings (see {@link checkAlarmSettings}).
 *
 * In the lanes form (`lanes`, see `laneInputs`), each lane is checked as above, with the shared `timeZone` and
 * `orchestrator`, and a refusal names the setting where it is written
 * (`custom.quotaOrchestrator.lanes.<lane>.quotas[0].limit`); the queue names of `custom.names` must share the prefix
 * the lanes' queues are named after, each lane's queue names must fit SQS's 80 characters, and the functions'
 * environment must fit Lambda's 4 KB.
 *
 * The environment carries the settings **as written** (plus the derived `workerTimeoutMs`), not the parsed
 * result: the functions parse the same text again with the same parser at cold start, so both readings agree; the
 * defaults then ship with the code that relies on them; and the variables stay small (Lambda allows 4 KB of
 * environment in all). A section left out of serverless.yml gets no variable and takes the defaults.
 *
 * @throws ConfigError whose `field` names the offending setting, prefixed `custom.quotaOrchestrator.` for the
 * service's settings (e.g. `custom.quotaOrchestrator.quotas[0].limit`), or `functions.<name>.timeout`,
 * `custom.queues.maxReceiveCount`, `custom.queues.fifoMaxReceiveCount`, a field of `custom.alarms`, or the `environment` entry that would be overwritten.
 */
export function resolveQuotaSettings(service: ServiceView): QuotaEnvironment {
  const settings = settingsOf(service);
  const workerTimeoutMs = checkFunctionTimeouts(service);
  if (service.custom?.alarms !== undefined) checkAlarmSettings(service.custom.alarms);
  const { inLanes, lanes } = laneInputs(settings, SETTINGS_PATH);
  const checked = lanes.map((lane) => checkLane(service, lane, workerTimeoutMs));
  const prefix = inLanes ? queueNamePrefix(service.custom?.names) : undefined;
  const providerEnv =
    prefix !== undefined
      ? lanesEnvironment(checked, prefix, queueUrlPrefix(service.custom?.names, prefix))
      : environmentOf(checked[0]?.written ?? {}, CONFIG_ENV);
  const workerEnv = inLanes ? {} : environmentOf(settings, WORKER_ENV);
  refuseOverwrite(service.provider.environment, providerEnv, 'provider.environment');
  refuseOverwrite(service.functions?.worker?.environment, workerEnv, 'functions.worker.environment');
  refuseOverwrite(service.functions?.orchestrator?.environment, providerEnv, 'functions.orchestrator.environment');
  refuseOverwrite(service.functions?.worker?.environment, providerEnv, 'functions.worker.environment');
  if (inLanes) {
    const provider = withoutQueueUrls(service.provider.environment);
    for (const fn of ['orchestrator', 'worker'])
      checkEnvironmentSize(
        `${SETTINGS_PATH}.${LANES_KEY}`,
        fn,
        provider,
        providerEnv,
        service.functions?.[fn]?.environment,
      );
  }
  return Object.freeze({
    lanes: checked.map(({ config, worker }) => ({ config, worker })),
    inLanes,
    ...(prefix === undefined ? {} : { queueNamePrefix: prefix }),
    provider: Object.freeze(providerEnv),
    worker: Object.freeze(workerEnv),
    workerStatements: checked.flatMap(({ lane, worker }) =>
      worker.results === undefined
        ? []
        : [resultDestinationStatement(worker.results, inLanes ? logicalIdPrefix(lane.lane) : '')],
    ),
    orchestratorEvents: scheduleToAdd(service.functions?.orchestrator?.events),
  });
}

/** `environment` without the queue URLs of the one-lane form, which the lanes form replaces (see `laneEnvs`). */
export function withoutQueueUrls(environment: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const urls: readonly string[] = Object.values(QUEUE_URL_ENV);
  return Object.fromEntries(Object.entries(environment ?? {}).filter(([name]) => !urls.includes(name)));
}

/**
 * Checks one lane's settings as {@link resolveQuotaSettings} says, each refusal naming the setting where it is
 * written, and returns them parsed and as written.
 * @throws ConfigError naming the setting.
 */
function checkLane(
  service: ServiceView,
  lane: LaneInput,
  workerTimeoutMs: number,
): WrittenLane & { readonly config: ServiceConfig; readonly worker: WorkerSettings } {
  const { written, config } = parseServiceSettings(lane, workerTimeoutMs);
  checkVisibilityOutlastsEvent(service, config, workerTimeoutMs);
  checkRedrive(service.custom?.queues, config, lane.fieldOf('retry.maxAttempts'));
  const worker = parseWorkerSettings(lane.settings, config, packagingOrigin(lane));
  if (worker.results !== undefined) checkResultRegion(worker.results, service.provider.region, lane);
  return { lane, written, config, worker };
}

/**
 * Checks that a result destination given by ARN is in the stack's region (`provider.region`, when it is a literal):
 * the worker's clients send in its own region, and neither GetQueueUrl nor PutEvents reaches another.
 * @throws ConfigError naming `custom.quotaOrchestrator.results.queueArn` or `.busName`.
 */
function checkResultRegion(destination: ResultDestination, region: unknown, lane: LaneInput): void {
  const [key, arn] = destination.type === 'sqs' ? ['queueArn', destination.queueArn] : ['busName', destination.busName];
  const arnRegion = arn.startsWith('arn:') ? arn.split(':')[3] : undefined;
  if (typeof region !== 'string' || arnRegion === undefined || arnRegion === region) return;
  throw new ConfigError(
    lane.fieldOf(`results.${key}`),
    `must be in the stack's region (provider.region ${region}), where the worker sends; got ${arnRegion}`,
  );
}

/**
 * The orchestrator's schedule event, unless `events` already holds it (a second run of the plugin on one service).
 * @throws ConfigError when serverless.yml gives the orchestrator a schedule of its own: the period is named in
 * `lib/schedule.ts` alone, since each run's deadline is aligned to it.
 */
function scheduleToAdd(events: readonly unknown[] | undefined): readonly { readonly schedule: string }[] {
  const schedules = (events ?? [])
    .filter((event): event is { schedule: unknown } => isRecord(event) && 'schedule' in event)
    .map((event) => event.schedule);
  if (schedules.some((schedule) => schedule !== SCHEDULE_EXPRESSION)) {
    throw new ConfigError(
      'functions.orchestrator.events',
      `must not set a schedule: the plugin adds ${SCHEDULE_EXPRESSION}, the period each run's deadline is aligned to (lib/schedule.ts); got ${describeValue(schedules)}`,
    );
  }
  return schedules.length === 0 ? [{ schedule: SCHEDULE_EXPRESSION }] : [];
}

/**
 * Refuses a variable serverless.yml sets by hand that the settings would set too: one of the two would silently
 * win. An equal value is accepted, so running the plugin twice on one service is harmless.
 * @throws ConfigError naming the environment entry.
 */
function refuseOverwrite(
  existing: Readonly<Record<string, unknown>> | undefined,
  added: Readonly<Record<string, unknown>>,
  where: string,
): void {
  for (const [name, value] of Object.entries(added)) {
    const current = existing?.[name];
    if (current !== undefined && JSON.stringify(current) !== JSON.stringify(value)) {
      throw new ConfigError(`${where}.${name}`, `is set from ${SETTINGS_PATH}; remove it from ${where}`);
    }
  }
}
