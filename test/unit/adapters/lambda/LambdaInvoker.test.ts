import {
  EC2ThrottledException,
  InvokeCommand,
  LambdaClient,
  LambdaServiceException,
  ResourceNotFoundException,
  ServiceException,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { LambdaInvoker } from '../../../../lib/adapters/lambda/LambdaInvoker';
import { InvokeFailedError, InvokeThrottledError } from '../../../../lib/errors';
import type { WorkerEvent } from '../../../../lib/ports/Invoker';

const lambdaMock = mockClient(LambdaClient);
const EVENT: WorkerEvent = { kind: 'health-check', lane: 'default', checkId: 'c-1', sentAt: 1_700_000_000_000 };

function invoker(): LambdaInvoker {
  return new LambdaInvoker({ client: new LambdaClient({ region: 'us-east-1' }), functionName: 'qo-dev-worker' });
}

/** What `invoke` rejects with when the SDK rejects with `error`. */
async function failureOf(error: Error): Promise<unknown> {
  lambdaMock.on(InvokeCommand).rejects(error);
  return invoker().invoke(EVENT).then(
    () => {
      throw new Error('expected invoke to reject');
    },
    (failure: unknown) => failure,
  );
}

/** An unmodelled Lambda error with an HTTP status, as the SDK builds it. */
function serviceError(name: string, status: number, fault: 'client' | 'server'): LambdaServiceException {
  return new LambdaServiceException({ name, $fault: fault, message: `${name} happened`, $metadata: { httpStatusCode: status } });
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
      expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString('utf8'))).toEqual({ ...EVENT, lane: 'läne ✓' });
    });

    it.each([
      ['TooManyRequestsException', new TooManyRequestsException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 429 }, Reason: 'CallerRateLimitExceeded' })],
      ['EC2ThrottledException', new EC2ThrottledException({ message: 'EC2 throttled', $metadata: { httpStatusCode: 502 } })],
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
      ['a 4xx such as ResourceNotFoundException', new ResourceNotFoundException({ message: 'Function not found', $metadata: { httpStatusCode: 404 } })],
      ['a network error', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3002'), { code: 'ECONNREFUSED' })],
    ])('turns %s into InvokeFailedError with the SDK error as cause', async (_, error) => {
      const failure = await failureOf(error);
      expect(failure).toBeInstanceOf(InvokeFailedError);
      expect((failure as InvokeFailedError).cause).toBe(error);
    });

    it('names the SDK error and its HTTP status in the message', async () => {
      const failure = await failureOf(new ServiceException({ message: 'internal error', $metadata: { httpStatusCode: 500 } }));
      expect((failure as Error).message).toBe("invoke of 'qo-dev-worker' failed: ServiceException (HTTP 500): internal error");
    });

    it.each([200, 204, undefined])('turns an accepted call with status %s instead of 202 into InvokeFailedError', async (status) => {
      lambdaMock.on(InvokeCommand).resolves({ StatusCode: status });
      await expect(invoker().invoke(EVENT)).rejects.toThrow(InvokeFailedError);
      await expect(invoker().invoke(EVENT)).rejects.toThrow(`returned status ${status ?? 'none'}`);
    });
  });
});
