import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { SqsResultDestination } from '../../lib/adapters/results/SqsResultDestination';
import type { JobResult } from '../../lib/ports/ResultHandler';
import { jobResult } from '../helpers/jobResults';
import { createQueue, queueArn } from '../../tools/local/laneQueues';
import { testSqsClient, uniqueName } from '../helpers/awsClients';

const sqs = testSqsClient();

const result = (n: number, extra: Partial<JobResult> = {}): JobResult =>
  jobResult(n, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ completion: `answer ${n}` }),
    ...extra,
  });

describe('SqsResultDestination on fauxqs', () => {
  afterAll(() => sqs.destroy());

  it('sends a batch of results to the queue its ARN names, one message each, whose body is the result', async () => {
    const url = await createQueue(sqs, uniqueName('results'), {});
    const destination = new SqsResultDestination({ client: sqs, queueArn: await queueArn(sqs, url) });
    const results = Array.from({ length: 12 }, (_, i) =>
      result(i, i === 11 ? { body: 'é'.repeat(200_000), bodyTruncated: false } : {}),
    );

    await expect(destination.deliver(results)).resolves.toEqual([]);

    const received: JobResult[] = [];
    for (let polls = 0; received.length < results.length && polls < 10; polls++) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      received.push(...Messages.map((m) => JSON.parse(m.Body ?? '') as JobResult));
    }
    const byId = new Map(received.map((r) => [r.dispatchId, r]));
    expect(byId.get('d-3')).toEqual(results[3]);
    const cut = byId.get('d-11');
    expect(cut?.bodyTruncated).toBe(true);
    expect(results[11]?.body.startsWith(cut?.body ?? 'x')).toBe(true);
    expect(received).toHaveLength(12);
  }, 20_000);

  it('returns every result as undelivered, with the reason, when the queue does not exist', async () => {
    const destination = new SqsResultDestination({
      client: sqs,
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:no-such-queue',
    });
    const undelivered = await destination.deliver([result(1)]);
    expect(undelivered).toEqual([
      { result: result(1), reason: expect.stringMatching(/^GetQueueUrl failed: .*QueueDoesNotExist/) as unknown },
    ]);
  });
});
