import type { Reservation } from '../domain/quota/ledger';
import type { MessageAttribute, SourceQueue } from './QueueReceiver';

/** Asks a worker to call the API for one message. */
export interface JobEvent {
  readonly kind: 'job';
  readonly lane: string;
  readonly queue: SourceQueue;
  readonly receiptHandle: string;
  readonly messageId: string;
  /**
   * The message body exactly as received: JSON text that the orchestrator checked parses and nests no deeper than
   * `MAX_BODY_DEPTH`. A string, not a parsed value: Lambda parses an async payload with JSON.parse, which would turn
   * `1790000000000000123` into `1790000000000000000` and `1e400` into `Infinity` (`null` once serialised again), and
   * keep only the last of duplicate keys. As a string it costs its escapes in the event's size; an event Lambda
   * refuses as too large is dead-lettered with the reason.
   */
  readonly body: string;
  /** 1 for the first try, then one more per retry. */
  readonly attempt: number;
  /** The reserved cost (message attribute `cost`, default 1). */
  readonly cost: number;
  /** Message attribute `idempotencyKey`, default the message id. */
  readonly idempotencyKey: string;
  /** FIFO `MessageGroupId`, for messages of the FIFO queue. */
  readonly groupId?: string;
  /** The message attributes as received, kept when the message is requeued or dead-lettered. */
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  /** Unique per dispatch: tells a second delivery of this event (same id) from a second dispatch of the message. */
  readonly dispatchId: string;
  /** The quota reserved for this call; the worker settles it with the actual cost. */
  readonly reservation: Reservation;
  /**
   * The call's slot, epoch ms: the instant its reservation counts it at (`reservation.at`). The job is dispatched
   * up to `dispatchLeadMs` ahead of it; a worker that starts earlier waits for it before calling.
   */
  readonly slotAt: number;
  /**
   * The latest instant, epoch ms, at which the worker may start its call: `slotAt + arrivalMarginMs −
   * callAllowanceMs`, so that the call reaches the API within the arrival margin of its slot. A worker that starts
   * later does not call: it gives the reservation back and returns the message to be dispatched again.
   */
  readonly callBy: number;
  /** When the orchestrator sent the event, epoch ms: a worker that starts too late reports its start delay from it. */
  readonly sentAt: number;
  /**
   * Set on the one job an open circuit is tried with after a refusal of the caller (the circuit's half-open
   * `checkId`; see `Trial`): always sent alone. Its worker claims the check right before the call instead of reading
   * the circuit, calls only if its claim is written, and reports the call's result as the check's: a success closes
   * the circuit. Absent on every other job.
   */
  readonly trial?: string;
}

/**
 * Asks one worker to call the API for several messages, each at its own slot and under the same rules as a single
 * {@link JobEvent} (claim, wait for the slot, call by `callBy`), so a batch never bunches its calls: one invocation
 * and one wait for the first slot serve them all. Sent when the rate puts several slots within
 * `pacing.batchWindowMs` of each other.
 */
export interface BatchEvent {
  readonly kind: 'batch';
  readonly lane: string;
  /**
   * In slot order; each a whole job event, with its own dispatch id (see {@link batchJobDispatchId}), reservation
   * and slot.
   */
  readonly jobs: readonly JobEvent[];
  readonly sentAt: number;
}

/**
 * The dispatch id of the `index`-th job (from 0) of a batch whose first job has dispatch id `batchId` (the batch's
 * id): `batchId` itself, then `<batchId>.<index>`. A batch's record of successes can so store indexes, not ids.
 */
export function batchJobDispatchId(batchId: string, index: number): string {
  return index === 0 ? batchId : `${batchId}.${index}`;
}

/** The index in batch `batchId` that `dispatchId` names (see {@link batchJobDispatchId}), or `undefined` if none. */
export function batchJobIndex(batchId: string, dispatchId: string): number | undefined {
  if (dispatchId === batchId) return 0;
  const rest = dispatchId.startsWith(`${batchId}.`) ? dispatchId.slice(batchId.length + 1) : '';
  return /^[1-9][0-9]{0,5}$/.test(rest) ? Number(rest) : undefined;
}

/** Asks a worker to probe the API while the circuit is open. */
export interface HealthCheckEvent {
  readonly kind: 'health-check';
  readonly lane: string;
  /** Matches the circuit's half-open trial; results for another id are stale and ignored. */
  readonly checkId: string;
  readonly sentAt: number;
}

/** What the orchestrator sends to a worker. */
export type WorkerEvent = JobEvent | BatchEvent | HealthCheckEvent;

/**
 * Starts a worker asynchronously (Lambda `InvocationType: 'Event'`): resolves once the invocation is accepted,
 * not when the worker is done.
 * @throws InvokeThrottledError when throttled; InvokeRejectedError when Lambda refuses the event itself (too large,
 * unreadable), so it never will take it; InvokeFailedError on other failures. Either way the work did not start.
 */
export interface Invoker {
  invoke(event: WorkerEvent): Promise<void>;
}
