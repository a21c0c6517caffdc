import type { OrchestratorEvent, RunSummary } from '../lib/services/runOrchestrator';
import { runOrchestrator } from '../lib/services/runOrchestrator';
import { runDeadline } from '../lib/services/runDeadline';
import { orchestratorClients, orchestratorDepsFromEnv, type OrchestratorBaseDeps, type OrchestratorClients } from '../lib/wiring/orchestratorDeps';
import { jsonLog, type Log } from '../lib/adapters/log';
import type { Env } from '../lib/configFromEnv';
import { SCHEDULE_PERIOD_MS } from '../lib/schedule';

/** The part of the Lambda context the orchestrator reads. */
export interface OrchestratorContext {
  readonly awsRequestId: string;
  getRemainingTimeInMillis(): number;
}

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

/** The CloudWatch namespace of the metrics the orchestrator's log lines carry. */
export const METRIC_NAMESPACE = 'QuotaOrchestrator';

/**
 * The fields that make a `quota-exhausted` line a metric in CloudWatch Embedded Metric Format: `QuotaExhaustedForMs`
 * (how long `tier` stays exhausted from `at`), in {@link METRIC_NAMESPACE} with the dimensions lane and tier.
 */
function exhaustionMetric(lane: string, event: Extract<OrchestratorEvent, { type: 'quota-exhausted' }>): Record<string, unknown> {
  return {
    _aws: {
      Timestamp: event.at,
      CloudWatchMetrics: [{ Namespace: METRIC_NAMESPACE, Dimensions: [['lane', 'tier']], Metrics: [{ Name: 'QuotaExhaustedForMs', Unit: 'Milliseconds' }] }],
    },
    lane,
    QuotaExhaustedForMs: Math.max(0, event.until - event.at),
  };
}

/**
 * Orchestrator events worth a log line: per-dispatch events would flood the log, the run summary counts them.
 * Failed state and queue calls are logged at each try, which their back-off (up to 10 s) keeps few. A quota
 * exhaustion is logged once per episode of a run (so about once a run while it lasts), as a metric too.
 */
function logEvent(log: Log, lane: string, event: OrchestratorEvent): void {
  if (event.type === 'dead-lettered') log('warn', 'dead-lettered a message that can never be dispatched', event);
  else if (event.type === 'invoke-failed') log('warn', 'worker invoke failed; backing off', event);
  else if (event.type === 'health-check-sent') log('info', 'health check sent', event);
  else if (event.type === 'state-unavailable') log('warn', 'state store call failed; backing off', event);
  else if (event.type === 'state-recovered') log('info', 'state store available again', event);
  else if (event.type === 'queue-unavailable') log('warn', 'queue call failed; backing off', event);
  else if (event.type === 'quota-exhausted') {
    log('warn', `quota ${event.tier} exhausted until ${new Date(event.until).toISOString()}; not receiving until then`, { ...event, ...exhaustionMetric(lane, event) });
  } else if (event.type === 'quota-available') log('info', `quota ${event.tier} available again; receiving`, event);
  else if (event.type === 'message-held') log('warn', `message held back by quota ${event.tier} until ${new Date(event.until).toISOString()}`, event);
}

/**
 * The orchestrator handler on given dependencies: one run per scheduled tick (steps 1–4 of DESIGN's architecture),
 * budgeted from `context.getRemainingTimeInMillis()` and ending just before a tick (see `runDeadline`).
 * @param shouldStop ends a run early, as a Lambda timeout would but with a clean exit (the local run uses it once
 * every job has ended); production runs never stop early.
 */
export function makeHandler(deps: OrchestratorBaseDeps, log: Log, shouldStop?: () => boolean) {
  return async (event: unknown, context: OrchestratorContext): Promise<RunSummary> => {
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
    const summary = await runOrchestrator({ ...deps, owner, onEvent: (e) => logEvent(log, deps.config.lane, e) }, { deadline, ...(shouldStop === undefined ? {} : { shouldStop }) });
    // `unavailable`: the state store failed all run long, so nothing was dispatched; worth a look if it repeats.
    log(summary.lease === 'unavailable' ? 'warn' : 'info', 'orchestrator run ended', { owner, ...summary });
    return summary;
  };
}

/**
 * Builds the handler from an environment (validated here: a bad value fails with the variable's name).
 * The local run calls this with each function's environment from the packaged template.
 */
export function handlerFromEnv(env: Env, clients: OrchestratorClients = orchestratorClients(), log: Log = jsonLog(), shouldStop?: () => boolean) {
  return makeHandler(orchestratorDepsFromEnv(env, clients), log, shouldStop);
}

let coldStart: ReturnType<typeof handlerFromEnv> | undefined;

/** Lambda entry point: the configuration is read and validated once per container, at its first event. */
export const handler = (event: unknown, context: OrchestratorContext): Promise<RunSummary> => (coldStart ??= handlerFromEnv(process.env))(event, context);
