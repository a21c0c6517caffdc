/**
 * Typed errors of Quota Orchestrator. Every error carries a literal `code` so callers can branch
 * without string matching, and adapters translate SDK errors into these.
 */

/** Base class of every error this project throws on purpose. */
export abstract class QuotaOrchestratorError extends Error {
  /** A stable, machine-readable identifier of the error kind. */
  abstract readonly code: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A configuration value (environment, tier set, scenario) is invalid. The message names the field and
 * the allowed values; `field` is the path of the offending value, e.g. `quotas[2].per`.
 */
export class ConfigError extends QuotaOrchestratorError {
  readonly code = 'CONFIG_INVALID';

  constructor(
    readonly field: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`${field}: ${problem}`, options);
  }
}

/** A reservation was asked for at an instant where it does not fit every tier. */
export class QuotaExceededError extends QuotaOrchestratorError {
  readonly code = 'QUOTA_EXCEEDED';

  constructor(
    /** Index of the tier that holds the reservation back longest, in the configured order; -1 when no tier is full and smoothing or a pause holds it. */
    readonly tier: number,
    /** Earliest instant (epoch ms) at which the reservation would fit; `Infinity` if never. */
    readonly retryAt: number,
    options?: { cause?: unknown },
  ) {
    super(`reservation does not fit quota tier #${tier}; earliest fit at ${retryAt}`, options);
  }
}

/** The lease (or the fencing token presented with a write) is no longer the current one. */
export class LeaseLostError extends QuotaOrchestratorError {
  readonly code = 'LEASE_LOST';

  constructor(
    readonly lane: string,
    readonly fencingToken: number,
    options?: { cause?: unknown },
  ) {
    super(`lease of lane '${lane}' with fencing token ${fencingToken} is no longer held`, options);
  }
}

/** Lambda refused an asynchronous invoke because of throttling; the message stays in its queue. */
export class InvokeThrottledError extends QuotaOrchestratorError {
  readonly code = 'INVOKE_THROTTLED';
}

/**
 * An asynchronous invoke failed for another reason; the message stays in its queue. `mayHaveStarted` says whether
 * Lambda may have queued the event anyway (a 5xx, a timeout or a network error after the request left), as opposed
 * to a refusal that certainly started nothing (a 4xx such as `ResourceNotFoundException`).
 */
export class InvokeFailedError extends QuotaOrchestratorError {
  readonly code = 'INVOKE_FAILED';

  constructor(
    message: string,
    readonly mayHaveStarted: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Lambda refused an asynchronous invoke because of the event itself (`RequestTooLargeException`: over the async
 * payload limit; an unreadable or unsupported payload). The same event can never be invoked, so the orchestrator
 * dead-letters its message with this error's message as the reason. Configuration errors (a wrong function name,
 * missing permissions) are {@link InvokeFailedError}: they pass once fixed, and no message is at fault.
 */
export class InvokeRejectedError extends QuotaOrchestratorError {
  readonly code = 'INVOKE_REJECTED';
}

/**
 * A call to the state store failed for a reason that may pass: the table unavailable or throttled past the SDK's own
 * retries, a timeout, a network error. Neither {@link LeaseLostError} nor {@link StateFormatError} is ever wrapped
 * in it. `operation` names the store method (e.g. `saveLedger`); the store's error is the `cause`.
 */
export class StateUnavailableError extends QuotaOrchestratorError {
  readonly code = 'STATE_UNAVAILABLE';

  constructor(
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    super(`state store ${operation} failed: ${describeCause(options?.cause)}`, options);
  }
}

/** A call to a queue failed (SQS 5xx, throttling, a timeout, a network error). `operation` names the `QueueReceiver` method. */
export class QueueUnavailableError extends QuotaOrchestratorError {
  readonly code = 'QUEUE_UNAVAILABLE';

  constructor(
    readonly operation: string,
    readonly queue: string,
    options?: { cause?: unknown },
  ) {
    super(`queue ${operation} on '${queue}' failed: ${describeCause(options?.cause)}`, options);
  }
}

/**
 * A producer's job cannot be enqueued as it is (see `enqueue` in lib/producer/enqueue.ts): the service would
 * dead-letter it as malformed, or SQS would refuse it. `field` names the job's field (`body`, `cost`, `idempotencyKey`,
 * `groupId`, `deduplicationId`), or `size` for a message over the queue's size limit; nothing was sent.
 */
export class EnqueueError extends QuotaOrchestratorError {
  readonly code = 'ENQUEUE_INVALID';

  constructor(
    readonly field: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`job.${field}: ${problem}`, options);
  }
}

/** `Name: message` of a thrown value; duck-typed, since SDK and Node errors may come from another realm. */
function describeCause(cause: unknown): string {
  if (typeof cause !== 'object' || cause === null) return String(cause);
  const { name, message } = cause as { name?: unknown; message?: unknown };
  return `${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : String(cause)}`;
}

/** Stored state could not be read back into the domain (corrupt or from an unknown version). */
export class StateFormatError extends QuotaOrchestratorError {
  readonly code = 'STATE_FORMAT';
}

/**
 * A conditional write found the item other than its caller expected: it kept losing to concurrent writers of the
 * same item past its retry bound, or a ledger save was to remove more settlements than are pending. Nothing was
 * written; the caller may try again later.
 */
export class StateConflictError extends QuotaOrchestratorError {
  readonly code = 'STATE_CONFLICT';
}
