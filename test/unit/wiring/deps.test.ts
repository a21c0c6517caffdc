import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { orchestratorDepsFromEnv } from '../../../lib/wiring/orchestratorDeps';
import { workerDepsFromEnv } from '../../../lib/wiring/workerDeps';
import { serviceConfigFromEnv, type Env } from '../../../lib/configFromEnv';
import { ConfigError } from '../../../lib/errors';
import type { WorkerEvent } from '../../../lib/ports/Invoker';
import { thrown } from '../../helpers/thrown';

const lambdaMock = mockClient(LambdaClient);
const sqsMock = mockClient(SQSClient);
const ddbMock = mockClient(DynamoDBDocumentClient);

/** Real SDK clients with dummy settings; every `send` goes to the mocks above, never to the network. */
function clients(): { dynamodb: DynamoDBClient; sqs: SQSClient; lambda: LambdaClient } {
  const config = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
  return { dynamodb: new DynamoDBClient(config), sqs: new SQSClient(config), lambda: new LambdaClient(config) };
}

/** What serverless.yml sets on both functions, plus each function's own variables. */
const ENV = {
  QUOTAS: '[{"limit":10,"per":"second"}]',
  LANE: 'billing',
  TABLE_NAME: 'qo-test-state',
  WORKER_FUNCTION_NAME: 'qo-test-worker',
  API_URL: 'https://api.example.test/jobs',
  HEALTH_URL: 'https://api.example.test/health',
  MAIN_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-main',
  FIFO_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-fifo.fifo',
  REQUEUE_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-requeue',
  BULK_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-bulk',
  MAIN_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-main-dlq',
  FIFO_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-fifo-dlq.fifo',
  REQUEUE_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-requeue-dlq',
  BULK_DLQ_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/qo-test-bulk-dlq',
} as const satisfies Env;

const HEALTH_EVENT: WorkerEvent = { kind: 'health-check', lane: 'billing', checkId: 'c-1', sentAt: 1_700_000_000_000 };

/** A `fetch` that answers only when its signal aborts (as a hung API would), recording each URL it was asked for. */
function hangingFetch(urls: string[]): typeof fetch {
  return (input, init) => {
    urls.push(String(input));
    return new Promise((_, reject) => {
      init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
    });
  };
}

beforeEach(() => {
  lambdaMock.reset();
  sqsMock.reset();
  ddbMock.reset();
});

afterEach(() => {
  jest.restoreAllMocks();
});

afterAll(() => {
  lambdaMock.restore();
  sqsMock.restore();
  ddbMock.restore();
});

