import { InvokeCommand, LambdaClient, type InvocationType } from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { KilledAtTimeout, killable, killableFetch } from '../../../tools/local/invocationScope';
import { FakeClock } from '../../../tools/memory/FakeClock';
import type {
  DestinationRecord,
  LocalFunction,
  LocalLambdaContext,
  LocalLambdaHostOptions,
} from '../../../tools/local/lambdaHost';
import { LocalLambdaHost } from '../../../tools/local/lambdaHost';
import { seededRandom } from '../../../tools/simulation/random';
import { DEFAULT_DUPLICATES, InvokeTiming } from '../../../tools/simulation/startDelays';
import { thrown } from '../../helpers/thrown';

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** One handler call, settled by the test through `result`. */
interface Call {
  readonly event: unknown;
  readonly context: LocalLambdaContext;
  readonly result: Deferred<unknown>;
}

/** A handler whose every call waits until the test settles it; `nextCall()` yields the calls in order. */
function scripted() {
  const arrivals: Deferred<Call>[] = [];
  let made = 0;
  let taken = 0;
  const arrival = (i: number): Deferred<Call> => (arrivals[i] ??= deferred<Call>());
  const handler = (event: unknown, context: LocalLambdaContext): Promise<unknown> => {
    const result = deferred<unknown>();
    arrival(made++).resolve({ event, context, result });
    return result.promise;
  };
  return {
    handler,
    nextCall: (): Promise<Call> => arrival(taken++).promise,
    get calls(): number {
      return made;
    },
  };
}

/** Lets every promise chain that is ready run to completion. */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function fn(overrides: Partial<LocalFunction> & Pick<LocalFunction, 'handler'>): LocalFunction {
  return { name: 'worker', timeoutMs: 60_000, maximumRetryAttempts: 0, ...overrides };
}

const hosts: LocalLambdaHost[] = [];
const clients: LambdaClient[] = [];

/** Starts a host and returns it with a real LambdaClient on its endpoint (no SDK retries, so every 429 shows). */
async function start(
  functions: LocalFunction[],
  options?: LocalLambdaHostOptions,
): Promise<{ host: LocalLambdaHost; client: LambdaClient }> {
  const host = new LocalLambdaHost(functions, options);
  hosts.push(host);
  const endpoint = await host.listen();
  const client = new LambdaClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  clients.push(client);
  return { host, client };
}

function invoke(
  client: LambdaClient,
  payload: unknown,
  options: { name?: string; type?: InvocationType; qualifier?: string } = {},
) {
  return client.send(
    new InvokeCommand({
      FunctionName: options.name ?? 'worker',
      InvocationType: options.type ?? 'Event',
      Qualifier: options.qualifier,
      Payload: Buffer.from(JSON.stringify(payload)),
    }),
  );
}

function decode(payload: Uint8Array | undefined): unknown {
  return JSON.parse(Buffer.from(payload ?? []).toString('utf8'));
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await Promise.all(hosts.splice(0).map((host) => host.close()));
});

