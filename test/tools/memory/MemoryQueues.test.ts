import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../tools/memory/MemoryQueues';
import type { ReceivedMessage, ReceiveOptions } from '../../../lib/ports/QueueReceiver';

const VISIBILITY = 30_000;
const NOW: ReceiveOptions = { max: 10, visibilityMs: VISIBILITY, waitMs: 0 };
const ONE: ReceiveOptions = { max: 1, visibilityMs: VISIBILITY, waitMs: 0 };

function setup(maxReceiveCount = 3): { clock: FakeClock; queues: MemoryQueues } {
  const clock = new FakeClock();
  return { clock, queues: new MemoryQueues({ clock, maxReceiveCount }) };
}

function bodies(messages: readonly { body: string }[]): string[] {
  return messages.map((m) => m.body);
}

/** Starts a receive and exposes its result once it settles, so tests can check it has not returned yet. */
function track(promise: Promise<ReceivedMessage[]>): { result: () => ReceivedMessage[] | undefined } {
  let result: ReceivedMessage[] | undefined;
  void promise.then((messages) => {
    result = messages;
  });
  return { result: () => result };
}

function first(messages: readonly ReceivedMessage[]): ReceivedMessage {
  const message = messages[0];
  if (message === undefined) throw new Error('expected at least one message');
  return message;
}