describe('orchestratorDepsFromEnv', () => {
  it('validates the configuration from the environment', () => {
    const deps = orchestratorDepsFromEnv(ENV, clients());

    expect(deps.config).toEqual(serviceConfigFromEnv(ENV));
    expect(deps.config.lane).toBe('billing');
  });

  it('invokes the worker function named by WORKER_FUNCTION_NAME', async () => {
    lambdaMock.on(InvokeCommand).resolves({ StatusCode: 202 });
    const deps = orchestratorDepsFromEnv(ENV, clients());

    await deps.invoker.invoke(HEALTH_EVENT);

    expect(lambdaMock.commandCalls(InvokeCommand).map((call) => call.args[0].input.FunctionName)).toEqual([
      'qo-test-worker',
    ]);
  });

  it('keeps state in the table named by TABLE_NAME', async () => {
    ddbMock.on(GetCommand).resolves({});
    const deps = orchestratorDepsFromEnv(ENV, clients());

    await expect(deps.stores.ledger.loadLedger('billing')).resolves.toBeUndefined();
    await expect(deps.stores.circuit.loadCircuit('billing')).resolves.toBeUndefined();

    // The ledger: the lane item and the call slots' item; then the circuit.
    expect(ddbMock.commandCalls(GetCommand).map((call) => call.args[0].input.TableName)).toEqual([
      'qo-test-state',
      'qo-test-state',
      'qo-test-state',
    ]);
  });

  it('passes the lease, ledger, circuit and limit stores, not the idempotency store', () => {
    expect(Object.keys(orchestratorDepsFromEnv(ENV, clients()).stores).sort()).toEqual([
      'circuit',
      'lease',
      'ledger',
      'limits',
    ]);
  });

  it('reads each queue at the URL of its variable', async () => {
    sqsMock.on(ReceiveMessageCommand).resolves({ Messages: [] });
    const deps = orchestratorDepsFromEnv(ENV, clients());

    await deps.queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 0 });
    await deps.queues.receive('fifo', { max: 1, visibilityMs: 30_000, waitMs: 0 });

    expect(sqsMock.commandCalls(ReceiveMessageCommand).map((call) => call.args[0].input.QueueUrl)).toEqual([
      ENV.MAIN_QUEUE_URL,
      ENV.FIFO_QUEUE_URL,
    ]);
  });

  it('runs on the wall clock and makes fresh unique ids', () => {
    const deps = orchestratorDepsFromEnv(ENV, clients());
    const before = Date.now();

    const now = deps.clock.now();

    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
    expect(deps.newId()).not.toBe(deps.newId());
  });

  it.each(['WORKER_FUNCTION_NAME', 'TABLE_NAME', 'MAIN_QUEUE_URL', 'QUOTAS'])(
    'refuses an environment without %s, naming it',
    (name) => {
      const error = thrown(ConfigError, () => orchestratorDepsFromEnv({ ...ENV, [name]: undefined }, clients()));

      expect(error.field).toBe(name);
    },
  );

  it('does not need the worker’s API variables', () => {
    expect(() =>
      orchestratorDepsFromEnv({ ...ENV, API_URL: undefined, HEALTH_URL: undefined }, clients()),
    ).not.toThrow();
  });

  it('names the variable and field of an invalid configuration value', () => {
    const error = thrown(ConfigError, () =>
      orchestratorDepsFromEnv({ ...ENV, CIRCUIT: '{"openSeconds":0}' }, clients()),
    );

    expect(error.field).toBe('CIRCUIT.openSeconds');
  });
});

