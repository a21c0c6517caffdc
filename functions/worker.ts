import { workerClients, workerDepsFromEnv, type WorkerClients } from '../lib/wiring/workerDeps';
import { idempotencyNamespace } from '../lib/lanes/laneEnv';
import type { LambdaContextLike, Log } from '../lib/adapters/log';
import { WorkerMetrics } from '../lib/wiring/eventMetrics';
import { lambdaTelemetry, metricScope, withLane, type Telemetry } from '../lib/adapters/telemetry';
import { laneEnvs, readLane, type LaneEnv } from '../lib/lanes/laneEnv';
import { deploymentFromEnv, type Env } from '../lib/configFromEnv';
import type { JobEvent, WorkerEvent } from '../lib/ports/Invoker';
import { processWorkerEvent } from '../lib/services/worker/processWorkerEvent';
import type { JobOutcome, WorkerDeps, WorkerOutcome, WorkerReport } from '../lib/services/worker/types';

/** Why `job` is not a job event this worker reads, or `undefined` when it is one. */
function jobProblem(job: unknown): string | undefined {
  const body = typeof job === 'object' && job !== null ? (job as { body?: unknown }).body : undefined;
  return typeof body === 'string'
    ? undefined
    : `must carry the message body as a string of JSON text; got ${body === null ? 'null' : typeof body}`;
}

/**
 * Checks that an event is one the orchestrator sends. Anything else is a wrong invocation, not a job: it is thrown
 * back, so Lambda's async retries end in the worker's on-failure queue where an operator sees it. That includes a job
 * event whose body is not the message's text (one of an older orchestrator, which carried the parsed body): its
 * message was not deleted, so it reappears after its visibility timeout and is dispatched again as text.
 * @throws Error naming what is wrong with the event.
 */
export function asWorkerEvent(event: unknown): WorkerEvent {
  const { kind, jobs } =
    typeof event === 'object' && event !== null ? (event as { kind?: unknown; jobs?: unknown }) : {};
  if (kind === 'job') {
    const problem = jobProblem(event);
    if (problem !== undefined) throw new Error(`worker job event ${problem}`);
  }
  if (kind === 'batch') {
    if (!Array.isArray(jobs) || jobs.length === 0)
      throw new Error('worker batch event must carry a non-empty list of jobs');
    const problem = jobs.map((job, i) => [i, jobProblem(job)] as const).find(([, p]) => p !== undefined);
    if (problem !== undefined) throw new Error(`worker batch event's job ${problem[0]} ${problem[1]}`);
  }
  if (kind === 'job' || kind === 'batch' || kind === 'health-check') return event as WorkerEvent;
  throw new Error(
    `worker event must be an object with kind 'job', 'batch' or 'health-check'; got kind ${JSON.stringify(kind)}`,
  );
}

/**
 * Logs how a job ended, with its keys: one line per job, unless it was dead-lettered (its report is logged with the
 * reason instead).
 */
function logJob(log: Log, job: JobEvent, outcome: JobOutcome): void {
  if (outcome === 'dead-lettered') return;
  const { messageId, dispatchId, idempotencyKey, attempt } = job;
  log(outcome === 'kept' ? 'warn' : 'info', `worker event ${outcome}`, {
    kind: 'job',
    outcome,
    messageId,
    dispatchId,
    idempotencyKey,
    attempt,
  });
}

/**
 * Logs the reports worth a line: a circuit transition this worker wrote, a job dead-lettered with its reason, a
 * result that could not be delivered, and an API caller that could not get ready (its key unread), with the reason.
 */
function logReport(log: Log, report: WorkerReport): void {
  if (report.type === 'circuit-transition')
    log(report.to === 'open' ? 'warn' : 'info', `circuit ${report.from} -> ${report.to}: ${report.reason}`, {
      ...report,
    });
  else if (report.type === 'dead-lettered') log('warn', `job dead-lettered: ${report.reason}`, { ...report });
  else if (report.type === 'result-undelivered') log('warn', `result undelivered: ${report.reason}`, { ...report });
  else if (report.type === 'caller-not-ready') log('warn', `API caller not ready: ${report.reason}`, { ...report });
}

