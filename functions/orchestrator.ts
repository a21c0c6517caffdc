import { runDeadline } from '../lib/services/orchestrator/runDeadline';
import { runOrchestrator, type LaneRunDeps } from '../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent, RunSummary } from '../lib/services/orchestrator/types';
import {
  orchestratorClients,
  orchestratorDepsFromEnv,
  type OrchestratorBaseDeps,
  type OrchestratorClients,
} from '../lib/wiring/orchestratorDeps';
import type { LambdaContextLike, Log } from '../lib/adapters/log';
import { OrchestratorMetrics } from '../lib/wiring/eventMetrics';
import { lambdaTelemetry, metricScope, withLane, type Telemetry } from '../lib/adapters/telemetry';
import { deploymentFromEnv, type Env } from '../lib/configFromEnv';
import { SCHEDULE_PERIOD_MS } from '../lib/schedule';
import { laneEnvs, readLane } from '../lib/lanes/laneEnv';
import { queuesHoldWork } from '../lib/services/orchestrator/queuesHoldWork';
import { PoolHub } from '../lib/services/orchestrator/poolHub';

/** The part of the Lambda context the orchestrator reads (its log lines carry the rest). */
export interface OrchestratorContext extends LambdaContextLike {
  getRemainingTimeInMillis(): number;
}

/** What a run returns: its summary, or in a deployment of several lanes each lane's, by lane. */
export type OrchestratorResult = RunSummary | Readonly<Record<string, RunSummary>>;

/** The summary of a lane's run that found its queues empty (see `queuesHoldWork`). */
const IDLE: RunSummary = Object.freeze({
  lease: 'idle',
  dispatched: 0,
  deadLettered: 0,
  healthChecks: 0,
  invokeFailures: 0,
});

/** Kept free before the Lambda timeout for the last flush and the lease release. */
export const EXIT_RESERVE_MS = 5_000;
/** A scheduled run stops this long before the next tick. */
export const TICK_MARGIN_MS = 500;

/** The EventBridge instant that started the run, if the event is a scheduled one. */
function scheduledAt(event: unknown): number | undefined {
  const time = typeof event === 'object' && event !== null ? (event as { time?: unknown }).time : undefined;
  const at = typeof time === 'string' ? Date.parse(time) : Number.NaN;
  return Number.isFinite(at) ? at : undefined;
}

/**
 * Orchestrator events worth a log line: per-dispatch events would flood the log, the run summary counts them.
 * Failed state and queue calls are logged at each try, which their back-off (up to 10 s) keeps few. A quota
 * exhaustion is logged once per episode of a run (so about once a run while it lasts). A circuit transition this run
 * wrote is logged; so is a change it reads after its first read (another writer's: a worker's, an operator's) that
 * stops or restarts dispatch (closed to anything else, or back).
 */
function logEvent(log: Log, event: OrchestratorEvent): void {
  if (event.type === 'dead-lettered') log('warn', 'dead-lettered a message that can never be dispatched', event);
  else if (event.type === 'invoke-failed') log('warn', 'worker invoke failed; backing off', event);
  else if (event.type === 'health-check-sent') log('info', 'health check sent', event);
  else if (event.type === 'state-unavailable') log('warn', 'state store call failed; backing off', event);
  else if (event.type === 'state-recovered') log('info', 'state store available again', event);
  else if (event.type === 'queue-unavailable') log('warn', 'queue call failed; backing off', event);
  else if (event.type === 'quota-exhausted')
    log(
      'warn',
      `quota ${event.tier} exhausted until ${new Date(event.until).toISOString()}; not receiving until then`,
      event,
    );
  else if (event.type === 'quota-available') log('info', `quota ${event.tier} available again; receiving`, event);
  else if (event.type === 'message-held')
    log('warn', `message held back by quota ${event.tier} until ${new Date(event.until).toISOString()}`, event);
  else if (event.type === 'limit-changed')
    log(
      event.to < event.from ? 'warn' : 'info',
      `limit of ${event.tier} learnt ${event.from} -> ${event.to} (${event.source}; configured ${event.configured})`,
      event,
    );
  else if (event.type === 'limits-overridden')
    log(
      'info',
      `limits overridden${event.by === undefined ? ' no more (reset)' : ` by ${event.by}`}: ${event.tiers
        .map(
          ({ tier, from, to, meanwhile }) =>
            `${tier} ${from} -> ${to}${meanwhile === undefined ? '' : ` (${meanwhile} until the next run)`}`,
        )
        .join(', ')}`,
      event,
    );
  else if (event.type === 'limits-unread') log('warn', 'limit readings unread; learning nothing this flush', event);
  else if (event.type === 'circuit-transition')
    log(event.to === 'open' ? 'warn' : 'info', `circuit ${event.from} -> ${event.to}: ${event.reason}`, { ...event });
  else if (
    event.type === 'circuit-seen' &&
    event.previous !== undefined &&
    (event.previous === 'closed') !== (event.status === 'closed')
  )
    log(
      event.status === 'closed' ? 'info' : 'warn',
      `circuit read ${event.status}; ${event.status === 'closed' ? 'dispatching' : 'dispatch stopped'}`,
      event,
    );
}

