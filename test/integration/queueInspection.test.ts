import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { createLaneQueues } from '../../tools/local/laneQueues';
import { heldBodies } from '../../tools/local/queueInspection';
import { testEmulators, testSqsClient, uniqueName } from '../helpers/awsClients';

describe('heldBodies on fauxqs', () => {
  it('lists every message the queues hold: waiting, delayed and in flight, and none deleted', async () => {
    const sqs = testSqsClient();
    const urls = await createLaneQueues(sqs, uniqueName('held'));
    const queues = new SqsQueues({ client: sqs, queueUrls: urls });
    const { sqsEndpoint } = testEmulators();
    try {
      await queues.sendBatch(
        'main',
        ['a', 'b', 'c'].map((id) => ({ body: `{"id":"${id}"}`, attributes: {} })),
      );
      await queues.send('requeue', { body: '{"id":"d"}', attributes: {}, delayMs: 60_000 });
      await queues.send('fifo', { body: '{"id":"e"}', attributes: {}, groupId: 'g' });
      await queues.send('main-dlq', { body: '{"id":"f"}', attributes: {} });
      const [first, second] = await queues.receive('main', { max: 2, visibilityMs: 60_000, waitMs: 0 });
      await queues.delete('main', first!.receiptHandle);

      const held = await heldBodies(sqsEndpoint, [urls.main, urls.fifo, urls.requeue]);

      expect(held.sort()).toEqual(
        ['{"id":"a"}', '{"id":"b"}', '{"id":"c"}', '{"id":"d"}', '{"id":"e"}'].filter((b) => b !== first!.body),
      );
      expect(held).toContain(second!.body);
    } finally {
      sqs.destroy();
    }
  });

  it('fails, naming the queue, when the endpoint does not know it', async () => {
    await expect(heldBodies(testEmulators().sqsEndpoint, ['http://x/000000000000/no-such-queue'])).rejects.toThrow(
      'inspecting queue no-such-queue',
    );
  });
});
