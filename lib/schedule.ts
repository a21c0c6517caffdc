/**
 * The orchestrator's schedule, named once. The quota-config plugin writes {@link SCHEDULE_EXPRESSION} into the
 * orchestrator's events in serverless.yml and requires a timeout longer than the period; the handler ends each run
 * just before a tick of it (see `runDeadline`).
 */
export const SCHEDULE_PERIOD_MINUTES = 1;

/** {@link SCHEDULE_PERIOD_MINUTES} in milliseconds. */
export const SCHEDULE_PERIOD_MS = SCHEDULE_PERIOD_MINUTES * 60_000;

/** The EventBridge schedule expression of the period: `rate(1 minute)`. */
export const SCHEDULE_EXPRESSION = `rate(${SCHEDULE_PERIOD_MINUTES} ${SCHEDULE_PERIOD_MINUTES === 1 ? 'minute' : 'minutes'})`;
