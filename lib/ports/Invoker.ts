import type { JsonValue } from '../domain/json';
import type { Reservation } from '../domain/quota/ledger';
import type { MessageAttribute, SourceQueue } from './QueueReceiver';

/** Asks a worker to call the API for one message. */
export interface JobEvent {
  readonly kind: 'job';
  readonly lane: string;
  readonly queue: SourceQueue;
  readonly receiptHandle: string;
  readonly messageId: string;
  /** The message body, already parsed as JSON by the orchestrator. */
  readonly body: JsonValue;
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
export type WorkerEvent = JobEvent | HealthCheckEvent;

/**
 * Starts a worker asynchronously (Lambda `InvocationType: 'Event'`): resolves once the invocation is accepted,
 * not when the worker is done.
 * @throws InvokeThrottledError when throttled; InvokeRejectedError when Lambda refuses the event itself (too large,
 * unreadable), so it never will take it; InvokeFailedError on other failures. Either way the work did not start.
 */
export interface Invoker {
  invoke(event: WorkerEvent): Promise<void>;
}
