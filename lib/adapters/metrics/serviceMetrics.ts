/** The deployment a function belongs to: serverless.yml's `service` and its stage (see `deploymentFromEnv`). */
export interface Deployment {
  readonly service: string;
  readonly stage: string;
}

/**
 * Where a metric comes from, its first three dimensions: the deployment's `service` and `stage`, and the `lane`. Two
 * stages, or two deployments, in one account never share a series.
 */
export interface MetricScope extends Deployment {
  readonly lane: string;
}

/**
 * The service's metrics, by name, in `QuotaOrchestrator` (see `METRIC_NAMESPACE`). Every one has the dimensions of
 * its {@link MetricScope} (`service`, `stage`, `lane`); the extra dimension of some is named beside it. Counts are
 * sums over the period.
 */
export const METRICS = {
  /** Count, published by every orchestrator run at least every {@link METRICS_PUBLISH_INTERVAL_MS} and at its end. */
  heartbeat: 'OrchestratorHeartbeat',
  /** Count: jobs handed to a worker. */
  dispatched: 'JobsDispatched',
  /** Milliseconds, one value per dispatch: from this run's receive of the message to its dispatch (the pacing wait). */
  dispatchLag: 'DispatchLag',
  /** Count, by `outcome`: the API calls of jobs, by their classification (`success`, `rate-limited`, `transient`, ...). */
  apiCalls: 'ApiCalls',
  /** Count: API calls answered 429 (`ApiCalls` with outcome `rate-limited`, on its own for alarms and graphs). */
  rateLimited: 'RateLimitedCalls',
  /** Count, by `outcome`: how each job delivery ended in a worker (`succeeded`, `retried`, `dead-lettered`, ...). */
  jobOutcomes: 'JobOutcomes',
  /** Count, by `reason` (see {@link DEAD_LETTER_CLASSES}): messages sent to a dead-letter queue. */
  deadLetters: 'DeadLetters',
  /** Count: results of succeeded jobs the worker could not hand to the result destination (dropped). */
  resultsUndelivered: 'ResultsUndelivered',
  /** Count: workers that started too late for their slot, gave the quota back and returned the job (`too-late`). */
  lateStartsRefused: 'LateStartsRefused',
  /** Count, by `to` (`open`, `half-open`, `closed`): changes of the circuit's status written by the functions. */
  circuitTransitions: 'CircuitTransitions',
  /** None: 1 while the circuit as the orchestrator last read it is open or half-open, else 0; at each publish. */
  circuitOpen: 'CircuitOpen',
  /** None, by `tier` (`10/second`, `20000/day`): units used in the tier's current window over its limit, at each ledger flush. */
  tierUsageRatio: 'TierUsageRatio',
  /**
   * None, by `tier`: the limit in force the lane learnt from the API over the configured one, at each ledger flush
   * while they differ (see `LimitLearner`); no data while the API allows what is configured.
   */
  learnedLimitRatio: 'LearnedLimitRatio',
  /** Count, by `unit`: units of calls' estimates the API's answers showed unused, handed back to the quota at each ledger flush. */
  unitsHandedBack: 'UnitsHandedBack',
  /** Count, on a lane with `maxInFlight`: the calls that may be in progress, at each ledger flush. */
  callsInFlight: 'CallsInFlight',
  /** None: 1 while a day or month tier holds all dispatch back (its quota is spent until its window ends), else 0. */
  calendarQuotaExhausted: 'CalendarQuotaExhausted',
  /** Milliseconds, by `tier` (or `429`): how long the quota stays exhausted from the report, once per episode. */
  quotaExhaustedFor: 'QuotaExhaustedForMs',
} as const;

/** How often a running orchestrator publishes its metrics (and so its heartbeat): twice in each minute. */
export const METRICS_PUBLISH_INTERVAL_MS = 30_000;

/** The classes of dead-letter reasons, the `reason` dimension of {@link METRICS.deadLetters}. */
export const DEAD_LETTER_CLASSES = [
  'malformed',
  'permanent',
  'attempts-exhausted',
  'too-large',
  'over-quota',
  'refused',
  'other',
] as const;

/** A class of {@link DEAD_LETTER_CLASSES}. */
export type DeadLetterClass = (typeof DEAD_LETTER_CLASSES)[number];

/**
 * The class of a dead-letter reason, from how the services word it: `malformed: ...` (the orchestrator's parse),
 * `permanent: ...` (a 4xx or an unexpected status), `gave up after N attempts: ...`, an event Lambda found too large
 * or refused, a cost beyond a tier's limit; `other` for anything else.
 */
export function deadLetterClass(reason: string): DeadLetterClass {
  if (reason.startsWith('malformed:')) return 'malformed';
  if (reason.startsWith('permanent:')) return 'permanent';
  if (reason.startsWith('gave up after ')) return 'attempts-exhausted';
  if (/ is too large to invoke /.test(reason)) return 'too-large';
  if (/ was refused by invoke of /.test(reason)) return 'refused';
  if (/^[A-Za-z0-9_.-]+ \d+ exceeds the limit /.test(reason)) return 'over-quota';
  return 'other';
}
