import { DeleteMessageCommand, ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { enqueue, enqueueMany } from '../../lib/producer/enqueue';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { parseJob } from '../../lib/services/parseJob';
import { createLaneQueues } from '../../tools/local/laneQueues';
import { testSqsClient, uniqueName } from '../helpers/awsClients';

const sqs = testSqsClient();

/** Receives from `url` until `count` messages came or 10 s passed. */
async function receiveAll(url: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  const deadline = Date.now() + 10_000;
  while (messages.length < count && Date.now() < deadline) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
      }),
    );
    messages.push(...Messages);
  }
  return messages;
}

describe('the producer client on fauxqs', () => {
  afterAll(() => sqs.destroy());

  it('enqueues a job on the main queue that the service reads back with its cost and key', async () => {
    const urls = await createLaneQueues(sqs, uniqueName('prod'));
    const { messageId } = await enqueue(
      { body: { to: '+15550100', text: 'hi' }, cost: 3, idempotencyKey: 'sms-1' },
      { sqs, queueUrl: urls.main },
    );
    const queues = new SqsQueues({ client: sqs, queueUrls: urls });
    const [message] = await queues.receive('main', { max: 10, visibilityMs: 30_000, waitMs: 1_000 });
    expect(message).toMatchObject({ messageId, body: '{"to":"+15550100","text":"hi"}' });
    expect(parseJob(message!)).toEqual({ ok: true, job: { costs: { cost: 3 }, idempotencyKey: 'sms-1', attempt: 1 } });
  });

  it('enqueues many FIFO jobs in batches, in order per group, with their group and deduplication ids', async () => {
    const urls = await createLaneQueues(sqs, uniqueName('prod'));
    const jobs = Array.from({ length: 25 }, (_, i) => ({
      body: { seq: i },
      groupId: `g${i % 2}`,
      idempotencyKey: `job-${i}`,
    }));
    const progress: number[] = [];
    const result = await enqueueMany(jobs, { sqs, queueUrl: urls.fifo, onProgress: ({ sent }) => progress.push(sent) });
    expect(result).toEqual({ sent: 25, failed: [] });
    expect(progress).toEqual([10, 20, 25]);
    // Sent again: deduplicated by their keys, SQS drops them.
    await enqueueMany(jobs.slice(0, 3), { sqs, queueUrl: urls.fifo });

    const received = await receiveAllDeleting(urls.fifo, 25);
    expect(received).toHaveLength(25);
    for (const group of ['g0', 'g1']) {
      const seqs = received
        .filter((m) => m.Attributes?.MessageGroupId === group)
        .map((m) => (JSON.parse(m.Body ?? '') as { seq: number }).seq);
      expect(seqs).toEqual(jobs.map((job, i) => (job.groupId === group ? i : -1)).filter((i) => i >= 0));
    }
    const first = received.find((m) => m.Body === '{"seq":0}');
    expect(first?.MessageAttributes?.idempotencyKey).toMatchObject({ DataType: 'String', StringValue: 'job-0' });
    expect(first?.Attributes?.MessageDeduplicationId).toBe('job-0');
  }, 30_000);

  it('reports a job too big for the queue and sends the rest', async () => {
    const urls = await createLaneQueues(sqs, uniqueName('prod'));
    const result = await enqueueMany([{ body: 'ok', cost: 2 }, { body: 'x'.repeat(300_000) }], {
      sqs,
      queueUrl: urls.main,
    });
    expect(result).toEqual({
      sent: 1,
      failed: [{ index: 1, reason: expect.stringContaining('job.size:') as unknown }],
    });
    const [message] = await receiveAll(urls.main, 1);
    expect(message?.MessageAttributes?.cost).toMatchObject({ DataType: 'Number', StringValue: '2' });
  });
});

/**
 * Receives from a FIFO queue until `count` messages came or 15 s passed, deleting each batch so the next of its group
 * is delivered (a FIFO group is locked while a message of it is in flight).
 */
async function receiveAllDeleting(url: string, count: number): Promise<Message[]> {
  const messages: Message[] = [];
  const deadline = Date.now() + 15_000;
  while (messages.length < count && Date.now() < deadline) {
    const batch = await receiveAll(url, 1);
    messages.push(...batch);
    for (const m of batch) await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
  }
  return messages;
}