describe('LocalLambdaHost', () => {
  describe('constructor', () => {
    it('refuses two functions of one name', () => {
      const handler = async () => undefined;
      expect(thrown(RangeError, () => new LocalLambdaHost([fn({ handler }), fn({ handler })])).message).toMatch(
        /'worker'/,
      );
    });
  });

  describe('Event invocations', () => {
    it('answers 202 with an empty body, then runs the handler with the payload and a context on the clock', async () => {
      const clock = new FakeClock(5_000);
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler, timeoutMs: 3_000 })], { clock });

      const response = await invoke(client, { kind: 'job', id: 'a' });
      expect(response.StatusCode).toBe(202);
      expect(response.Payload?.length ?? 0).toBe(0);

      const call = await worker.nextCall();
      expect(call.event).toEqual({ kind: 'job', id: 'a' });
      expect(call.context.functionName).toBe('worker');
      expect(call.context.awsRequestId).toBe(response.$metadata.requestId);
      expect(call.context.getRemainingTimeInMillis()).toBe(3_000);
      await clock.advance(1_000);
      expect(call.context.getRemainingTimeInMillis()).toBe(2_000);

      call.result.resolve('succeeded');
      await flush();
      expect(host.stats('worker')).toMatchObject({
        invocations: 1,
        errors: 0,
        running: 0,
        results: new Map([['succeeded', 1]]),
      });
      expect(host.idle()).toBe(true);
    });

    it('counts each outcome of a list result (a batch) as a result of its own', async () => {
      const clock = new FakeClock(0);
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler, timeoutMs: 3_000 })], { clock });
      await invoke(client, { kind: 'batch', jobs: [] });
      (await worker.nextCall()).result.resolve(['succeeded', 'too-late', 'succeeded']);
      await flush();
      expect(host.stats('worker')).toMatchObject({
        invocations: 1,
        results: new Map([
          ['succeeded', 2],
          ['too-late', 1],
        ]),
      });
    });

    it.each([
      ['a full ARN', 'arn:aws:lambda:us-east-1:000000000000:function:worker', undefined],
      ['a full ARN with a qualifier', 'arn:aws:lambda:us-east-1:000000000000:function:worker:live', undefined],
      ['a partial ARN', '000000000000:function:worker', undefined],
      ['name:qualifier', 'worker:7', undefined],
      ['a Qualifier parameter', 'worker', '$LATEST'],
    ])('resolves %s to the function name', async (_label, name, qualifier) => {
      const worker = scripted();
      const { client } = await start([fn({ handler: worker.handler })]);
      expect((await invoke(client, { id: 'a' }, { name, qualifier })).StatusCode).toBe(202);
      expect((await worker.nextCall()).event).toEqual({ id: 'a' });
    });

    it('retries a throwing handler maximumRetryAttempts times, then hands the destination record to onFailure', async () => {
      let calls = 0;
      const handler = async (): Promise<unknown> => {
        calls++;
        throw new TypeError('bad event');
      };
      const failed = deferred<DestinationRecord>();
      const { host, client } = await start(
        [fn({ handler, maximumRetryAttempts: 2, onFailure: async (record) => failed.resolve(record) })],
        { retryDelayMs: 0 },
      );

      const response = await invoke(client, { id: 'a' });
      const record = await failed.promise;

      expect(calls).toBe(3);
      expect(record).toEqual({
        version: '1.0',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        requestContext: {
          requestId: response.$metadata.requestId,
          functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:worker:$LATEST',
          condition: 'RetriesExhausted',
          approximateInvokeCount: 3,
        },
        requestPayload: { id: 'a' },
        responseContext: { statusCode: 200, functionError: 'Unhandled' },
        responsePayload: { errorMessage: 'bad event', errorType: 'TypeError' },
      });
      await flush();
      expect(host.stats('worker')).toMatchObject({ invocations: 3, errors: 3, retries: 2, running: 0, discarded: 0 });
      expect(host.idle()).toBe(true);
    });

    it('counts an invocation whose retries are exhausted without onFailure as discarded', async () => {
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler })]);
      await invoke(client, { id: 'a' });
      (await worker.nextCall()).result.reject(new Error('boom'));
      await flush();
      expect(host.stats('worker')).toMatchObject({ invocations: 1, errors: 1, retries: 0, discarded: 1 });
      expect(host.idle()).toBe(true);
    });

    it('fails an attempt that outlives its timeout, frees its slot at once and ignores its late result', async () => {
      const clock = new FakeClock();
      const worker = scripted();
      const failed = deferred<DestinationRecord>();
      const { host, client } = await start(
        [
          fn({
            handler: worker.handler,
            timeoutMs: 3_000,
            reservedConcurrency: 1,
            onFailure: async (record) => failed.resolve(record),
          }),
        ],
        { clock },
      );
      await invoke(client, { id: 'a' });
      const call = await worker.nextCall();

      await clock.advance(2_999);
      expect(host.stats('worker').running).toBe(1);
      await clock.advance(1);
      const record = await failed.promise;
      expect(record.responsePayload).toEqual({
        errorMessage: expect.stringMatching(/Task timed out after 3\.00 seconds$/),
        errorType: 'Sandbox.Timedout',
      });
      expect(record.timestamp).toBe('1970-01-01T00:00:03.000Z');
      expect(host.stats('worker')).toMatchObject({ errors: 1, running: 0 });

      call.result.resolve('succeeded');
      await flush();
      expect(host.stats('worker').results.size).toBe(0);
      expect((await invoke(client, { id: 'b' })).StatusCode).toBe(202);
    });

    it("stops what an attempt does at its timeout, as Lambda stops it: its clients' requests fail after, and onTimeout hears of it", async () => {
      const clock = new FakeClock();
      const goOn = deferred<void>();
      const sent = jest.fn(async () => new Response('ok'));
      const fetch = killableFetch(sent);
      const sqs = killable(
        new SQSClient({
          endpoint: 'http://127.0.0.1:9',
          region: 'us-east-1',
          credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
          maxAttempts: 1,
        }),
      );
      clients.push(sqs as unknown as LambdaClient);
      const after: unknown[] = [];
      const handler = async (event: unknown) => {
        await fetch('http://api.test/before');
        await goOn.promise;
        after.push(await fetch('http://api.test/after').catch((error: unknown) => error));
        after.push(await sqs.send(new GetQueueUrlCommand({ QueueName: 'q' })).catch((error: unknown) => error));
        return event;
      };
      const timedOut: [string, unknown][] = [];
      const { client } = await start([fn({ handler, timeoutMs: 3_000 })], {
        clock,
        onTimeout: (name, payload) => void timedOut.push([name, payload]),
      });
      await invoke(client, { id: 'late' });
      await flush();
      await clock.advance(3_000);
      expect(timedOut).toEqual([['worker', { id: 'late' }]]);
      goOn.resolve();
      await flush();
      await flush();
      expect(sent).toHaveBeenCalledTimes(1);
      expect(after).toEqual([expect.any(KilledAtTimeout), expect.any(KilledAtTimeout)]);

      // One that ends in time is not stopped, and nobody hears of it at its timeout.
      await invoke(client, { id: 'prompt' });
      await flush();
      await clock.advance(3_000);
      expect(timedOut).toHaveLength(1);
    });

    it('holds a retry until a concurrency slot is free, then runs it with the same request id', async () => {
      const clock = new FakeClock();
      const worker = scripted();
      const { host, client } = await start(
        [fn({ handler: worker.handler, reservedConcurrency: 1, maximumRetryAttempts: 1 })],
        { clock, retryDelayMs: 1_000 },
      );

      await invoke(client, { id: 'a' });
      const firstA = await worker.nextCall();
      firstA.result.reject(new Error('transient'));
      await flush();
      await invoke(client, { id: 'b' });
      const b = await worker.nextCall();

      await clock.advance(1_000);
      expect(worker.calls).toBe(2);
      expect(host.stats('worker').running).toBe(1);
      expect(host.idle()).toBe(false);

      b.result.resolve('succeeded');
      const retryA = await worker.nextCall();
      expect(retryA.event).toEqual({ id: 'a' });
      expect(retryA.context.awsRequestId).toBe(firstA.context.awsRequestId);
      retryA.result.resolve('succeeded');
      await flush();
      expect(host.stats('worker')).toMatchObject({
        invocations: 3,
        errors: 1,
        retries: 1,
        throttled: 0,
        results: new Map([['succeeded', 2]]),
      });
      expect(host.idle()).toBe(true);
    });
  });

  describe('Event invocations with a timing', () => {
    /** Every event starts 500 ms late and comes again, while the first runs (`whileRunningShare` 1) or 1 s after it ended (0). */
    const twice = (whileRunningShare: number) =>
      new InvokeTiming(
        {
          start: { kind: 'fixed', ms: 500 },
          duplicates: {
            ...DEFAULT_DUPLICATES,
            share: 1,
            whileRunningShare,
            whileRunningMinMs: 100,
            whileRunningMaxMs: 100,
            afterEndMinMs: 1_000,
            afterEndMaxMs: 1_000,
          },
        },
        seededRandom(1),
      );

    it('starts the handler after the drawn start delay, and delivers it again with the same request id while it runs', async () => {
      const clock = new FakeClock(0);
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler })], { clock, timing: twice(1) });
      const response = await invoke(client, { id: 'a' });
      await flush();
      expect(worker.calls).toBe(0);
      await clock.advance(500);
      const first = await worker.nextCall();
      await clock.advance(100);
      const second = await worker.nextCall();
      expect(second.context.awsRequestId).toBe(response.$metadata.requestId);
      expect(first.context.awsRequestId).toBe(response.$metadata.requestId);
      first.result.resolve('succeeded');
      second.result.resolve('succeeded');
      await flush();
      expect(host.stats('worker')).toMatchObject({ invocations: 2, duplicateDeliveries: 1, retries: 0 });
      expect(host.idle()).toBe(true);
    });

    it('delivers an event again after its first delivery ended, staying busy until then', async () => {
      const clock = new FakeClock(0);
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler })], { clock, timing: twice(0) });
      await invoke(client, { id: 'a' });
      await flush();
      await clock.advance(500);
      (await worker.nextCall()).result.resolve('succeeded');
      await flush();
      expect(host.idle()).toBe(false);
      await clock.advance(1_000);
      (await worker.nextCall()).result.resolve('succeeded');
      await flush();
      expect(host.stats('worker')).toMatchObject({
        invocations: 2,
        duplicateDeliveries: 1,
        results: new Map([['succeeded', 2]]),
      });
      expect(host.idle()).toBe(true);
    });
  });

  describe('RequestResponse invocations', () => {
    it('answers 200 with the JSON result and the executed version', async () => {
      const { client } = await start([fn({ handler: async (event) => ({ echo: event }) })]);
      const response = await invoke(client, { id: 'a' }, { type: 'RequestResponse' });
      expect(response.StatusCode).toBe(200);
      expect(response.FunctionError).toBeUndefined();
      expect(response.ExecutedVersion).toBe('$LATEST');
      expect(decode(response.Payload)).toEqual({ echo: { id: 'a' } });
    });

    it('answers a thrown error with X-Amz-Function-Error Unhandled and its message and type, without retrying', async () => {
      let calls = 0;
      const handler = async (): Promise<unknown> => {
        calls++;
        throw new RangeError('out of range');
      };
      const { host, client } = await start([fn({ handler, maximumRetryAttempts: 2 })]);
      const response = await invoke(client, {}, { type: 'RequestResponse' });
      expect(response.StatusCode).toBe(200);
      expect(response.FunctionError).toBe('Unhandled');
      expect(decode(response.Payload)).toEqual({ errorMessage: 'out of range', errorType: 'RangeError' });
      expect(calls).toBe(1);
      expect(host.stats('worker').errors).toBe(1);
    });
  });

  describe('DryRun invocations', () => {
    it('answers 204 and runs nothing', async () => {
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler })]);
      expect((await invoke(client, {}, { type: 'DryRun' })).StatusCode).toBe(204);
      expect(worker.calls).toBe(0);
      expect(host.stats('worker').invocations).toBe(0);
    });
  });

  describe('concurrency', () => {
    it('throttles an invocation beyond reservedConcurrency with TooManyRequestsException', async () => {
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler, reservedConcurrency: 1 })]);
      await invoke(client, { id: 'a' });
      const a = await worker.nextCall();

      const error = await invoke(client, { id: 'b' }).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: 'TooManyRequestsException',
        Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
        message: 'Rate Exceeded.',
        $metadata: { httpStatusCode: 429 },
      });
      expect(host.stats('worker')).toMatchObject({ invocations: 1, throttled: 1, running: 1 });

      a.result.resolve('succeeded');
      await flush();
      expect((await invoke(client, { id: 'c' })).StatusCode).toBe(202);
      expect((await worker.nextCall()).event).toEqual({ id: 'c' });
    });

    it('throttles beyond accountConcurrency across functions', async () => {
      const worker = scripted();
      const other = scripted();
      const { host, client } = await start(
        [fn({ handler: worker.handler }), fn({ name: 'other', handler: other.handler })],
        { accountConcurrency: 1 },
      );
      await invoke(client, {});
      await worker.nextCall();
      const error = await invoke(client, {}, { name: 'other', type: 'RequestResponse' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'TooManyRequestsException', Reason: 'ConcurrentInvocationLimitExceeded' });
      expect(host.stats('other')).toMatchObject({ invocations: 0, throttled: 1 });
      expect(other.calls).toBe(0);
    });
  });

  describe('errors', () => {
    it('answers an unknown function with ResourceNotFoundException', async () => {
      const { client } = await start([fn({ handler: async () => undefined })]);
      const error = await invoke(client, {}, { name: 'arn:aws:lambda:us-east-1:000000000000:function:nope' }).catch(
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: 'ResourceNotFoundException', $metadata: { httpStatusCode: 404 } });
      expect((error as Error).message).toMatch(/Function not found/);
    });

    it('answers a payload that is not JSON with InvalidRequestContentException and runs nothing', async () => {
      const worker = scripted();
      const { client } = await start([fn({ handler: worker.handler })]);
      const error = await client
        .send(new InvokeCommand({ FunctionName: 'worker', InvocationType: 'Event', Payload: Buffer.from('{') }))
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'InvalidRequestContentException', $metadata: { httpStatusCode: 400 } });
      expect(worker.calls).toBe(0);
    });
  });

  describe('stats', () => {
    it('bills each attempt from its start to its end, and a timed-out one to its timeout', async () => {
      const clock = new FakeClock(0);
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler, timeoutMs: 3_000 })], { clock });
      await invoke(client, { n: 1 });
      const first = await worker.nextCall();
      await clock.advance(250);
      first.result.resolve('succeeded');
      await flush();
      expect(host.stats('worker').billedMs).toBe(250);

      await invoke(client, { n: 2 });
      await worker.nextCall();
      await clock.advance(5_000);
      await flush();
      expect(host.stats('worker')).toMatchObject({ billedMs: 3_250, errors: 1 });
    });

    it('refuses a name the host does not serve', () => {
      const host = new LocalLambdaHost([fn({ handler: async () => undefined })]);
      expect(thrown(RangeError, () => host.stats('nope')).message).toMatch(/'nope'/);
    });
  });

  describe('idle', () => {
    it('is true before any invocation, false while one runs, and true again once it ends', async () => {
      const worker = scripted();
      const { host, client } = await start([fn({ handler: worker.handler })]);
      expect(host.idle()).toBe(true);
      await invoke(client, {});
      expect(host.idle()).toBe(false);
      (await worker.nextCall()).result.resolve(undefined);
      await flush();
      expect(host.idle()).toBe(true);
    });
  });
});
