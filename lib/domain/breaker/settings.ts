import { ConfigError } from '../../errors';
import { FLAG, parseSettings, type SettingRanges } from '../settings';

/** Tuning of the circuit breaker. Every duration is in seconds. */
export interface BreakerSettings {
  /** Transient failures within `windowSeconds` that open the circuit. Integer 1..1000. @default 5 */
  readonly failureThreshold: number;
  /** Length of the sliding window in which failures are counted, and of the flapping window after a close. 1..3600. @default 30 */
  readonly windowSeconds: number;
  /**
   * Cool-down from opening to the first health check, before growth on flapping. 1..3600. @default 1: a probe is one
   * call, and an outage that is over should cost no more than a second or two of the quota.
   */
  readonly openSeconds: number;
  /**
   * Interval between health checks while open: one probe call every this long. After a failed trial job (see
   * `probeChecksKey`), the first wait: each next one is twice the last, up to `maxOpenSeconds`. 1..3600. @default 2
   */
  readonly healthCheckSeconds: number;
  /** Cap of the grown cool-down, and of the grown wait between trial jobs. `openSeconds`..86400. @default 300 */
  readonly maxOpenSeconds: number;
  /**
   * A check whose probe started this long ago, or that no worker started within this long of its send, counts as
   * failed, and another may be sent. Must exceed the worker's API timeout (checked where both are known). 1..900.
   * @default 15
   */
  readonly healthCheckTimeoutSeconds: number;
  /**
   * Job calls in a row, across workers, refused with a 4xx other than 401, 403, 408, 425 and 429 that open the
   * circuit (a 401 or 403 opens it at once); a job success resets the count. Integer 1..1000. @default 10
   */
  readonly callerRejectThreshold: number;
  /**
   * Whether a healthy health check shows that the API accepts the service's key: the probe carries the key the jobs'
   * calls carry (the example worker's does) and the health URL refuses a request whose key is not valid. Then a probe
   * may close a circuit that a 401 or 403 opened. Left false, such a circuit closes only once one job, sent alone as
   * its trial, succeeds: a health URL that needs no key answers 200 to a revoked key too. A circuit that a run of other
   * 4xx opened is always tried with a job, since a probe cannot tell that the jobs' URL or requests are wrong.
   * @default false
   */
  readonly probeChecksKey: boolean;
}

/** The settings used for every key the configuration leaves out. */
export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = Object.freeze({
  failureThreshold: 5,
  windowSeconds: 30,
  openSeconds: 1,
  healthCheckSeconds: 2,
  maxOpenSeconds: 300,
  healthCheckTimeoutSeconds: 15,
  callerRejectThreshold: 10,
  probeChecksKey: false,
});

/** Allowed range per key; `maxOpenSeconds` is further bounded below by `openSeconds`. */
const RANGES: SettingRanges<BreakerSettings> = {
  failureThreshold: { min: 1, max: 1000, integer: true },
  windowSeconds: { min: 1, max: 3600 },
  openSeconds: { min: 1, max: 3600 },
  healthCheckSeconds: { min: 1, max: 3600 },
  maxOpenSeconds: { min: 1, max: 86_400 },
  healthCheckTimeoutSeconds: { min: 1, max: 900 },
  callerRejectThreshold: { min: 1, max: 1000, integer: true },
  probeChecksKey: FLAG,
};

/**
 * Validates circuit settings (an object whose keys are all optional; `undefined` means all defaults) and returns
 * them frozen, with defaults filled in.
 * @param field name of the object in error messages. @default 'circuit'
 * @throws ConfigError naming the offending field (e.g. `circuit.failureThreshold`) and its allowed range: a
 * non-object, an unknown key, a value out of range or of the wrong type, or `maxOpenSeconds < openSeconds`.
 */
export function parseBreakerSettings(input: unknown, field = 'circuit'): BreakerSettings {
  const settings = parseSettings(input, field, DEFAULT_BREAKER_SETTINGS, RANGES);
  if (settings.maxOpenSeconds < settings.openSeconds) {
    const given =
      typeof input === 'object' && input !== null && (input as Record<string, unknown>).maxOpenSeconds !== undefined;
    throw new ConfigError(
      `${field}.maxOpenSeconds`,
      `must be a number from ${settings.openSeconds} (openSeconds) to ${RANGES.maxOpenSeconds.max}; got ${settings.maxOpenSeconds}${given ? '' : ' (the default)'}`,
    );
  }
  return settings;
}
