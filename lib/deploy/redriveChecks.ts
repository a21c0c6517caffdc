/** Packaging's checks of the source queues' SQS redrive thresholds against the service's retries. */
import type { ServiceConfig } from '../config';
import { describeValue } from '../domain/describeValue';
import { FIFO_RECEIVES_PER_ATTEMPT, fifoRedriveThreshold } from '../domain/outcome/retryPolicy';
import { ConfigError } from '../errors';

/** Where the SQS redrive threshold of the source queues lives in serverless.yml. */
export const MAX_RECEIVE_COUNT_PATH = 'custom.queues.maxReceiveCount';

/** Where serverless.yml sets the FIFO queue's redrive threshold (see `fifoRedriveThreshold`). */
export const FIFO_MAX_RECEIVE_COUNT_PATH = 'custom.queues.fifoMaxReceiveCount';

/**
 * Checks the source queues' redrive thresholds, SQS's last guard, which must not pre-empt the service's own
 * dead-lettering (which records the reason): the standard queues' exceeds `retry.maxAttempts`, and the FIFO
 * queue's is at least {@link fifoRedriveThreshold}, since a FIFO message is received again on every retry and on
 * every hand-back of its group, which spend no attempt (a job's attempts are the service's own count).
 * @param maxAttemptsField where `retry.maxAttempts` is written (`custom.quotaOrchestrator.retry.maxAttempts`, or a
 * lane's)
 * @throws ConfigError naming `custom.queues.maxReceiveCount`, `custom.queues.fifoMaxReceiveCount` or
 * `maxAttemptsField`.
 */
export function checkRedrive(
  queues: { readonly maxReceiveCount?: unknown; readonly fifoMaxReceiveCount?: unknown } | undefined,
  config: ServiceConfig,
  maxAttemptsField: string,
): void {
  const { maxAttempts } = config.retry;
  const standard = receiveCountAt(MAX_RECEIVE_COUNT_PATH, queues?.maxReceiveCount);
  if (maxAttempts >= standard) {
    throw new ConfigError(
      maxAttemptsField,
      `must be below ${MAX_RECEIVE_COUNT_PATH} (${standard}): a message handed back by the orchestrator is received again, and SQS would redrive it before its last attempt; got ${maxAttempts}`,
    );
  }
  const fifo = receiveCountAt(FIFO_MAX_RECEIVE_COUNT_PATH, queues?.fifoMaxReceiveCount);
  const least = fifoRedriveThreshold(maxAttempts);
  if (fifo < least) {
    throw new ConfigError(
      FIFO_MAX_RECEIVE_COUNT_PATH,
      `must be from ${least} (${FIFO_RECEIVES_PER_ATTEMPT} receives per attempt of ${maxAttemptsField} ${maxAttempts}, at most 1000) to 1000: a FIFO message is received again on every retry and every hand-back of its group; got ${fifo}`,
    );
  }
}

/** The redrive threshold at `path`: an integer from 1 to 1000 (SQS's range). */
function receiveCountAt(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
    throw new ConfigError(
      path,
      `must be an integer from 1 to 1000 (an SQS redrive threshold); got ${describeValue(value)}`,
    );
  }
  return value;
}
