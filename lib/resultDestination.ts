import { describeValue } from './domain/describeValue';
import { ConfigError } from './errors';
import { isRecord } from './settingChecks';

/** An SQS queue that receives one message per succeeded job, its body the result as JSON. */
export interface SqsResultSetting {
  readonly type: 'sqs';
  /**
   * The queue's ARN, e.g. `arn:aws:sqs:us-east-1:123456789012:my-results` (a literal: an existing queue's). The
   * worker's role is granted `sqs:SendMessage` on it. A queue encrypted with a customer managed KMS key also needs
   * `kms:GenerateDataKey` and `kms:Decrypt` on that key, which you grant.
   */
  readonly queueArn: string;
}

/** An EventBridge bus that receives one event per succeeded job, its `detail` the result. */
export interface EventBridgeResultSetting {
  readonly type: 'eventbridge';
  /** The bus's name (`default` for the account's default bus) or ARN. The worker's role is granted `events:PutEvents` on it. */
  readonly busName: string;
  /** The events' `source`: 1 to 256 characters, not starting with `aws.`. @default quota-orchestrator */
  readonly source: string;
  /** The events' `detail-type`: 1 to 128 characters. @default Job Result */
  readonly detailType: string;
}

/**
 * Where the worker's default result handler sends the API's answer to each succeeded job
 * (`custom.quotaOrchestrator.results`; the worker reads it from `RESULT_DESTINATION`). Absent: no destination.
 */
export type ResultDestination = SqsResultSetting | EventBridgeResultSetting;

/** The defaults of an EventBridge destination's optional fields. */
export const EVENTBRIDGE_RESULT_DEFAULTS = Object.freeze({ source: 'quota-orchestrator', detailType: 'Job Result' });

const SQS_QUEUE_ARN = /^arn:aws[a-z-]*:sqs:[a-z0-9-]+:\d{12}:(?:[A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$/;
const BUS_NAME = /^[A-Za-z0-9._-]{1,256}$/;
const BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._-]{1,256}$/;

/**
 * `record[key]`, a string that passes `check`, else `fallback` when absent and there is one.
 * @throws ConfigError naming `<field>.<key>` and what it must be (`expected`).
 */
function text(
  record: Record<string, unknown>,
  key: string,
  field: string,
  check: (value: string) => boolean,
  expected: string,
  fallback?: string,
): string {
  const value = record[key];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || !check(value))
    throw new ConfigError(`${field}.${key}`, `must be ${expected}; got ${describeValue(value)}`);
  return value;
}

/**
 * Validates a result destination setting, written at `field` (e.g. `custom.quotaOrchestrator.results` at packaging,
 * `RESULT_DESTINATION` at cold start), and fills in its defaults.
 * @throws ConfigError naming the offending field (`<field>.type`, `<field>.queueArn`, …) and what it must be.
 */
export function parseResultDestination(value: unknown, field: string): ResultDestination {
  if (!isRecord(value))
    throw new ConfigError(
      field,
      `must be an object such as { type: sqs, queueArn: arn:aws:sqs:… } or { type: eventbridge, busName: … }; got ${describeValue(value)}`,
    );
  const allowed =
    value.type === 'sqs'
      ? ['type', 'queueArn']
      : value.type === 'eventbridge'
        ? ['type', 'busName', 'source', 'detailType']
        : undefined;
  if (allowed === undefined)
    throw new ConfigError(`${field}.type`, `must be one of sqs, eventbridge; got ${describeValue(value.type)}`);
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new ConfigError(
        `${field}.${key}`,
        `unknown key; a ${String(value.type)} destination takes ${allowed.join(', ')}`,
      );
  }
  if (value.type === 'sqs') {
    return Object.freeze({
      type: 'sqs',
      queueArn: text(
        value,
        'queueArn',
        field,
        (v) => SQS_QUEUE_ARN.test(v),
        'the ARN of an SQS queue, such as arn:aws:sqs:us-east-1:123456789012:results',
      ),
    });
  }
  return Object.freeze({
    type: 'eventbridge',
    busName: text(
      value,
      'busName',
      field,
      (v) => BUS_NAME.test(v) || BUS_ARN.test(v),
      "an event bus's name (1 to 256 letters, digits, '.', '-', '_') or ARN",
    ),
    source: text(
      value,
      'source',
      field,
      (v) => v.length >= 1 && v.length <= 256 && !v.startsWith('aws.'),
      "1 to 256 characters, not starting with 'aws.'",
      EVENTBRIDGE_RESULT_DEFAULTS.source,
    ),
    detailType: text(
      value,
      'detailType',
      field,
      (v) => v.length >= 1 && v.length <= 128,
      '1 to 128 characters',
      EVENTBRIDGE_RESULT_DEFAULTS.detailType,
    ),
  });
}