describe('MemoryQueues', () => {
  describe('send', () => {
    it('stores the body, attributes and group, visible at once', async () => {
      const { queues } = setup();
      await queues.send('fifo', {
        body: '{"n":1}',
        attributes: { cost: { dataType: 'Number', value: '3' } },
        groupId: 'g',
      });
      expect(queues.messages('fifo')).toEqual([
        {
          messageId: 'm-1',
          body: '{"n":1}',
          attributes: { cost: { dataType: 'Number', value: '3' } },
          groupId: 'g',
          receiveCount: 0,
          visibleAt: 0,
          inFlight: false,
        },
      ]);
      expect(queues.depth('fifo')).toBe(1);
    });

    it('numbers message ids and receipt handles deterministically', async () => {
      const { queues } = setup();
      await queues.send('main', { body: 'a' });
      await queues.send('requeue', { body: 'b' });
      const [a] = await queues.receive('main', NOW);
      const [b] = await queues.receive('requeue', NOW);
      expect([a?.messageId, a?.receiptHandle, b?.messageId, b?.receiptHandle]).toEqual(['m-1', 'r-1', 'm-2', 'r-2']);
    });

    it('refuses a FIFO message without a group id', async () => {
      const { queues } = setup();
      await expect(queues.send('fifo', { body: 'x' })).rejects.toThrow(/groupId/);
      await expect(queues.send('fifo-dlq', { body: 'x' })).rejects.toThrow(/groupId/);
    });

    it('refuses a per-message delay on a FIFO queue, like SQS', async () => {
      const { queues } = setup();
      await expect(queues.send('fifo', { body: 'x', groupId: 'g', delayMs: 1000 })).rejects.toThrow(/delay/);
    });

    it('refuses delays outside 0..900000 ms', async () => {
      const { queues } = setup();
      await expect(queues.send('main', { body: 'x', delayMs: -1 })).rejects.toThrow(RangeError);
      await expect(queues.send('main', { body: 'x', delayMs: 900_001 })).rejects.toThrow(/delayMs/);
      await expect(queues.send('main', { body: 'x', delayMs: Number.NaN })).rejects.toThrow(RangeError);
      await expect(queues.send('main', { body: 'x', delayMs: 900_000 })).resolves.toBeUndefined();
    });

    it('refuses an empty body and one over 256 KiB', async () => {
      const { queues } = setup();
      await expect(queues.send('main', { body: '' })).rejects.toThrow(/body/);
      await expect(queues.send('main', { body: 'x'.repeat(262_145) })).rejects.toThrow(/body/);
      expect(queues.depth('main')).toBe(0);
    });

    it('refuses a deduplication id on a standard queue', async () => {
      const { queues } = setup();
      await expect(queues.send('main', { body: 'x', deduplicationId: 'd' })).rejects.toThrow(/FIFO/);
    });

    it('drops a FIFO message whose deduplication id was sent less than 5 minutes ago', async () => {
      const { clock, queues } = setup();
      await queues.send('fifo', { body: 'first', groupId: 'g', deduplicationId: 'd' });
      await clock.advance(299_999);
      await queues.send('fifo', { body: 'again', groupId: 'g', deduplicationId: 'd' });
      expect(bodies(queues.messages('fifo'))).toEqual(['first']);
    });

    it('accepts a deduplication id again once 5 minutes have passed since its first send', async () => {
      const { clock, queues } = setup();
      await queues.send('fifo', { body: 'first', groupId: 'g', deduplicationId: 'd' });
      await clock.advance(300_000);
      await queues.send('fifo', { body: 'later', groupId: 'g', deduplicationId: 'd' });
      expect(bodies(queues.messages('fifo'))).toEqual(['first', 'later']);
    });

    it('keeps a delayed message invisible until its delay is over', async () => {
      const { clock, queues } = setup();
      await queues.send('requeue', { body: 'later', delayMs: 5_000 });
      expect(queues.messages('requeue')[0]).toMatchObject({ visibleAt: 5_000, inFlight: false });
      expect(await queues.receive('requeue', NOW)).toEqual([]);
      await clock.advance(4_999);
      expect(await queues.receive('requeue', NOW)).toEqual([]);
      await clock.advance(1);
      expect(bodies(await queues.receive('requeue', NOW))).toEqual(['later']);
    });
  });

  describe('receive on a standard queue', () => {
    it('delivers visible messages oldest first, at most max', async () => {
      const { queues } = setup();
      for (const body of ['a', 'b', 'c']) await queues.send('main', { body });
      expect(bodies(await queues.receive('main', { ...NOW, max: 2 }))).toEqual(['a', 'b']);
      expect(bodies(await queues.receive('main', NOW))).toEqual(['c']);
    });

    it('hides a received message until its visibility timeout is over, then redelivers it with a new handle', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'a' });
      const firstReceipt = first(await queues.receive('main', NOW));
      expect(firstReceipt.receiveCount).toBe(1);
      expect(queues.messages('main')[0]).toMatchObject({ inFlight: true, visibleAt: VISIBILITY });
      await clock.advance(VISIBILITY - 1);
      expect(await queues.receive('main', NOW)).toEqual([]);
      await clock.advance(1);
      const second = first(await queues.receive('main', NOW));
      expect(second).toMatchObject({ messageId: firstReceipt.messageId, receiveCount: 2 });
      expect(second.receiptHandle).not.toBe(firstReceipt.receiptHandle);
    });

    it('delivers a delayed message after older visible ones but before newer ones once visible', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'delayed', delayMs: 1_000 });
      await queues.send('main', { body: 'plain' });
      expect(bodies(await queues.receive('main', { ...NOW, visibilityMs: 0 }))).toEqual(['plain']);
      await clock.advance(1_000);
      expect(bodies(await queues.receive('main', NOW))).toEqual(['delayed', 'plain']);
    });

    it('refuses options outside the SQS ranges', async () => {
      const { queues } = setup();
      await expect(queues.receive('main', { ...NOW, max: 0 })).rejects.toThrow(/max/);
      await expect(queues.receive('main', { ...NOW, max: 11 })).rejects.toThrow(/max/);
      await expect(queues.receive('main', { ...NOW, max: 1.5 })).rejects.toThrow(/max/);
      await expect(queues.receive('main', { ...NOW, visibilityMs: -1 })).rejects.toThrow(/visibilityMs/);
      await expect(queues.receive('main', { ...NOW, visibilityMs: 43_200_001 })).rejects.toThrow(/visibilityMs/);
      await expect(queues.receive('main', { ...NOW, waitMs: 20_001 })).rejects.toThrow(/waitMs/);
    });
  });

  describe('receive on a FIFO queue', () => {
    async function sendGroup(queues: MemoryQueues, groupId: string, count: number): Promise<void> {
      for (let k = 1; k <= count; k++) await queues.send('fifo', { body: `${groupId}${k}`, groupId });
    }

    it('delivers a group in send order', async () => {
      const { queues } = setup();
      await sendGroup(queues, 'a', 3);
      expect(bodies(await queues.receive('fifo', NOW))).toEqual(['a1', 'a2', 'a3']);
    });

    it('holds back message k+1 while message k of its group is in flight', async () => {
      const { clock, queues } = setup();
      await sendGroup(queues, 'a', 2);
      expect(bodies(await queues.receive('fifo', ONE))).toEqual(['a1']);
      expect(await queues.receive('fifo', NOW)).toEqual([]);
      await clock.advance(VISIBILITY - 1);
      expect(await queues.receive('fifo', NOW)).toEqual([]);
    });

    it('delivers message k+1 once message k is deleted', async () => {
      const { queues } = setup();
      await sendGroup(queues, 'a', 2);
      const a1 = first(await queues.receive('fifo', ONE));
      await queues.delete('fifo', a1.receiptHandle);
      expect(bodies(await queues.receive('fifo', NOW))).toEqual(['a2']);
    });

    it('redelivers message k before k+1 once the visibility of k runs out', async () => {
      const { clock, queues } = setup();
      await sendGroup(queues, 'a', 2);
      await queues.receive('fifo', ONE);
      await clock.advance(VISIBILITY);
      const batch = await queues.receive('fifo', NOW);
      expect(bodies(batch)).toEqual(['a1', 'a2']);
      expect(batch.map((m) => m.receiveCount)).toEqual([2, 1]);
    });

    it('releases the group at once when k is made visible with changeVisibility 0', async () => {
      const { queues } = setup();
      await sendGroup(queues, 'a', 2);
      const a1 = first(await queues.receive('fifo', ONE));
      await queues.changeVisibility('fifo', a1.receiptHandle, 0);
      expect(bodies(await queues.receive('fifo', ONE))).toEqual(['a1']);
    });

    it('keeps the group locked while a later message of the same batch is still in flight', async () => {
      const { queues } = setup();
      await sendGroup(queues, 'a', 2);
      const [a1, a2] = await queues.receive('fifo', NOW);
      await queues.changeVisibility('fifo', a1?.receiptHandle ?? '', 0);
      expect(await queues.receive('fifo', NOW)).toEqual([]);
      await queues.delete('fifo', a2?.receiptHandle ?? '');
      expect(bodies(await queues.receive('fifo', NOW))).toEqual(['a1']);
    });

    it('serves other groups while one group is locked', async () => {
      const { queues } = setup();
      await sendGroup(queues, 'a', 2);
      await sendGroup(queues, 'b', 2);
      expect(bodies(await queues.receive('fifo', ONE))).toEqual(['a1']);
      expect(bodies(await queues.receive('fifo', ONE))).toEqual(['b1']);
      expect(await queues.receive('fifo', NOW)).toEqual([]);
    });

    it('fills a batch from one group before moving to the next, in order of their oldest message', async () => {
      const { queues } = setup();
      await queues.send('fifo', { body: 'b1', groupId: 'b' });
      await sendGroup(queues, 'a', 2);
      await queues.send('fifo', { body: 'b2', groupId: 'b' });
      expect(bodies(await queues.receive('fifo', { ...NOW, max: 3 }))).toEqual(['b1', 'b2', 'a1']);
    });
  });

  describe('redrive', () => {
    it('moves a message received maxReceiveCount times to the dead-letter queue instead of delivering it', async () => {
      const { clock, queues } = setup(2);
      await queues.send('main', { body: 'poison', attributes: { cost: { dataType: 'Number', value: '1' } } });
      for (let i = 0; i < 2; i++) {
        expect(bodies(await queues.receive('main', NOW))).toEqual(['poison']);
        await clock.advance(VISIBILITY);
      }
      expect(await queues.receive('main', NOW)).toEqual([]);
      expect(queues.depth('main')).toBe(0);
      expect(queues.messages('main-dlq')).toEqual([
        expect.objectContaining({ messageId: 'm-1', body: 'poison', receiveCount: 2, inFlight: false }),
      ]);
    });

    it('keeps the group of a redriven FIFO message and lets the next message of the group through', async () => {
      const { clock, queues } = setup(1);
      await queues.send('fifo', { body: 'a1', groupId: 'a' });
      await queues.send('fifo', { body: 'a2', groupId: 'a' });
      await queues.receive('fifo', ONE);
      await clock.advance(VISIBILITY);
      expect(bodies(await queues.receive('fifo', ONE))).toEqual(['a2']);
      expect(queues.messages('fifo-dlq')).toEqual([expect.objectContaining({ body: 'a1', groupId: 'a' })]);
    });

    it('never redrives from a dead-letter queue', async () => {
      const { clock, queues } = setup(1);
      await queues.send('main-dlq', { body: 'dead' });
      for (let i = 1; i <= 3; i++) {
        expect(first(await queues.receive('main-dlq', NOW)).receiveCount).toBe(i);
        await clock.advance(VISIBILITY);
      }
    });
  });

  describe('long polling', () => {
    const POLL: ReceiveOptions = { max: 10, visibilityMs: VISIBILITY, waitMs: 20_000 };

    it('returns nothing at once when waitMs is 0', async () => {
      const { clock, queues } = setup();
      expect(await queues.receive('main', NOW)).toEqual([]);
      expect(clock.now()).toBe(0);
    });

    it('returns early with a message sent during the wait', async () => {
      const { clock, queues } = setup();
      const poll = track(queues.receive('main', POLL));
      await clock.advance(5_000);
      expect(poll.result()).toBeUndefined();
      await queues.send('main', { body: 'late' });
      await clock.advance(0);
      expect(bodies(poll.result() ?? [])).toEqual(['late']);
      expect(clock.now()).toBe(5_000);
    });

    it('returns nothing once waitMs has passed without a message', async () => {
      const { clock, queues } = setup();
      const poll = track(queues.receive('main', POLL));
      await clock.advance(19_999);
      expect(poll.result()).toBeUndefined();
      await clock.advance(1);
      expect(poll.result()).toEqual([]);
    });

    it('returns when a delayed message becomes visible during the wait', async () => {
      const { clock, queues } = setup();
      await queues.send('requeue', { body: 'delayed', delayMs: 3_000 });
      const poll = track(queues.receive('requeue', POLL));
      await clock.advance(2_999);
      expect(poll.result()).toBeUndefined();
      await clock.advance(1);
      expect(bodies(poll.result() ?? [])).toEqual(['delayed']);
    });

    it('returns when a FIFO group is released by a delete during the wait', async () => {
      const { clock, queues } = setup();
      await queues.send('fifo', { body: 'a1', groupId: 'a' });
      await queues.send('fifo', { body: 'a2', groupId: 'a' });
      const a1 = first(await queues.receive('fifo', ONE));
      const poll = track(queues.receive('fifo', POLL));
      await clock.advance(1_000);
      expect(poll.result()).toBeUndefined();
      await queues.delete('fifo', a1.receiptHandle);
      await clock.advance(0);
      expect(bodies(poll.result() ?? [])).toEqual(['a2']);
    });

    it('is not woken by a send to another queue', async () => {
      const { clock, queues } = setup();
      const poll = track(queues.receive('main', POLL));
      await queues.send('requeue', { body: 'elsewhere' });
      await clock.advance(1_000);
      expect(poll.result()).toBeUndefined();
    });

    it('gives a message to only one of two waiting pollers', async () => {
      const { clock, queues } = setup();
      const one = track(queues.receive('main', POLL));
      const two = track(queues.receive('main', POLL));
      await clock.advance(0);
      await queues.send('main', { body: 'only' });
      await clock.advance(0);
      expect([one.result(), two.result()]).toEqual([[expect.objectContaining({ body: 'only' })], undefined]);
      await clock.advance(20_000);
      expect(two.result()).toEqual([]);
    });
  });

  describe('delete', () => {
    it('removes the message received with the handle', async () => {
      const { queues } = setup();
      await queues.send('main', { body: 'a' });
      await queues.delete('main', first(await queues.receive('main', NOW)).receiptHandle);
      expect(queues.depth('main')).toBe(0);
    });

    it('ignores a stale handle from an earlier receive', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'a' });
      const stale = first(await queues.receive('main', NOW)).receiptHandle;
      await clock.advance(VISIBILITY);
      await queues.receive('main', NOW);
      await queues.delete('main', stale);
      expect(queues.depth('main')).toBe(1);
    });

    it('ignores an unknown handle and a handle of another queue', async () => {
      const { queues } = setup();
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await expect(queues.delete('main', 'r-999')).resolves.toBeUndefined();
      await queues.delete('requeue', handle);
      expect(queues.depth('main')).toBe(1);
    });
  });

  describe('changeVisibility', () => {
    it('hides the message for the new timeout counted from now', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await clock.advance(10_000);
      await queues.changeVisibility('main', handle, 60_000);
      await clock.advance(59_999);
      expect(await queues.receive('main', NOW)).toEqual([]);
      await clock.advance(1);
      expect(bodies(await queues.receive('main', NOW))).toEqual(['a']);
    });

    it('refuses a stale handle', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'a' });
      const stale = first(await queues.receive('main', NOW)).receiptHandle;
      await clock.advance(VISIBILITY);
      await queues.receive('main', NOW);
      await expect(queues.changeVisibility('main', stale, 0)).rejects.toThrow(/ReceiptHandleIsInvalid/);
    });

    it('refuses the handle of a deleted message', async () => {
      const { queues } = setup();
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await queues.delete('main', handle);
      await expect(queues.changeVisibility('main', handle, 0)).rejects.toThrow(/ReceiptHandleIsInvalid/);
    });

    it('refuses a message whose visibility timeout is already over', async () => {
      const { clock, queues } = setup();
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await clock.advance(VISIBILITY);
      await expect(queues.changeVisibility('main', handle, 1_000)).rejects.toThrow(/MessageNotInflight/);
    });

    it('refuses a timeout outside 0..12 hours', async () => {
      const { queues } = setup();
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await expect(queues.changeVisibility('main', handle, 43_200_001)).rejects.toThrow(RangeError);
    });
  });

  describe('sendBatch', () => {
    it('stores what it can and returns the rest with why, as one request', async () => {
      const { queues } = setup();
      await expect(
        queues.sendBatch('requeue', [{ body: 'a' }, { body: '' }, { body: 'c', delayMs: 1_000 }]),
      ).resolves.toEqual([{ index: 1, reason: expect.stringContaining('body size in bytes') }]);
      expect(queues.depth('requeue')).toBe(2);
      expect(queues.stats).toMatchObject({ send: 0, sendBatch: 1 });
    });

    it('refuses, before storing any, a message no request could carry', async () => {
      const { queues } = setup();
      await expect(queues.sendBatch('fifo', [{ body: 'a', groupId: 'g' }, { body: 'b' }])).rejects.toThrow(
        "send to FIFO queue 'fifo' needs a groupId",
      );
      expect(queues.depth('fifo')).toBe(0);
    });
  });

  describe('stats', () => {
    it('counts each request once, long polls included', async () => {
      const { clock, queues } = setup();
      const poll = queues.receive('main', { max: 1, visibilityMs: VISIBILITY, waitMs: 10_000 });
      await clock.advance(10_000);
      await poll;
      await queues.send('main', { body: 'a' });
      const handle = first(await queues.receive('main', NOW)).receiptHandle;
      await queues.changeVisibility('main', handle, 0);
      await queues.delete('main', 'r-999');
      await queues.messageCount('main');
      await queues.deleteBatch('main', ['r-998', 'r-999']);
      expect(queues.stats).toEqual({
        receive: 2,
        send: 1,
        sendBatch: 0,
        delete: 1,
        deleteBatch: 1,
        changeVisibility: 1,
        messageCount: 1,
      });
    });
  });
});
