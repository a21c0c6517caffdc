import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../tools/memory/MemoryQueues';
import type { SourceQueue } from '../../../lib/ports/QueueReceiver';
import { deadLetter, retryLater } from '../../../lib/services/queueOutcomes';
import { awkwardBody } from '../../helpers/serviceFixtures';

/** Queues holding one received message with `body` in `queue`, and that message as a worker would refer to it. */
async function receivedOne(queue: SourceQueue, body: string) {
  const queues = new MemoryQueues({ clock: new FakeClock(0) });
  await queues.send(queue, { body, ...(queue === 'fifo' ? { groupId: 'g-1' } : {}) });
  const [message] = await queues.receive(queue, { max: 1, visibilityMs: 30_000, waitMs: 0 });
  if (message === undefined) throw new Error('no message received');
  return { queues, message: { ...message, queue } };
}

/** A body that a JSON round trip would change: the copies must carry it as it came. */
const BODY = awkwardBody('a');

describe('deadLetter', () => {
  it('parks a standard message that carries a group id (SQS fair queues) without a FIFO deduplication id', async () => {
    const queues = new MemoryQueues({ clock: new FakeClock(0) });
    await queues.send('main', { body: '{"id":"a"}', groupId: 'tenant-1' });
    const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 0 });
    if (message === undefined) throw new Error('no message received');
    await deadLetter(queues, { ...message, queue: 'main', groupId: 'tenant-1' }, 'permanent: 400', 1);
    expect(queues.messages('main-dlq').map((m) => m.body)).toEqual(['{"id":"a"}']);
    expect(queues.depth('main')).toBe(0);
  });

  it.each(['main', 'requeue', 'fifo'] as const)('copies the body of a %s message byte for byte', async (queue) => {
    const { queues, message } = await receivedOne(queue, BODY);

    await deadLetter(queues, message, 'permanent: 400', 1);

    expect(queues.messages(`${queue}-dlq`).map((m) => m.body)).toEqual([BODY]);
  });
});

describe('retryLater', () => {
  it.each(['main', 'requeue'] as const)('copies the body of a %s message to the requeue queue byte for byte', async (queue) => {
    const { queues, message } = await receivedOne(queue, BODY);

    await retryLater(queues, message, 1, 1_000);

    expect(queues.messages('requeue').map((m) => m.body)).toEqual([BODY]);
  });
});
