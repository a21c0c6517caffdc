import { SqsResultDestination } from '../../lib/adapters/results/SqsResultDestination';
import type { JobResult } from '../../lib/ports/ResultHandler';
import { createQueue, queueArn } from '../../tools/local/laneQueues';
import { testSqsClient, uniqueName } from '../helpers/awsClients';
import { createServiceStack, type ServiceStack } from '../helpers/serviceStack';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';

// The service end to end on the emulators, its workers handing results to an SQS result queue on fauxqs, as
// custom.quotaOrchestrator.results `{ type: sqs, queueArn }` wires them (see lib/wiring/workerDeps.ts).

const sqs = testSqsClient();
let stack: ServiceStack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});
afterAll(() => sqs.destroy());

/** Every result on the queue at `url`, polled until `count` came or 10 s passed. */
async function results(url: string, count: number): Promise<JobResult[]> {
  const found: JobResult[] = [];
  for (const deadline = Date.now() + 10_000; found.length < count && Date.now() < deadline;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    found.push(...Messages.map((m) => JSON.parse(m.Body ?? '') as JobResult));
  }
  return found;
}

describe('results and dead letters of the service on the emulators', () => {
  it("sends each success's answer to the result queue, and dead-letters a refusal with the API's error and its ids", async () => {
    const resultUrl = await createQueue(sqs, uniqueName('results'), {});
    const arn = await queueArn(sqs, resultUrl);
    stack = await createServiceStack({
      quotas: [{ limit: 20, per: 'second' }],
      faults: {
        workerDeps: (deps) => ({ ...deps, results: new SqsResultDestination({ client: sqs, queueArn: arn }) }),
      },
    });
    const ids = Array.from({ length: 12 }, (_, i) => `r-${i}`);
    await stack.send(
      'main',
      ids
        .slice(0, 8)
        .map((id) => ({ body: { id }, attributes: { idempotencyKey: { dataType: 'String', value: `key-${id}` } } })),
    );
    await stack.send(
      'fifo',
      ids.slice(8).map((id) => ({ body: { id }, groupId: 'g-1' })),
    );
    await stack.send('main', [{ body: { id: 'poison', poison: true } }]);

    const s = stack;
    await s.runUntil(
      async () => s.api.succeededIds().length >= ids.length && (await s.count('main-dlq')) === 1 && (await s.drained()),
      {
        timeoutMs: 20_000,
        what: 'twelve successes and one dead letter',
      },
    );

    const received = await results(resultUrl, ids.length);
    expect(received).toHaveLength(ids.length);
    const byKey = new Map(received.map((r) => [r.idempotencyKey, r]));
    expect(byKey.get('key-r-3')).toEqual({
      lane: 'default',
      queue: 'main',
      messageId: expect.any(String) as unknown,
      dispatchId: expect.any(String) as unknown,
      idempotencyKey: 'key-r-3',
      attempt: 1,
      at: expect.any(Number) as unknown,
      status: 200,
      headers: expect.objectContaining({ 'content-type': 'application/json' }) as unknown,
      body: '{"status":200}',
      bodyTruncated: false,
    });
    expect(received.filter((r) => r.queue === 'fifo').map((r) => r.groupId)).toEqual(['g-1', 'g-1', 'g-1', 'g-1']);

    const [dead] = await s.receiveAll('main-dlq');
    expect(dead?.attributes).toMatchObject({
      reason: { dataType: 'String', value: expect.stringMatching(/^permanent: .*400/) as unknown },
      originalMessageId: { dataType: 'String', value: expect.any(String) as unknown },
      dispatchId: { dataType: 'String', value: expect.any(String) as unknown },
      apiError: { dataType: 'String', value: '{"status":400}' },
    });
    expect(received.map((r) => r.dispatchId)).not.toContain(dead?.attributes.dispatchId?.value);
  }, 40_000);
});
