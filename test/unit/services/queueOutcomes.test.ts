import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../tools/memory/MemoryQueues';
import { deadLetter } from '../../../lib/services/queueOutcomes';

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
});