/**
 * The orchestrator handler on given dependencies: one run per scheduled tick (steps 1–4 of docs/architecture.md),
 * budgeted from `context.getRemainingTimeInMillis()` and ending just before a tick (see `runDeadline`). Its events
 * become log lines (see `logEvent`) and metrics (see `OrchestratorMetrics`), published every 30 s of the run and at its
 * end, whether it returns or throws.
 * @param shouldStop ends a run early, as a Lambda timeout would but with a clean exit (the local run uses it once
 * every job has ended); production runs never stop early.
 * @param skipWhenIdle whether the run first asks whether the lane's queues hold work, and takes no lease when they
 * hold none (a lane of several: see `queuesHoldWork`); its metrics still publish the heartbeat.
 */
export function makeHandler(
  deps: OrchestratorBaseDeps & Pick<LaneRunDeps, 'pools'>,
  telemetry: Telemetry,
  shouldStop?: () => boolean,
  skipWhenIdle = false,
) {
  const { log } = telemetry;
  return async (event: unknown, context: OrchestratorContext): Promise<RunSummary> => {
    telemetry.setContext?.(context);
    const now = deps.clock.now();
    const at = scheduledAt(event);
    const deadline = runDeadline({
      now,
      remainingMs: context.getRemainingTimeInMillis(),
      ...(at === undefined ? {} : { scheduledAt: at }),
      tickMs: SCHEDULE_PERIOD_MS,
      exitReserveMs: EXIT_RESERVE_MS,
      tickMarginMs: TICK_MARGIN_MS,
    });
    const owner = `orchestrator-${context.awsRequestId}`;
    const metrics = new OrchestratorMetrics(telemetry.metrics, metricScope(telemetry, deps.config.lane), now);
    const onEvent = (e: OrchestratorEvent): void => {
      logEvent(log, e);
      metrics.observe(e);
    };
    try {
      const summary =
        skipWhenIdle && !(await queuesHoldWork(deps.queues))
          ? IDLE
          : await runOrchestrator(
              { ...deps, owner, onEvent },
              { deadline, ...(shouldStop === undefined ? {} : { shouldStop }) },
            );
      // `unavailable`: the state store failed all run long, so nothing was dispatched; worth a look if it repeats.
      log(summary.lease === 'unavailable' ? 'warn' : 'info', 'orchestrator run ended', {
        owner,
        lane: deps.config.lane,
        ...summary,
      });
      return summary;
    } finally {
      metrics.end(deps.clock.now());
    }
  };
}

/**
 * Builds the handler from an environment (validated here: a bad value fails with the variable's name, and the
 * lane's in `LANES`). The local run calls this with each function's environment from the packaged template.
 *
 * A deployment of several lanes (`LANES`, see `laneEnvs`) runs one lane's run per lane in the one invocation, side by
 * side: each takes its lane's lease, ledger and circuit, as a one-lane deployment's run does, so a lane held by its
 * quota, its circuit, an operator or an outage never delays another. A lane whose queues are empty takes no lease.
 * Lanes that draw from pools share them through one `PoolHub`: a pool's lease is taken while a lane run draws from it.
 * Every lane's run ends before the invocation returns the summaries by lane (or throws the first lane's error).
 */
export function handlerFromEnv(
  env: Env,
  clients: OrchestratorClients = orchestratorClients(),
  telemetry: Telemetry = lambdaTelemetry(undefined, undefined, deploymentFromEnv(env)),
  shouldStop?: () => boolean,
): (event: unknown, context: OrchestratorContext) => Promise<OrchestratorResult> {
  const read = laneEnvs(env).map((lane) => ({
    lane,
    deps: readLane(lane, (laneEnv) => orchestratorDepsFromEnv(laneEnv, clients)),
  }));
  const pools = read.some(({ deps }) => deps.config.pools !== undefined) ? new PoolHub() : undefined;
  const lanes = read.map(({ lane, deps }) => ({
    lane,
    handle: makeHandler(
      pools === undefined ? deps : { ...deps, pools },
      lane.inLanes ? withLane(telemetry, lane.lane) : telemetry,
      shouldStop,
      lane.inLanes,
    ),
  }));
  const [first] = lanes;
  if (first !== undefined && !first.lane.inLanes) return first.handle;
  return async (event, context) => {
    const ended = await Promise.allSettled(lanes.map(({ handle }) => handle(event, context)));
    const failed = ended.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return Object.fromEntries(
      lanes.map(({ lane }, i) => [lane.lane, (ended[i] as PromiseFulfilledResult<RunSummary>).value]),
    );
  };
}

let coldStart: ReturnType<typeof handlerFromEnv> | undefined;

/** Lambda entry point: the configuration is read and validated once per container, at its first event. */
export const handler = (event: unknown, context: OrchestratorContext): Promise<OrchestratorResult> =>
  (coldStart ??= handlerFromEnv(process.env))(event, context);
