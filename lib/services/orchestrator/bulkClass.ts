import { BulkTurns } from '../../domain/priorities/bulkTurns';
import type { QueueName } from '../../ports/QueueReceiver';

/**
 * How long the bulk queue is taken for empty after a read found it so: its turns are not looked for meanwhile. A lane
 * that never uses it costs one empty receive per this span while the main class keeps it busy; a bulk backlog that
 * starts meanwhile waits at most this long for its first turn.
 */
export const BULK_QUIET_MS = 5_000;

/**
 * While bulk jobs go because the other queues held none, how often those are looked into again before the next bulk
 * job goes, and how much of the rate a batch of such bulk jobs holds: a main job sent meanwhile waits about this long,
 * not a whole refill of bulk jobs. It costs up to four looks a second (a receive of each queue not found empty
 * lately) only while bulk jobs go alone.
 */
export const LOOK_UP_MS = 250;

/** A buffered message, as far as its class goes. */
interface Queued {
  readonly message: { readonly queue: QueueName };
}

/** Whether a buffered message is a bulk job. */
export function isBulk({ message }: Queued): boolean {
  return message.queue === 'bulk';
}

/**
 * The intake's bookkeeping of the bulk class (see `PrioritySettings`): whose turn it is (`BulkTurns`), where bulk jobs
 * go in the buffer, how many to receive for their turns, whether the bulk queue is taken for empty, and when the
 * other queues are looked into again while bulk jobs go alone.
 */
export class BulkClass {
  private readonly turns: BulkTurns;
  /** Until when the bulk queue is taken for empty: its last read found it so (see {@link BULK_QUIET_MS}). */
  private quietUntil = Number.NEGATIVE_INFINITY;
  /** When the queues read before bulk were last looked into while bulk jobs went alone (see {@link LOOK_UP_MS}). */
  private lookedUpAt = Number.NEGATIVE_INFINITY;

  /** @param share the least share of the dispatches bulk jobs get while any wait (`bulkShare`) */
  constructor(readonly share: number) {
    this.turns = new BulkTurns(share);
  }

  /** `buffer` in the order its jobs go: bulk jobs where their turns fall (see `BulkTurns.order`). */
  arrange<T extends Queued>(buffer: T[]): T[] {
    return buffer.some(isBulk) ? this.turns.order(buffer, isBulk) : buffer;
  }

  /** Counts `head` dispatched, `rest` being what the buffer still holds. */
  dispatched(head: Queued, rest: readonly Queued[], now: number): void {
    this.turns.dispatched(isBulk(head), now >= this.quietUntil || rest.some(isBulk));
  }

  /**
   * How many bulk jobs to receive now: as many turns as bulk has among `buffer`'s jobs (at least the next one; see
   * `BulkTurns.turnsWithin`), less the bulk jobs it holds; none while the bulk queue is taken for empty.
   */
  missing(buffer: readonly Queued[], now: number): number {
    if (now < this.quietUntil) return 0;
    return Math.max(0, this.turns.turnsWithin(Math.max(1, buffer.length)) - buffer.filter(isBulk).length);
  }

  /** Notes what a read of the bulk queue found: none starts its quiet span and its credit again. */
  found(count: number, now: number): void {
    if (count > 0) {
      this.quietUntil = Number.NEGATIVE_INFINITY;
      return;
    }
    this.quietUntil = now + BULK_QUIET_MS;
    this.turns.reset();
  }

  /**
   * Whether `buffer` holds bulk jobs alone, its head not at a turn of bulk, and the queues read before bulk were last
   * looked into {@link LOOK_UP_MS} ago or more: they are then to be looked into again (and this notes when).
   */
  lookUpDue(buffer: readonly Queued[], now: number): boolean {
    if (buffer.length === 0 || !buffer.every(isBulk) || this.turns.due || now < this.lookedUpAt + LOOK_UP_MS)
      return false;
    this.lookedUpAt = now;
    return true;
  }

  /**
   * Whether `buffer`'s `i`-th message may join the head's batch: not a bulk job that goes only because nothing else
   * is buffered, beyond the `alone` such jobs a batch may hold (see {@link LOOK_UP_MS}): a batch holds its slots, and
   * a main job sent meanwhile would wait for them all.
   */
  joinsBatch(buffer: readonly Queued[], i: number, alone: number): boolean {
    return i < alone || !buffer.slice(i).every(isBulk);
  }
}
