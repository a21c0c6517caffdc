import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { CLIENT_CONFIG } from '../../lib/adapters/aws/clientConfig';
import { orchestratorClients } from '../../lib/wiring/orchestratorDeps';
import { DEFAULT_ORCHESTRATOR_SETTINGS } from '../../lib/config';

/** A server that accepts connections and requests and never answers, as a hung AWS endpoint would. */
let hung: Server;
let endpoint: string;
const saved = { ...process.env };

beforeAll(async () => {
  hung = createServer(() => undefined);
  await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  // The production clients take endpoint, region, credentials and attempts from the SDK's environment, as on Lambda.
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_ENDPOINT_URL_LAMBDA: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_MAX_ATTEMPTS: '1',
  });
});

afterAll(async () => {
  process.env = saved;
  hung.closeAllConnections();
  await new Promise((resolve) => hung.close(resolve));
});

describe('orchestratorClients on a hung endpoint', () => {
  it(
    'fails a DynamoDB and a Lambda request with TimeoutError after the request timeout instead of waiting forever',
    async () => {
      const clients = orchestratorClients();
      const started = Date.now();
      const results = await Promise.allSettled([
        clients.dynamodb.send(new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'lane#default' } } })),
        clients.lambda.send(
          new InvokeCommand({ FunctionName: 'worker', InvocationType: 'Event', Payload: Buffer.from('{}') }),
        ),
      ]);
      const elapsed = Date.now() - started;
      for (const result of results) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toMatchObject({ name: 'TimeoutError' });
      }
      // Not before the configured timeout, and not much after it (jest's own timeout is 5 s more).
      expect(elapsed).toBeGreaterThanOrEqual(CLIENT_CONFIG.dynamodb.requestHandler.requestTimeout);
      clients.dynamodb.destroy();
      clients.lambda.destroy();
    },
    10_000 + CLIENT_CONFIG.dynamodb.requestHandler.requestTimeout,
  );

  it('makes one attempt per Lambda invoke, leaving retries to the orchestrator, while DynamoDB keeps the SDK retries', async () => {
    const seen = { lambda: 0, dynamodb: 0 };
    const failing = createServer((request, response) => {
      const lambda = request.url?.includes('/invocations') === true;
      seen[lambda ? 'lambda' : 'dynamodb']++;
      response.writeHead(
        500,
        lambda ? { 'x-amzn-errortype': 'ServiceException' } : { 'content-type': 'application/x-amz-json-1.0' },
      );
      response.end(
        lambda
          ? '{"message":"internal error"}'
          : '{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"internal error"}',
      );
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const at = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
    const env = { ...process.env };
    Object.assign(process.env, { AWS_ENDPOINT_URL_DYNAMODB: at, AWS_ENDPOINT_URL_LAMBDA: at });
    delete process.env.AWS_MAX_ATTEMPTS;
    const clients = orchestratorClients();
    try {
      await expect(
        clients.lambda.send(
          new InvokeCommand({ FunctionName: 'worker', InvocationType: 'Event', Payload: Buffer.from('{}') }),
        ),
      ).rejects.toMatchObject({ name: 'ServiceException' });
      await expect(
        clients.dynamodb.send(new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'lane#default' } } })),
      ).rejects.toMatchObject({ name: 'InternalServerError' });
    } finally {
      process.env = env;
      clients.dynamodb.destroy();
      clients.lambda.destroy();
      failing.closeAllConnections();
      await new Promise((resolve) => failing.close(resolve));
    }
    expect(seen.lambda).toBe(1);
    expect(seen.dynamodb).toBeGreaterThan(1);
  });

  it('gives SQS more time than the longest long poll the orchestrator may ask for', () => {
    const longestPollMs = 20_000; // SQS's WaitTimeSeconds maximum, and the top of orchestrator.idleWaitMs's range
    expect(DEFAULT_ORCHESTRATOR_SETTINGS.idleWaitMs).toBeLessThanOrEqual(longestPollMs);
    expect(CLIENT_CONFIG.sqs.requestHandler.requestTimeout).toBeGreaterThan(longestPollMs);
  });
});
