import {
  EC2ThrottledException,
  InvalidParameterValueException,
  InvalidRequestContentException,
  InvokeCommand,
  LambdaClient,
  LambdaServiceException,
  RequestTooLargeException,
  ResourceNotFoundException,
  SerializedRequestEntityTooLargeException,
  ServiceException,
  TooManyRequestsException,
  UnsupportedMediaTypeException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { LambdaInvoker } from '../../../../lib/adapters/lambda/LambdaInvoker';
import { InvokeFailedError, InvokeRejectedError, InvokeThrottledError } from '../../../../lib/errors';
import type { WorkerEvent } from '../../../../lib/ports/Invoker';

const lambdaMock = mockClient(LambdaClient);
const EVENT: WorkerEvent = { kind: 'health-check', lane: 'default', checkId: 'c-1', sentAt: 1_700_000_000_000 };

function invoker(): LambdaInvoker {
  return new LambdaInvoker({ client: new LambdaClient({ region: 'us-east-1' }), functionName: 'qo-dev-worker' });
}

/** What `invoke` rejects with when the SDK rejects with `error`. */
async function failureOf(error: Error): Promise<unknown> {
  lambdaMock.on(InvokeCommand).rejects(error);
  return invoker()
    .invoke(EVENT)
    .then(
      () => {
        throw new Error('expected invoke to reject');
      },
      (failure: unknown) => failure,
    );
}

/** An unmodelled Lambda error with an HTTP status, as the SDK builds it. */
function serviceError(name: string, status: number, fault: 'client' | 'server'): LambdaServiceException {
  return new LambdaServiceException({
    name,
    $fault: fault,
    message: `${name} happened`,
    $metadata: { httpStatusCode: status },
  });
}

beforeEach(() => {
  lambdaMock.reset();
});

describe('LambdaInvoker', () => {
  describe('invoke', () => {
    it('invokes the function asynchronously with the event as UTF-8 JSON', async () => {
      lambdaMock.on(InvokeCommand).resolves({ StatusCode: 202 });
      await expect(invoker().invoke({ ...EVENT, lane: 'läne ✓' })).resolves.toBeUndefined();
      const input = lambdaMock.commandCalls(InvokeCommand)[0]?.args[0].input;
      expect(input?.FunctionName).toBe('qo-dev-worker');
      expect(input?.InvocationType).toBe('Event');
      expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8'))).toEqual({
        ...EVENT,
        lane: 'läne ✓',
      });
    });

    it.each([
      [
        'TooManyRequestsException',
        new TooManyRequestsException({
          message: 'Rate exceeded',
          $metadata: { httpStatusCode: 429 },
          Reason: 'CallerRateLimitExceeded',
        }),
      ],
      [
        'EC2ThrottledException',
        new EC2ThrottledException({ message: 'EC2 throttled', $metadata: { httpStatusCode: 502 } }),
      ],
      ['any HTTP 429', serviceError('SlowDown', 429, 'client')],
    ])('turns %s into InvokeThrottledError with the SDK error as cause', async (_, error) => {
      const failure = await failureOf(error);
      expect(failure).toBeInstanceOf(InvokeThrottledError);
      expect((failure as InvokeThrottledError).cause).toBe(error);
      expect((failure as Error).message).toMatch(/qo-dev-worker/);
    });

    it.each([
      ['ServiceException', new ServiceException({ message: 'internal error', $metadata: { httpStatusCode: 500 } })],
      ['another 5xx', serviceError('BadGateway', 502, 'server')],
      [
        'a 4xx such as ResourceNotFoundException',
        new ResourceNotFoundException({ message: 'Function not found', $metadata: { httpStatusCode: 404 } }),
      ],
      ['a network error', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3002'), { code: 'ECONNREFUSED' })],
    ])('turns %s into InvokeFailedError with the SDK error as cause', async (_, error) => {
      const failure = await failureOf(error);
      expect(failure).toBeInstanceOf(InvokeFailedError);
      expect((failure as InvokeFailedError).cause).toBe(error);
    });

    it.each([
      [
        'RequestTooLargeException',
        new RequestTooLargeException({
          message: 'Request must be smaller than 262144 bytes for the Invoke operation',
          $metadata: { httpStatusCode: 413 },
        }),
      ],
      [
        'SerializedRequestEntityTooLargeException',
        new SerializedRequestEntityTooLargeException({ message: 'too large', $metadata: { httpStatusCode: 413 } }),
      ],
      [
        'InvalidRequestContentException',
        new InvalidRequestContentException({
          message: 'Could not parse request body into json',
          $metadata: { httpStatusCode: 400 },
        }),
      ],
      [
        'UnsupportedMediaTypeException',
        new UnsupportedMediaTypeException({ message: 'unsupported', $metadata: { httpStatusCode: 415 } }),
      ],
      ['any HTTP 413', serviceError('PayloadTooLarge', 413, 'client')],
    ])(
      'turns %s, a refusal of the event itself, into InvokeRejectedError with the SDK error as cause',
      async (_, error) => {
        const failure = await failureOf(error);
        expect(failure).toBeInstanceOf(InvokeRejectedError);
        expect((failure as InvokeRejectedError).cause).toBe(error);
      },
    );

    it('names the payload size and the SDK error in the message of a refusal, to serve as the dead-letter reason', async () => {
      const bytes = Buffer.byteLength(JSON.stringify(EVENT), 'utf8');
      const tooLarge = await failureOf(
        new RequestTooLargeException({
          message: 'Request must be smaller than 262144 bytes for the Invoke operation',
          $metadata: { httpStatusCode: 413 },
        }),
      );
      expect((tooLarge as Error).message).toBe(
        `worker event of ${bytes} bytes is too large to invoke 'qo-dev-worker': RequestTooLargeException (HTTP 413): Request must be smaller than 262144 bytes for the Invoke operation`,
      );
      const unreadable = await failureOf(
        new InvalidRequestContentException({
          message: 'Could not parse request body into json',
          $metadata: { httpStatusCode: 400 },
        }),
      );
      expect((unreadable as Error).message).toBe(
        `worker event of ${bytes} bytes was refused by invoke of 'qo-dev-worker': InvalidRequestContentException (HTTP 400): Could not parse request body into json`,
      );
    });

    it.each([
      [
        'ResourceNotFoundException',
        new ResourceNotFoundException({ message: 'Function not found', $metadata: { httpStatusCode: 404 } }),
      ],
      ['AccessDeniedException', serviceError('AccessDeniedException', 403, 'client')],
      [
        'InvalidParameterValueException',
        new InvalidParameterValueException({ message: 'bad function name', $metadata: { httpStatusCode: 400 } }),
      ],
    ])(
      'keeps %s, a configuration error that passes once fixed, an InvokeFailedError rather than a refusal',
      async (_, error) => {
        const failure = await failureOf(error);
        expect(failure).toBeInstanceOf(InvokeFailedError);
        // Lambda refused the request: nothing started, so the orchestrator may give the quota back.
        expect((failure as InvokeFailedError).mayHaveStarted).toBe(false);
      },
    );

    it.each([
      ['a 5xx', new ServiceException({ message: 'internal error', $metadata: { httpStatusCode: 500 } })],
      [
        'a timeout',
        Object.assign(new Error('a request has exceeded the configured 5000 ms requestTimeout'), {
          name: 'TimeoutError',
        }),
      ],
      ['a reset connection', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ])(
      'says that an invoke failing with %s may have started: Lambda may have queued the event before the answer was lost',
      async (_, error) => {
        const failure = await failureOf(error);
        expect(failure).toBeInstanceOf(InvokeFailedError);
        expect((failure as InvokeFailedError).mayHaveStarted).toBe(true);
      },
    );

    it('names the SDK error and its HTTP status in the message', async () => {
      const failure = await failureOf(
        new ServiceException({ message: 'internal error', $metadata: { httpStatusCode: 500 } }),
      );
      expect((failure as Error).message).toBe(
        "invoke of 'qo-dev-worker' failed: ServiceException (HTTP 500): internal error",
      );
    });

    it.each([200, 204, undefined])(
      'turns an accepted call with status %s instead of 202 into InvokeFailedError',
      async (status) => {
        lambdaMock.on(InvokeCommand).resolves({ StatusCode: status });
        await expect(invoker().invoke(EVENT)).rejects.toThrow(InvokeFailedError);
        await expect(invoker().invoke(EVENT)).rejects.toThrow(`returned status ${status ?? 'none'}`);
      },
    );
  });
});
