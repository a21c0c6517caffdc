import { DEAD_LETTER_QUEUES, type DeadLetterQueue } from '../../lib/ports/QueueReceiver';
import { receiveDeadLetters, type DeadLetter, type DeadLetterQueues } from './deadLetters';

/** Which dead letters a command that takes them (redrive, delete) works on. */
export interface ChosenLetters {
  /** The dead-letter queues to read. @default all four */
  readonly queues?: readonly DeadLetterQueue[];
  /** Only these messages (ids as `dlq list` shows them); the read stops once each has come. @default every message */
  readonly ids?: readonly string[];
  /** Only the letters this holds for (see `passes`). @default every letter */
  readonly chosen?: (letter: DeadLetter) => boolean;
  /** At most this many. */
  readonly max: number;
}

/** How long the letters a command takes stay hidden while it works on them. */
const TAKE_VISIBILITY_MS = 60_000;

/**
 * Reads the dead-letter queues and runs `work` on each chosen letter, one at a time, in the order they come. A letter
 * `work` leaves (it says `left`: its work failed and it stays in its queue) and every letter not chosen is made
 * visible again at the end, so a later command finds it at once; a queue is read as far as `max` lets it, since a
 * letter made visible again would come back at the next receive.
 * @returns what `work` returned for each chosen letter, in order.
 */
export async function workOnDeadLetters<R>(
  deps: DeadLetterQueues,
  options: ChosenLetters,
  work: (letter: DeadLetter) => Promise<{ readonly result: R; readonly left: boolean }>,
): Promise<R[]> {
  const results: R[] = [];
  const wanted = options.ids === undefined ? undefined : new Set(options.ids);
  const left: DeadLetter[] = [];
  const done = () => results.length >= options.max || (wanted !== undefined && wanted.size === 0);
  const isChosen = (letter: DeadLetter) =>
    (wanted === undefined || wanted.has(letter.messageId)) && options.chosen?.(letter) !== false;
  try {
    for (const dlq of options.queues ?? DEAD_LETTER_QUEUES) {
      if (done()) break;
      await receiveDeadLetters(
        deps,
        dlq,
        { max: Number.MAX_SAFE_INTEGER, visibilityMs: TAKE_VISIBILITY_MS, done },
        async (batch) => {
          for (const letter of batch) {
            if (done() || !isChosen(letter)) {
              left.push(letter);
              continue;
            }
            wanted?.delete(letter.messageId);
            const outcome = await work(letter);
            if (outcome.left) left.push(letter);
            results.push(outcome.result);
          }
        },
      );
    }
  } finally {
    await Promise.all(
      left.map((letter) => deps.queues.changeVisibility(letter.dlq, letter.receiptHandle, 0).catch(() => undefined)),
    );
  }
  return results;
}

/** An error as one line of a command's result: its name and message. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