describe('workerDepsFromEnv', () => {
  it('validates the configuration from the environment', () => {
    const deps = workerDepsFromEnv(ENV, clients());

    expect(deps.config).toEqual(serviceConfigFromEnv(ENV));
  });

  it('posts jobs to API_URL and probes HEALTH_URL', async () => {
    const fetched: string[] = [];
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (input) => {
      fetched.push(String(input));
      return new Response(null, { status: 200 });
    });
    const deps = workerDepsFromEnv(ENV, clients());

    await expect(deps.api.call('{"id":"a"}', { idempotencyKey: 'k-1' })).resolves.toMatchObject({
      kind: 'response',
      status: 200,
    });
    await expect(deps.api.probe()).resolves.toMatchObject({ kind: 'response', status: 200 });

    expect(fetched).toEqual([ENV.API_URL, ENV.HEALTH_URL]);
  });

  it("calls the API through the clients' fetch when they give one", async () => {
    const fetched: string[] = [];
    const fetch: typeof globalThis.fetch = async (input) => {
      fetched.push(String(input));
      return new Response(null, { status: 200 });
    };
    const global = jest.spyOn(globalThis, 'fetch');

    await workerDepsFromEnv(ENV, { ...clients(), fetch }).api.call('{"id":"a"}', { idempotencyKey: 'a' });

    expect(fetched).toEqual([ENV.API_URL]);
    expect(global).not.toHaveBeenCalled();
  });

  it('sends the key from the SSM parameter API_KEY_PARAMETER as a bearer token, and none without it', async () => {
    const ssmMock = mockClient(SSMClient);
    ssmMock
      .on(GetParameterCommand, { Name: '/qo/test/api-key', WithDecryption: true })
      .resolves({ Parameter: { Value: 'k3y' } });
    const sent: (string | null)[] = [];
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (_, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      return new Response(null, { status: 200 });
    });
    const config = { region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
    try {
      await workerDepsFromEnv(
        { ...ENV, API_KEY_PARAMETER: '/qo/test/api-key' },
        { ...clients(), ssm: new SSMClient(config) },
      ).api.call('{"id":"a"}', { idempotencyKey: 'a' });
      await workerDepsFromEnv(ENV, clients()).api.call('{"id":"b"}', { idempotencyKey: 'b' });
    } finally {
      ssmMock.restore();
    }
    expect(sent).toEqual(['Bearer k3y', null]);
  });

  it('sends the key in API_KEY_HEADER with API_KEY_SCHEME, REQUEST_HEADERS on calls and probes, and API_METHOD', async () => {
    const ssmMock = mockClient(SSMClient);
    ssmMock.on(GetParameterCommand).resolves({ Parameter: { Value: 'sk-ant' } });
    const sent: [string | undefined, Record<string, string>][] = [];
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (_, init) => {
      sent.push([init?.method, Object.fromEntries(new Headers(init?.headers))]);
      return new Response(null, { status: 200 });
    });
    const ssm = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    const env = {
      ...ENV,
      API_KEY_PARAMETER: '/qo/test/api-key',
      API_METHOD: 'PATCH',
      API_KEY_HEADER: 'x-api-key',
      REQUEST_HEADERS: '{"anthropic-version":"2023-06-01"}',
      HEALTH_CHECK_SENDS_KEY: 'false',
    };
    try {
      const { api } = workerDepsFromEnv(env, { ...clients(), ssm });
      await api.call('{"id":"a"}', { idempotencyKey: 'a' });
      await api.probe();
    } finally {
      ssmMock.restore();
    }
    expect(sent).toEqual([
      [
        'PATCH',
        {
          'anthropic-version': '2023-06-01',
          'content-type': 'application/json',
          'idempotency-key': 'a',
          'x-api-key': 'sk-ant',
        },
      ],
      ['GET', { 'anthropic-version': '2023-06-01' }],
    ]);
  });

  it('keeps the key API_KEY_CACHE_SECONDS before reading the parameter again, 300 s by default', async () => {
    const ssmMock = mockClient(SSMClient);
    ssmMock
      .on(GetParameterCommand)
      .resolvesOnce({ Parameter: { Value: 'old' } })
      .resolves({ Parameter: { Value: 'new' } });
    const sent: (string | null)[] = [];
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (_, init) => {
      sent.push(new Headers(init?.headers).get('authorization'));
      return new Response(null, { status: 200 });
    });
    const ssm = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0);
    try {
      const short = workerDepsFromEnv(
        { ...ENV, API_KEY_PARAMETER: '/qo/test/api-key', API_KEY_CACHE_SECONDS: '10' },
        { ...clients(), ssm },
      ).api;
      await short.call('{"id":"a"}', { idempotencyKey: 'a' });
      now.mockReturnValue(t0 + 11_000);
      await short.call('{"id":"b"}', { idempotencyKey: 'b' });
    } finally {
      ssmMock.restore();
    }
    expect(sent).toEqual(['Bearer old', 'Bearer new']);
  });

  it('gives up on a key read after API_KEY_READ_TIMEOUT_MS: the caller is not ready, and nothing is sent', async () => {
    const ssmMock = mockClient(SSMClient);
    ssmMock.on(GetParameterCommand).callsFake(() => new Promise(() => undefined));
    const fetch = jest.spyOn(globalThis, 'fetch');
    const ssm = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const { api } = workerDepsFromEnv(
        { ...ENV, API_KEY_PARAMETER: '/qo/test/api-key', API_KEY_READ_TIMEOUT_MS: '300' },
        { ...clients(), ssm },
      );
      const preparing = api.prepare?.();
      await jest.advanceTimersByTimeAsync(300);

      await expect(preparing).resolves.toEqual({
        kind: 'not-ready',
        reason: 'no API key: not read within 300 ms',
      });
    } finally {
      jest.useRealTimers();
      ssmMock.restore();
    }
    expect(fetch).not.toHaveBeenCalled();
  });

  it.each(['0', '3601', 'soon'])('refuses API_KEY_CACHE_SECONDS %s, naming it and its range', (value) => {
    const error = thrown(ConfigError, () =>
      workerDepsFromEnv({ ...ENV, API_KEY_PARAMETER: '/qo/test/api-key', API_KEY_CACHE_SECONDS: value }, clients()),
    );
    expect(error.message).toBe(
      `API_KEY_CACHE_SECONDS: must be a whole number of seconds from 1 to 3600; got '${value}'`,
    );
  });

  it('keeps state in TABLE_NAME and deletes from the queue URLs of the environment', async () => {
    ddbMock.on(GetCommand).resolves({});
    sqsMock.on(DeleteMessageCommand).resolves({});
    const deps = workerDepsFromEnv(ENV, clients());

    await deps.stores.idempotency.getIdempotency('k-1', Date.now());
    await deps.stores.circuit.loadCircuit('billing');
    await deps.queues.delete('requeue', 'rh-1');

    expect(ddbMock.commandCalls(GetCommand).map((call) => call.args[0].input.TableName)).toEqual([
      'qo-test-state',
      'qo-test-state',
    ]);
    expect(sqsMock.commandCalls(DeleteMessageCommand).map((call) => call.args[0].input)).toEqual([
      { QueueUrl: ENV.REQUEUE_QUEUE_URL, ReceiptHandle: 'rh-1' },
    ]);
  });

  it('passes the idempotency, ledger, circuit and limit stores, not the lease store', () => {
    expect(Object.keys(workerDepsFromEnv(ENV, clients()).stores).sort()).toEqual([
      'circuit',
      'idempotency',
      'ledger',
      'limits',
    ]);
  });

  describe('results', () => {
    const result = {
      lane: 'billing',
      queue: 'main',
      messageId: 'm',
      dispatchId: 'd',
      idempotencyKey: 'k',
      attempt: 1,
      at: 0,
      status: 200,
      headers: {},
      body: 'ok',
      bodyTruncated: false,
    } as const;

    it('hands results to no one without RESULT_DESTINATION', () => {
      expect(workerDepsFromEnv(ENV, clients()).results).toBeUndefined();
    });

    it('sends results to the SQS queue RESULT_DESTINATION names, with the SQS client', async () => {
      sqsMock
        .on(GetQueueUrlCommand)
        .resolves({ QueueUrl: 'https://sqs.test/123456789012/results' })
        .on(SendMessageBatchCommand)
        .resolves({ Successful: [], Failed: [] });
      const deps = workerDepsFromEnv(
        { ...ENV, RESULT_DESTINATION: '{"type":"sqs","queueArn":"arn:aws:sqs:us-east-1:123456789012:results"}' },
        clients(),
      );
      await expect(deps.results?.deliver([result])).resolves.toEqual([]);
      expect(sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.QueueUrl)).toEqual([
        'https://sqs.test/123456789012/results',
      ]);
    });

    it("puts results on the EventBridge bus RESULT_DESTINATION names, with the clients' EventBridge client", async () => {
      const ebMock = mockClient(EventBridgeClient);
      try {
        ebMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e' }] });
        const eventbridge = new EventBridgeClient({
          region: 'us-east-1',
          credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
        });
        const deps = workerDepsFromEnv(
          { ...ENV, RESULT_DESTINATION: '{"type":"eventbridge","busName":"jobs"}' },
          { ...clients(), eventbridge },
        );
        await expect(deps.results?.deliver([result])).resolves.toEqual([]);
        expect(ebMock.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries?.[0]).toMatchObject({
          EventBusName: 'jobs',
          Source: 'quota-orchestrator',
          DetailType: 'Job Result',
        });
      } finally {
        ebMock.restore();
      }
    });

    it('names the variable and field of an invalid destination', () => {
      expect(
        thrown(ConfigError, () =>
          workerDepsFromEnv({ ...ENV, RESULT_DESTINATION: '{"type":"eventbridge"}' }, clients()),
        ).field,
      ).toBe('RESULT_DESTINATION.busName');
    });
  });

  it('gives up on an API call after API_TIMEOUT_MS', async () => {
    const fetched: string[] = [];
    jest.spyOn(globalThis, 'fetch').mockImplementation(hangingFetch(fetched));
    const deps = workerDepsFromEnv({ ...ENV, API_TIMEOUT_MS: '20' }, clients());

    await expect(deps.api.call('{"id":"a"}', { idempotencyKey: 'k-1' })).resolves.toEqual({
      kind: 'timeout',
      afterMs: 20,
    });
    expect(fetched).toEqual([ENV.API_URL]);
  });

  it('defaults the API timeout to half the worker timeout when that is under 10 s', async () => {
    jest.spyOn(globalThis, 'fetch').mockImplementation(hangingFetch([]));
    const deps = workerDepsFromEnv(
      { ...ENV, ORCHESTRATOR: '{"workerTimeoutMs":1000,"visibilityTimeoutMs":30000}' },
      clients(),
    );

    await expect(deps.api.probe()).resolves.toEqual({ kind: 'timeout', afterMs: 500 });
  });

  it.each(['API_URL', 'HEALTH_URL', 'TABLE_NAME', 'REQUEUE_DLQ_URL', 'QUOTAS'])(
    'refuses an environment without %s, naming it',
    (name) => {
      const error = thrown(ConfigError, () => workerDepsFromEnv({ ...ENV, [name]: undefined }, clients()));

      expect(error.field).toBe(name);
    },
  );

  it('does not need WORKER_FUNCTION_NAME', () => {
    expect(() => workerDepsFromEnv({ ...ENV, WORKER_FUNCTION_NAME: undefined }, clients())).not.toThrow();
  });

  it('accepts an API_TIMEOUT_MS just below the worker timeout', () => {
    const env = { ...ENV, ORCHESTRATOR: '{"workerTimeoutMs":5000}', API_TIMEOUT_MS: '4999' };

    expect(() => workerDepsFromEnv(env, clients())).not.toThrow();
  });

  it.each(['5000', '6000'])(
    'refuses API_TIMEOUT_MS=%s, not below the worker timeout of 5000, naming API_TIMEOUT_MS and the range',
    (text) => {
      const env = { ...ENV, ORCHESTRATOR: '{"workerTimeoutMs":5000}', API_TIMEOUT_MS: text };

      const error = thrown(ConfigError, () => workerDepsFromEnv(env, clients()));

      expect(error.field).toBe('API_TIMEOUT_MS');
      expect(error.message).toBe(
        `API_TIMEOUT_MS: must be a whole number of milliseconds from 1 to 4999; got '${text}'`,
      );
    },
  );

  it('accepts an API_TIMEOUT_MS just below CIRCUIT.healthCheckTimeoutSeconds', () => {
    expect(() =>
      workerDepsFromEnv({ ...ENV, CIRCUIT: '{"healthCheckTimeoutSeconds":4}', API_TIMEOUT_MS: '3999' }, clients()),
    ).not.toThrow();
  });

  it('refuses an API_TIMEOUT_MS not below CIRCUIT.healthCheckTimeoutSeconds, naming both', () => {
    const error = thrown(ConfigError, () =>
      workerDepsFromEnv({ ...ENV, CIRCUIT: '{"healthCheckTimeoutSeconds":4}', API_TIMEOUT_MS: '4000' }, clients()),
    );

    expect(error.field).toBe('API_TIMEOUT_MS');
    expect(error.message).toBe(
      'API_TIMEOUT_MS: must be below CIRCUIT.healthCheckTimeoutSeconds (4000 ms), so a health probe still calling is never presumed lost and overlapped by the next; got 4000. Lower it or raise CIRCUIT.healthCheckTimeoutSeconds',
    );
  });

  it('refuses a default API timeout not below CIRCUIT.healthCheckTimeoutSeconds, saying it is the default', () => {
    const error = thrown(ConfigError, () =>
      workerDepsFromEnv({ ...ENV, CIRCUIT: '{"healthCheckTimeoutSeconds":10}' }, clients()),
    );

    expect(error.field).toBe('API_TIMEOUT_MS');
    expect(error.message).toContain('got 10000 (the default)');
  });

  it('refuses an API_TIMEOUT_MS that is not a whole number', () => {
    const error = thrown(ConfigError, () => workerDepsFromEnv({ ...ENV, API_TIMEOUT_MS: '2.5' }, clients()));

    expect(error.field).toBe('API_TIMEOUT_MS');
  });
});
