import { Logger } from '@aws-lambda-powertools/logger';

/** Severity of a log line. */
export type LogLevel = 'info' | 'warn' | 'error';

/** Writes one structured log line: CloudWatch Logs Insights can query its fields. */
export type Log = (level: LogLevel, message: string, fields?: Readonly<Record<string, unknown>>) => void;

/** The `service` of every log line (and the Powertools service name of the functions). */
export const SERVICE_NAME = 'quota-orchestrator';

/** The part of a Lambda context that log lines carry (the runtime passes the whole context; Powertools reads the rest). */
export interface LambdaContextLike {
  readonly awsRequestId: string;
}

/**
 * A Powertools Logger for the service: one JSON object per line with `level`, `message`, `timestamp` (ISO 8601),
 * `service` and, once given one with `addContext`, the Lambda context (`function_request_id`, `function_name`,
 * `cold_start`...). Its level follows `POWERTOOLS_LOG_LEVEL`, or Lambda's `AWS_LAMBDA_LOG_LEVEL` when the function's
 * log format is JSON; @default INFO.
 */
export function powertoolsLogger(): Logger {
  return new Logger({ serviceName: SERVICE_NAME });
}

/**
 * A {@link Log} on a Powertools `logger`: each line is one of the logger's, its fields merged into the JSON object.
 * Powertools drops a field named like one of its own keys (`level`, `message`, `timestamp`, `service`), with a
 * warning line: the services' fields never are. Warnings and errors go to stderr, the rest to stdout.
 */
export function powertoolsLog(logger: Logger): Log {
  return (level, message, fields = {}) => logger[level](message, { ...fields });
}

/** Adds the invocation's Lambda `context` to every line `logger` writes after. */
export function addLambdaContext(logger: Logger, context: LambdaContextLike): void {
  // The runtime's context has every field Powertools reads; the handlers' types name only what they use.
  logger.addContext(context as Parameters<Logger['addContext']>[0]);
}
