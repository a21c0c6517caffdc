import type { Logger } from '@aws-lambda-powertools/logger';
import { addLambdaContext, powertoolsLog, powertoolsLogger, type LambdaContextLike, type Log } from './log';
import { EmfMetrics, type MetricSink } from './metrics/emfMetrics';

/** Where a handler reports: its log, its metrics, and the invocation its lines belong to. */
export interface Telemetry {
  readonly log: Log;
  readonly metrics: MetricSink;
  /** Told of each invocation's Lambda context, to add it to the log lines that follow. @default ignored */
  readonly setContext?: (context: LambdaContextLike) => void;
}

/**
 * A function's telemetry in Lambda: JSON log lines through a Powertools Logger (with each invocation's context) and
 * EMF metrics through Powertools Metrics, both on stdout.
 * @default logger a new `powertoolsLogger()`; metrics a new {@link EmfMetrics}
 */
export function lambdaTelemetry(
  logger: Logger = powertoolsLogger(),
  metrics: MetricSink = new EmfMetrics(),
): Telemetry {
  return { log: powertoolsLog(logger), metrics, setContext: (context) => addLambdaContext(logger, context) };
}
