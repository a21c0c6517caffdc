import type { LambdaContextLike, LogLevel } from '../../lib/adapters/log';
import { EmfMetrics } from '../../lib/adapters/metrics/emfMetrics';
import type { Telemetry } from '../../lib/adapters/telemetry';
import { captureStdout, type CapturedStdout } from './emf';

/** One line a handler logged. */
export interface LogLine {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>> | undefined;
}

/** A handler's telemetry, and what it recorded. */
export interface RecordedTelemetry {
  /** What to hand the handler. */
  readonly telemetry: Telemetry;
  /** Every line logged, in order. */
  readonly lines: LogLine[];
  /** Every Lambda context the handler was given, in order. */
  readonly contexts: LambdaContextLike[];
  /** The EMF lines its metrics write to stdout (caught until the test ends: see {@link captureStdout}). */
  readonly stdout: CapturedStdout;
}

/** The deployment of the handlers under test: their metrics carry its service and stage before the lane. */
export const TEST_DEPLOYMENT = { service: 'quota-orchestrator', stage: 'test' } as const;

/**
 * Telemetry for a handler under test, in {@link TEST_DEPLOYMENT}: it keeps the log lines and Lambda contexts, and
 * catches the EMF metrics.
 */
export function recordingTelemetry(): RecordedTelemetry {
  const lines: LogLine[] = [];
  const contexts: LambdaContextLike[] = [];
  const stdout = captureStdout();
  const telemetry: Telemetry = {
    log: (level, message, fields) => lines.push({ level, message, fields }),
    metrics: new EmfMetrics(),
    deployment: TEST_DEPLOYMENT,
    setContext: (context) => contexts.push(context),
  };
  return { telemetry, lines, contexts, stdout };
}
