import type { Clock } from '../../lib/ports/Clock';
import type { IdempotencyRecord, IdempotencyStore } from '../../lib/ports/IdempotencyStore';
import type { DeadLetterQueue, SourceQueue } from '../../lib/ports/QueueReceiver';
import { describeError, workOnDeadLetters, type ChosenLetters } from './chosenDeadLetters';
import { idempotencyKeyOf, redriveMessageOf, type DeadLetter, type DeadLetterQueues } from './deadLetters';

/** What a redrive needs beside the queues: the idempotency records, to let a dead-lettered job run again. */
export interface RedriveDeps extends DeadLetterQueues {
  readonly idempotency: IdempotencyStore;
  readonly clock: Clock;
}

/** Options of {@link redrive}: which dead letters (see {@link ChosenLetters}). */
export type RedriveOptions = ChosenLetters;

/** What the job's idempotency key held when its dead letter was redriven. */
export type KeyState = IdempotencyRecord['status'] | 'none' | 'unknown';

/** How one dead letter's redrive went. */
export interface RedriveResult {
  readonly messageId: string;
  readonly from: DeadLetterQueue;
  readonly to: SourceQueue;
  /** The key the redriven job carries; absent when it is not known (the job's key was the id of a message that is gone): its new message id is its key. */
  readonly idempotencyKey?: string;
  /**
   * What the key held: `dead-lettered` (reopened, so that the redriven job runs), `succeeded` (the job had succeeded
   * and SQS moved a copy whose delete had failed: the service deletes the redriven one without calling), or another.
   */
  readonly keyWas: KeyState;
  /**
   * `redriven`: sent to its source queue and deleted from the dead-letter queue. `sent-not-deleted`: sent, but still
   * in the dead-letter queue (a later redrive of it is absorbed as a duplicate). `failed`: not sent; it stays.
   */
  readonly outcome: 'redriven' | 'sent-not-deleted' | 'failed';
  readonly error?: string;
}

/**
 * Lets the dead-lettered job of `key` run again (see `IdempotencyStore.reopenDeadLettered`): a `dead-lettered` record
 * keeps every later dispatch of its key from calling (ended is ended, except by this redrive), so it is reopened, in
 * one conditional write that changes it only while it is still dead-lettered. A key that has succeeded stays so.
 * @returns what the key held.
 */
async function reopenKey(deps: Pick<RedriveDeps, 'idempotency' | 'clock'>, key: string): Promise<KeyState> {
  const found = await deps.idempotency.reopenDeadLettered(key, deps.clock.now());
  return found === 'reopened' ? 'dead-lettered' : found === 'absent' ? 'none' : found;
}

/**
 * Sends dead letters back to their source queues, each as a new message ({@link redriveMessageOf}: the original body
 * and the producer's attributes, without the attempt count and the dead-letter attributes, so that the job starts its
 * attempts afresh), after reopening its idempotency key ({@link reopenKey}). Each is deleted from its dead-letter
 * queue only once its send succeeded: nothing is lost, and at worst a job is sent twice, which the service absorbs
 * by its key. Letters not redriven (not asked for, beyond `max`, or whose send failed) are made visible again.
 *
 * Why not SQS's `StartMessageMoveTask`: it cannot pick messages by id; it moves back to their source queue only the
 * messages SQS itself dead-lettered (one the service sent to the DLQ with its reason needs a custom destination);
 * and the new id it gives each message loses the key of a job without an `idempotencyKey` that SQS moved. A message
 * it moves keeps every attribute; the service reads one that carries its dead-letter attributes as a redrive too
 * (see `deadLetterMarksOf`): attempts afresh, the key reopened.
 *
 * In a FIFO dead-letter queue SQS hands out a group's next message only once those before are gone, so a redrive
 * brings a group back in its order; with `ids`, a group whose first message is not asked for blocks the rest of it.
 * @returns how each letter went, in the order they were handled.
 */
export async function redrive(deps: RedriveDeps, options: RedriveOptions): Promise<RedriveResult[]> {
  return workOnDeadLetters(deps, options, async (letter) => {
    const result = await redriveOne(deps, letter);
    return { result, left: result.outcome === 'failed' };
  });
}

/** Redrives one letter: reopens its key, sends it to its source queue, then deletes it from its dead-letter queue. */
async function redriveOne(deps: RedriveDeps, letter: DeadLetter): Promise<RedriveResult> {
  const key = idempotencyKeyOf(letter);
  const base = {
    messageId: letter.messageId,
    from: letter.dlq,
    to: letter.source,
    ...(key === undefined ? {} : { idempotencyKey: key }),
  };
  let keyWas: KeyState = 'unknown';
  try {
    if (key !== undefined) keyWas = await reopenKey(deps, key);
    await deps.queues.send(letter.source, redriveMessageOf(letter));
  } catch (error) {
    return { ...base, keyWas, outcome: 'failed', error: describeError(error) };
  }
  try {
    await deps.queues.delete(letter.dlq, letter.receiptHandle);
    return { ...base, keyWas, outcome: 'redriven' };
  } catch (error) {
    return { ...base, keyWas, outcome: 'sent-not-deleted', error: describeError(error) };
  }
}
