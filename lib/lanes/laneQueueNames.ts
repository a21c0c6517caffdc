import type { QueueName } from '../ports/QueueReceiver';

/**
 * The lane whose queues keep the names of a one-lane deployment (`<service>-<stage>-main`, …): a deployment that
 * moves from one lane to `lanes` keeps its queues, and the messages in them, by naming its lane `default`.
 */
export const UNPREFIXED_LANE = 'default';

/** What follows the lane in each queue's name (a FIFO queue's name must end in `.fifo`). */
export const QUEUE_NAME_SUFFIXES: Readonly<Record<QueueName, string>> = Object.freeze({
  requeue: 'requeue',
  fifo: 'fifo.fifo',
  main: 'main',
  bulk: 'bulk',
  'requeue-dlq': 'requeue-dlq',
  'fifo-dlq': 'fifo-dlq.fifo',
  'main-dlq': 'main-dlq',
  'bulk-dlq': 'bulk-dlq',
});

/** SQS's longest queue name. */
export const MAX_QUEUE_NAME_LENGTH = 80;

/**
 * The name of `lane`'s queue `queue` in a deployment whose queue names start with `prefix` (`<service>-<stage>-`):
 * `<prefix><lane>-<suffix>`, or `<prefix><suffix>` for the {@link UNPREFIXED_LANE}.
 */
export function laneQueueName(prefix: string, lane: string, queue: QueueName): string {
  return `${prefix}${lane === UNPREFIXED_LANE ? '' : `${lane}-`}${QUEUE_NAME_SUFFIXES[queue]}`;
}
