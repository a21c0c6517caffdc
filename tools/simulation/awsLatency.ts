import type { Clock } from '../../lib/ports/Clock';
import { parseSettings } from '../../lib/domain/settings';

/**
 * How long each AWS request takes, per service, added to what the local emulators (or memory) take: on localhost a
 * request takes well under a millisecond, in an AWS region Lambda's `Invoke` takes about 15 ms, a DynamoDB read or
 * write about 4 ms and an SQS call about 10 ms.
 */
export interface AwsLatencyProfile {
  readonly lambdaMs: number;
  readonly dynamodbMs: number;
  readonly sqsMs: number;
}

/** AWS's latencies from a function in the same region (see {@link AwsLatencyProfile}). */
export const AWS_LATENCY: AwsLatencyProfile = Object.freeze({ lambdaMs: 15, dynamodbMs: 4, sqsMs: 10 });

/** No added latency: the emulators' own. */
export const NO_LATENCY: AwsLatencyProfile = Object.freeze({ lambdaMs: 0, dynamodbMs: 0, sqsMs: 0 });

/**
 * Validates a latency profile (`{"lambdaMs","dynamodbMs","sqsMs"}`, each 0 to 10 000, missing ones 0).
 * @throws ConfigError naming the field and its allowed range.
 */
export function parseAwsLatency(input: unknown, field = 'awsLatency'): AwsLatencyProfile {
  const range = { min: 0, max: 10_000 };
  return parseSettings(input, field, NO_LATENCY, { lambdaMs: range, dynamodbMs: range, sqsMs: range });
}

/**
 * `port` with every method call made `ms` later on `clock` (rounded to a whole ms): a port in memory that answers as slowly as the AWS service
 * it stands for. Properties that are not functions are read as they are. Each call is counted in `calls` by
 * `prefix.method`, when given.
 */
export function withLatency<T extends object>(
  port: T,
  clock: Clock,
  ms: number,
  calls?: { prefix: string; counts: Map<string, number> },
): T {
  // Whole milliseconds, as Date.now() gives them: the services' times are integers (a measured mean is not).
  const wait = Math.round(ms);
  if (wait === 0 && calls === undefined) return port;
  return new Proxy(port, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (calls !== undefined) {
          const name = `${calls.prefix}.${String(key)}`;
          calls.counts.set(name, (calls.counts.get(name) ?? 0) + 1);
        }
        if (wait > 0) await clock.sleep(wait);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
