// How long SQS keeps the service's messages, named once: `resources/sqs.yml` sets these retention periods (a test of
// the packaged template holds it to them), and the idempotency TTL must outlast every copy of a job's message.

/** A day in milliseconds. */
const DAY_MS = 86_400_000;

/** How long a source queue (main, FIFO, requeue) keeps a message: 4 days from its send. */
export const SOURCE_QUEUE_RETENTION_MS = 4 * DAY_MS;

/**
 * How long a dead-letter queue keeps a message: 14 days, from its first send when SQS moved it out of a standard
 * queue, from the move out of a FIFO queue, and from its send when the service dead-lettered it.
 */
export const DEAD_LETTER_QUEUE_RETENTION_MS = 14 * DAY_MS;

/**
 * The longest a copy of a job's message can come back to a worker after the job's last record was written, 22 days:
 * a copy left in its source queue (a delete that failed, a visibility that ran out) lives up to 4 days there; moved
 * to its dead-letter queue after `maxReceiveCount` receives, up to 14 more; and an operator's redrive sends it back
 * as a new message, for up to 4 days more in its source queue.
 */
export const LONGEST_COPY_LIFE_MS =
  SOURCE_QUEUE_RETENTION_MS + DEAD_LETTER_QUEUE_RETENTION_MS + SOURCE_QUEUE_RETENTION_MS;
