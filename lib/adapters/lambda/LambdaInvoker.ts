import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError } from '../../errors';
import type { Invoker, WorkerEvent } from '../../ports/Invoker';

/** Options of {@link LambdaInvoker}. */
export interface LambdaInvokerOptions {
  /** Deployed with one attempt per invoke (`CLIENT_CONFIG`): the orchestrator retries, paced, with a fresh reservation. */
  readonly client: LambdaClient;
  /** Name, ARN or alias ARN of the worker function. */
  readonly functionName: string;
}

/**
 * Error codes that mean Lambda is throttling: `TooManyRequestsException` (the account's or function's invoke
 * rate or concurrency) and `EC2ThrottledException` (EC2 throttling Lambda while it sets up the function's VPC
 * access). `ENILimitReachedException` and `SubnetIPAddressLimitReachedException` are left out on purpose: they
 * are quotas that stay full until someone acts, not throttles that pass.
 */
const THROTTLE_CODES: ReadonlySet<string> = new Set(['TooManyRequestsException', 'EC2ThrottledException']);

function isThrottle(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, $metadata } = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  return (typeof name === 'string' && THROTTLE_CODES.has(name)) || $metadata?.httpStatusCode === 429;
}

/**
 * Error codes that mean Lambda refused the event itself, so the same payload can never be invoked:
 * `RequestTooLargeException` and `SerializedRequestEntityTooLargeException` (over the async payload limit; any HTTP
 * 413 counts too), `InvalidRequestContentException` (a payload Lambda cannot read as JSON) and
 * `UnsupportedMediaTypeException`. Configuration errors are left out on purpose (`ResourceNotFoundException`,
 * `AccessDeniedException`, `InvalidParameterValueException`, KMS and VPC errors): they pass once someone fixes the
 * deployment, and dead-lettering every message because of a wrong function name would lose the backlog's order.
 */
const REJECTED_CODES: ReadonlySet<string> = new Set([
  'RequestTooLargeException',
  'SerializedRequestEntityTooLargeException',
  'InvalidRequestContentException',
  'UnsupportedMediaTypeException',
]);

function isRejection(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { name, $metadata } = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  return (typeof name === 'string' && REJECTED_CODES.has(name)) || $metadata?.httpStatusCode === 413;
}

function isTooLarge(error: unknown): boolean {
  const { name, $metadata } = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  return (
    name === 'RequestTooLargeException' ||
    name === 'SerializedRequestEntityTooLargeException' ||
    $metadata?.httpStatusCode === 413
  );
}

/** Whether Lambda answered with a 4xx: it refused the request, so nothing started. */
function isClientRefusal(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/** `Name (HTTP status): message` of an SDK or network error; duck-typed, since Node's own errors may come from another realm. */
function describeError(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const { name, message, $metadata } = error as {
    name?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const status = typeof $metadata?.httpStatusCode === 'number' ? ` (HTTP ${$metadata.httpStatusCode})` : '';
  return `${typeof name === 'string' ? name : 'Error'}${status}: ${typeof message === 'string' ? message : String(error)}`;
}

/**
 * Starts the worker Lambda asynchronously (`InvocationType: 'Event'`) with the event as its UTF-8 JSON payload.
 *
 * Every failure becomes one of the port's three errors, with the SDK error as `cause`: throttles (see
 * `THROTTLE_CODES`, and any HTTP 429) become {@link InvokeThrottledError}; refusals of the event itself (see
 * `REJECTED_CODES`, and any HTTP 413) become {@link InvokeRejectedError}, whose message names the payload's size;
 * everything else (`ServiceException` and other 5xx, network errors, configuration 4xx such as
 * `ResourceNotFoundException`, and an accepted call whose status is not 202) becomes {@link InvokeFailedError}.
 *
 * A network error or timeout after the request left may hide an invoke that Lambda did accept; the orchestrator
 * then dispatches the message again, and the worker's idempotency record keeps the API from seeing it twice.
 */
export class LambdaInvoker implements Invoker {
  private readonly client: LambdaClient;
  private readonly functionName: string;

  constructor({ client, functionName }: LambdaInvokerOptions) {
    this.client = client;
    this.functionName = functionName;
  }

  /**
   * Resolves once Lambda has queued the event (HTTP 202).
   * @throws InvokeThrottledError when Lambda throttles the invoke.
   * @throws InvokeRejectedError when Lambda refuses the event itself (too large, unreadable): it never will take it.
   * @throws InvokeFailedError on any other failure, or a status other than 202; `mayHaveStarted` unless Lambda
   * answered with a 4xx.
   */
  async invoke(event: WorkerEvent): Promise<void> {
    const payload = new TextEncoder().encode(JSON.stringify(event));
    let statusCode: number | undefined;
    try {
      const response = await this.client.send(
        new InvokeCommand({ FunctionName: this.functionName, InvocationType: 'Event', Payload: payload }),
      );
      statusCode = response.StatusCode;
    } catch (error) {
      if (isRejection(error)) {
        const why = isTooLarge(error) ? 'is too large to invoke' : 'was refused by invoke of';
        throw new InvokeRejectedError(
          `worker event of ${payload.byteLength} bytes ${why} '${this.functionName}': ${describeError(error)}`,
          { cause: error },
        );
      }
      const message = `invoke of '${this.functionName}' failed: ${describeError(error)}`;
      throw isThrottle(error)
        ? new InvokeThrottledError(message, { cause: error })
        : new InvokeFailedError(message, !isClientRefusal(error), { cause: error });
    }
    if (statusCode !== 202) {
      throw new InvokeFailedError(
        `invoke of '${this.functionName}' returned status ${statusCode ?? 'none'}, expected 202 (queued)`,
        true,
      );
    }
  }
}
