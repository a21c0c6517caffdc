import type { Logger } from '@aws-lambda-powertools/logger';
import { addLambdaContext, powertoolsLog, powertoolsLogger, type LambdaContextLike, type Log } from './log';
import { EmfMetrics, type MetricSink } from './metrics/emfMetrics';
import type { Deployment, MetricScope } from './metrics/serviceMetrics';

/** Where a handler reports: its log, its metrics, and the invocation its lines belong to. */
export interface Telemetry {
  readonly log: Log;
  readonly metrics: MetricSink;
  /** The deployment its metrics are scoped to (with the lane, see `MetricScope`). @default {@link UNDEPLOYED} */
  readonly deployment?: Deployment;
  /** Told of each invocation's Lambda context, to add it to the log lines that follow. @default ignored */
  readonly setContext?: (context: LambdaContextLike) => void;
}

/** The deployment of a function run outside one (tests, the local stack): their metrics go nowhere. */
export const UNDEPLOYED: Deployment = { service: 'quota-orchestrator', stage: 'local' };

/**
 * A function's telemetry in Lambda: JSON log lines through a Powertools Logger (with each invocation's context) and
 * EMF metrics through Powertools Metrics, both on stdout, scoped to `deployment`.
 * @default logger a new `powertoolsLogger()`; metrics a new {@link EmfMetrics}; deployment {@link UNDEPLOYED}
 */
export function lambdaTelemetry(
  logger: Logger = powertoolsLogger(),
  metrics: MetricSink = new EmfMetrics(),
  deployment: Deployment = UNDEPLOYED,
): Telemetry {
  return {
    log: powertoolsLog(logger),
    metrics,
    deployment,
    setContext: (context) => addLambdaContext(logger, context),
  };
}

/** The metric scope of a handler's `telemetry` on `lane`. */
export function metricScope(telemetry: Telemetry, lane: string): MetricScope {
  const { service, stage } = telemetry.deployment ?? UNDEPLOYED;
  return { service, stage, lane };
}

/** `telemetry` whose log lines each carry `lane`: the lanes of a deployment of several log side by side. */
export function withLane(telemetry: Telemetry, lane: string): Telemetry {
  return { ...telemetry, log: (level, message, fields) => telemetry.log(level, message, { lane, ...fields }) };
}
