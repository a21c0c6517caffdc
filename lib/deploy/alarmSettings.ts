/** The alarms' settings in serverless.yml (`custom.alarms`), which resources/alarms.yml and resources/dashboard.yml read. */
import { describeValue } from '../domain/describeValue';
import { ConfigError } from '../errors';
import { isRecord, wholeNumber } from '../settingChecks';

/** Where the alarms' settings live in serverless.yml (used by resources/alarms.yml and resources/dashboard.yml). */
export const ALARMS_PATH = 'custom.alarms';

/**
 * The settings of the alarms in serverless.yml's `custom.alarms`: all three are required (resources/alarms.yml reads
 * them; without the block, osls stops at the variables that name them).
 */
export interface AlarmSettings {
  /** An address subscribed to the alarm topic by email (it must confirm the subscription), or `''` for none. */
  readonly email: string;
  /**
   * The age of the oldest message in a source queue (main, FIFO, requeue) that raises an alarm, in seconds, from 60 to
   * 345599: SQS deletes a message 4 days (345600 s) after it was sent. @default 86400 (set in serverless.yml)
   */
  readonly oldestMessageAgeSeconds: number;
  /** How many minutes the circuit stays open (or half-open) before an alarm is raised, from 1 to 1440. @default 15 (set in serverless.yml) */
  readonly circuitOpenMinutes: number;
}

/** The ranges of the numeric {@link AlarmSettings}: the source queues keep messages 345600 s; CloudWatch evaluates at most a day. */
export const ALARM_RANGES = {
  oldestMessageAgeSeconds: { min: 60, max: 345_599 },
  circuitOpenMinutes: { min: 1, max: 1440 },
} as const;

/** An email address, roughly: something, `@`, a domain with a dot; no spaces. */
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * Checks `custom.alarms` (see {@link AlarmSettings}), which resources/alarms.yml reads.
 * @throws ConfigError naming `custom.alarms` or the field that is missing, of the wrong type or out of its range.
 */
export function checkAlarmSettings(alarms: unknown): AlarmSettings {
  if (!isRecord(alarms))
    throw new ConfigError(
      ALARMS_PATH,
      `must be an object with keys email, oldestMessageAgeSeconds and circuitOpenMinutes; got ${describeValue(alarms)}`,
    );
  for (const key of Object.keys(alarms)) {
    if (!['email', 'oldestMessageAgeSeconds', 'circuitOpenMinutes'].includes(key))
      throw new ConfigError(
        `${ALARMS_PATH}.${key}`,
        'unknown key; allowed keys are email, oldestMessageAgeSeconds, circuitOpenMinutes',
      );
  }
  const { email } = alarms;
  if (typeof email !== 'string' || (email !== '' && !EMAIL.test(email))) {
    throw new ConfigError(
      `${ALARMS_PATH}.email`,
      `must be an email address such as ops@example.com, or '' for no subscription; got ${describeValue(email)}`,
    );
  }
  for (const [key, range] of Object.entries(ALARM_RANGES))
    wholeNumber(alarms[key], range, { field: `${ALARMS_PATH}.${key}` });
  return alarms as unknown as AlarmSettings;
}