/**
 * The worker handler on given dependencies: one job, a batch of jobs or a health check per asynchronous invocation.
 * Its reports and job outcomes become log lines and metrics (see `WorkerMetrics`), published at the end of the
 * invocation, whether it returns or throws.
 */
export function makeHandler(deps: WorkerDeps, telemetry: Telemetry) {
  const { log } = telemetry;
  const metrics = new WorkerMetrics(telemetry.metrics, metricScope(telemetry, deps.config.lane));
  const reporting: WorkerDeps = {
    ...deps,
    onEvent: (report) => {
      logReport(log, report);
      metrics.observe(report);
    },
  };
  return async (event: unknown, context?: LambdaContextLike): Promise<WorkerOutcome> => {
    if (context !== undefined) telemetry.setContext?.(context);
    try {
      const workerEvent = asWorkerEvent(event);
      const outcome = await processWorkerEvent(workerEvent, reporting);
      const jobs = workerEvent.kind === 'job' ? [workerEvent] : workerEvent.kind === 'batch' ? workerEvent.jobs : [];
      const outcomes = (workerEvent.kind === 'job' ? [outcome] : outcome) as readonly JobOutcome[];
      jobs.forEach((job, i) => {
        logJob(log, job, outcomes[i] ?? 'succeeded');
        metrics.job(outcomes[i] ?? 'succeeded');
      });
      if (workerEvent.kind === 'health-check' && outcome !== 'healthy')
        log('info', `worker event ${String(outcome)}`, { kind: 'health-check', outcome, checkId: workerEvent.checkId });
      return outcome;
    } finally {
      metrics.publish();
    }
  };
}

/** A worker handler: one event, with the Lambda context when there is one. */
export type WorkerHandler = (event: unknown, context?: LambdaContextLike) => Promise<WorkerOutcome>;

/**
 * The handler of a deployment's lanes (see `laneEnvs`): `build` makes each lane's from the lane's environment (its
 * refusals named as the lane's settings are written, see `readLane`). A one-lane deployment's is its lane's; in a
 * deployment of several, an event goes to its `lane`'s.
 * @throws Error, from the handler, for an event of a lane the deployment does not have: Lambda puts it in the
 * worker's on-failure queue, and its message reappears after its visibility timeout.
 */
export function routeByLane<R>(
  env: Env,
  build: (laneEnv: Env, lane: LaneEnv) => (event: unknown, context?: LambdaContextLike) => Promise<R>,
): (event: unknown, context?: LambdaContextLike) => Promise<R> {
  const lanes = laneEnvs(env);
  const handlers = new Map(lanes.map((lane) => [lane.lane, readLane(lane, (laneEnv) => build(laneEnv, lane))]));
  const [first] = lanes;
  if (first !== undefined && !first.inLanes) return handlers.get(first.lane)!;
  return async (event, context) => {
    const lane = typeof event === 'object' && event !== null ? (event as { lane?: unknown }).lane : undefined;
    const handle = typeof lane === 'string' ? handlers.get(lane) : undefined;
    if (handle === undefined)
      throw new Error(
        `worker event's lane must be one of this deployment's lanes (${[...handlers.keys()].join(', ')}); got ${JSON.stringify(lane)}`,
      );
    return await handle(event, context);
  };
}

/**
 * Builds the handler from an environment (validated here: a bad value fails with the variable's name, and the
 * lane's in `LANES`). In a deployment of several lanes, each lane has its own settings, API caller and key (see
 * {@link routeByLane}), and its log lines carry its name.
 */
export function handlerFromEnv(
  env: Env,
  clients: WorkerClients = workerClients(),
  telemetry: Telemetry = lambdaTelemetry(undefined, undefined, deploymentFromEnv(env)),
): WorkerHandler {
  return routeByLane(env, (laneEnv, lane) =>
    makeHandler(
      workerDepsFromEnv(laneEnv, clients, idempotencyNamespace(lane)),
      lane.inLanes ? withLane(telemetry, lane.lane) : telemetry,
    ),
  );
}

let coldStart: ReturnType<typeof handlerFromEnv> | undefined;

/** Lambda entry point: the configuration is read and validated once per container, at its first event. */
export const handler = (event: unknown, context?: LambdaContextLike): Promise<WorkerOutcome> =>
  (coldStart ??= handlerFromEnv(process.env))(event, context);
