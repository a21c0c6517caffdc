import type { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import type { QueueReceiver, ReceiveOptions, SourceQueue } from '../../../../lib/ports/QueueReceiver';
import { FIFO_QUIET_MS, Intake } from '../../../../lib/services/orchestrator/intake';
import { MAX_PARALLEL_RECEIVES, PREFETCH_MS } from '../../../../lib/services/orchestrator/receiveSizing';

/** The most one refill takes. */
const MAX_RECEIVE_TOTAL = 10 * MAX_PARALLEL_RECEIVES;
import { roomHarness } from '../../../helpers/orchestratorRooms';
import { START, sendJob, testConfig } from '../../../helpers/serviceFixtures';

/** The memory queues, recording every receive and failing those `failReceive` picks. */
function recordingQueues(
  queues: MemoryQueues,
  received: SourceQueue[],
  failReceive: (queue: SourceQueue) => boolean,
): QueueReceiver {
  return {
    receive: async (queue: SourceQueue, options: ReceiveOptions) => {
      received.push(queue);
      if (failReceive(queue)) throw new Error('InternalError');
      return queues.receive(queue, options);
    },
    send: (queue, message) => queues.send(queue, message),
    sendBatch: (queue, messages) => queues.sendBatch(queue, messages),
    delete: (queue, receiptHandle) => queues.delete(queue, receiptHandle),
    deleteBatch: (queue, receiptHandles) => queues.deleteBatch(queue, receiptHandles),
    changeVisibility: (queue, receiptHandle, visibilityMs) =>
      queues.changeVisibility(queue, receiptHandle, visibilityMs),
    messageCount: (queue) => queues.messageCount(queue),
  };
}

/** The body of a buffered message. */
const bodyOf = (buffered: { readonly message: { readonly body: string } } | undefined) => buffered?.message.body;

describe('Intake', () => {
  describe('next', () => {
    it('takes requeue ▸ fifo ▸ main, one FIFO message at a time, and returns the same head until it is shifted', async () => {
      const h = roomHarness();
      await sendJob(h.queues, 'main', { id: 'm' });
      await sendJob(h.queues, 'fifo', { id: 'f-1' }, { groupId: 'g-1' });
      await sendJob(h.queues, 'fifo', { id: 'f-2' }, { groupId: 'g-2' });
      await sendJob(h.queues, 'requeue', { id: 'r' });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => 10,
      );

      const heads: (string | undefined)[] = [];
      for (let i = 0; i < 4; i++) {
        heads.push(bodyOf(await intake.next()));
        heads.push(bodyOf(await intake.next()));
        intake.shift();
      }
      expect(heads).toEqual([
        '{"id":"r"}',
        '{"id":"r"}',
        '{"id":"f-1"}',
        '{"id":"f-1"}',
        '{"id":"f-2"}',
        '{"id":"f-2"}',
        '{"id":"m"}',
        '{"id":"m"}',
      ]);
    });

    it("buffers every FIFO group's first message before any group's second, and hands back the rest of a group whose head leaves", async () => {
      const h = roomHarness();
      for (const [id, group] of [
        ['a1', 'g-a'],
        ['a2', 'g-a'],
        ['a3', 'g-a'],
        ['b1', 'g-b'],
        ['b2', 'g-b'],
      ] as const)
        await sendJob(h.queues, 'fifo', { id }, { groupId: group });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => 10,
      );

      await intake.next();
      const buffered = () =>
        Array.from({ length: 10 }, (_, i) => bodyOf(intake.peek(i))).filter((b) => b !== undefined);
      expect(buffered()).toEqual(['{"id":"a1"}', '{"id":"b1"}', '{"id":"a2"}', '{"id":"b2"}', '{"id":"a3"}']);
      expect(intake.followersOfHead()).toBe(2);

      // a1 is hidden until its slot: a2 and a3 must wait for it, so they go back to the queue, visible again.
      await intake.hideHead(5_000);
      expect(buffered()).toEqual(['{"id":"b1"}', '{"id":"b2"}']);
      expect(
        h.queues
          .messages('fifo')
          .filter((m) => !m.inFlight)
          .map((m) => m.body),
      ).toEqual(['{"id":"a2"}', '{"id":"a3"}']);
      await intake.leaveHead();
      expect(buffered()).toEqual([]);
    });

    it('refills a standard queue with several receives at once at high rates: a second of the rate, up to 200', async () => {
      for (const [perSecond, receives] of [
        [5, 1],
        [25, 3],
        [2_000, MAX_PARALLEL_RECEIVES],
      ] as const) {
        const received: SourceQueue[] = [];
        const h = roomHarness(testConfig({ quotas: [{ limit: perSecond, per: 'second' }] }), (queues) =>
          recordingQueues(queues, received, () => false),
        );
        for (let i = 0; i < 250; i++) await sendJob(h.queues, 'main', { id: `m-${i}` });
        const intake = new Intake(
          h.run,
          h.ports.queues,
          () => START + 1_000,
          () => Number.POSITIVE_INFINITY,
        );

        await intake.next();

        expect(received.filter((queue) => queue === 'main')).toHaveLength(receives);
        // What the receives took is all in the buffer, in order: 25 for 25/s (a second), 10 for 5/s.
        const buffered = Array.from({ length: 250 }, (_, i) => intake.peek(i)).filter((b) => b !== undefined);
        expect(buffered).toHaveLength(
          Math.min(MAX_RECEIVE_TOTAL, Math.max(10, Math.ceil((perSecond * PREFETCH_MS) / 1000))),
        );
      }
    });

    it('reads a queue that gave the last refill less than it asked for with one receive, and prefetches again once that comes back full', async () => {
      const received: SourceQueue[] = [];
      const h = roomHarness(testConfig({ quotas: [{ limit: 50, per: 'second' }] }), (queues) =>
        recordingQueues(queues, received, () => false),
      );
      for (let i = 0; i < 150; i++) await sendJob(h.queues, 'main', { id: `m-${i}` });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => Number.POSITIVE_INFINITY,
      );
      const count = (queue: SourceQueue) => received.filter((q) => q === queue).length;

      await intake.next();
      expect([count('requeue'), count('fifo'), count('main')]).toEqual([5, 1, 5]);
      for (let i = 0; i < 50; i++) intake.shift();
      received.length = 0;
      for (let i = 0; i < 10; i++) await sendJob(h.queues, 'requeue', { id: `r-${i}` });
      await intake.next();
      expect([count('requeue'), count('fifo'), count('main')]).toEqual([1, 0, 0]);
      for (let i = 0; i < 10; i++) intake.shift();
      received.length = 0;
      await intake.next();
      // The requeue queue gave all it was asked for: the whole prefetch again, which finds it empty. The FIFO queue,
      // found empty less than FIFO_QUIET_MS ago, is passed by.
      expect([count('requeue'), count('fifo'), count('main')]).toEqual([5, 0, 5]);
      for (let i = 0; i < 50; i++) intake.shift();
      received.length = 0;
      await h.clock.advance(FIFO_QUIET_MS);
      await intake.next();
      expect([count('requeue'), count('fifo'), count('main')]).toEqual([1, 1, 5]);
    });

    it('tops the buffer up behind what it holds while the main queue gives all it is asked for, a receive at a time or more', async () => {
      const received: SourceQueue[] = [];
      const h = roomHarness(testConfig({ quotas: [{ limit: 50, per: 'second' }] }), (queues) =>
        recordingQueues(queues, received, () => false),
      );
      for (let i = 0; i < 110; i++) await sendJob(h.queues, 'main', { id: `m-${i}` });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => Number.POSITIVE_INFINITY,
      );
      const count = (queue: SourceQueue) => received.filter((q) => q === queue).length;
      const buffered = () =>
        Array.from({ length: 200 }, (_, i) => bodyOf(intake.peek(i))).filter((b) => b !== undefined);
      await intake.next();
      expect(buffered()).toHaveLength(50);

      // Less than a receive short of a refill's 50: no top-up.
      for (let i = 0; i < 9; i++) intake.shift();
      received.length = 0;
      await intake.next();
      expect(received).toEqual([]);
      // 45 short: a top-up of 45 (the requeue queue, found empty, gets one receive; the FIFO queue is passed by).
      for (let i = 0; i < 36; i++) intake.shift();
      await intake.next();
      expect([count('requeue'), count('fifo'), count('main')]).toEqual([1, 0, 5]);
      expect(buffered()).toEqual(Array.from({ length: 50 }, (_, i) => `{"id":"m-${45 + i}"}`));

      // The next top-up asks for 45 and gets the 15 left: the main queue is sparse, and the buffer is not topped up
      // again before it is empty.
      for (let i = 0; i < 45; i++) intake.shift();
      await intake.next();
      expect(buffered()).toHaveLength(20);
      for (let i = 0; i < 19; i++) intake.shift();
      received.length = 0;
      await intake.next();
      expect(received).toEqual([]);
    });

    it('after a failed receive, waits out the back-off and resumes the round at that queue', async () => {
      const received: SourceQueue[] = [];
      let fifoFails = 1;
      const h = roomHarness(undefined, (queues) =>
        recordingQueues(queues, received, (queue) => queue === 'fifo' && fifoFails-- > 0),
      );
      await sendJob(h.queues, 'main', { id: 'm' });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => 10,
      );

      await expect(intake.next()).resolves.toBeUndefined();
      expect(h.events).toEqual([
        {
          type: 'queue-unavailable',
          at: START,
          operation: 'receive',
          queue: 'fifo',
          error: expect.any(String),
          retryAt: START + 100,
        },
      ]);
      const waiting = intake.next();
      await h.clock.advance(100);
      await expect(waiting).resolves.toBeUndefined();
      expect(h.clock.now()).toBe(START + 100);

      expect(bodyOf(await intake.next())).toBe('{"id":"m"}');
      expect(received).toEqual(['requeue', 'fifo', 'fifo', 'main']);
    });

    it('ends a back-off wait early when the store is called sooner', async () => {
      const h = roomHarness(undefined, (queues) => recordingQueues(queues, [], () => true));
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 30,
        () => 10,
      );
      await intake.next();

      const waiting = intake.next();
      await h.clock.advance(30);
      await waiting;
      expect(h.clock.now()).toBe(START + 30);
    });
  });

  describe('refuseHead', () => {
    it('keeps the refused head, with its reason, until it is dead-lettered', async () => {
      const h = roomHarness();
      await sendJob(h.queues, 'main', { id: 'big' });
      await sendJob(h.queues, 'main', { id: 'next' });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => 10,
      );
      const head = await intake.next();

      intake.refuseHead('event too large');
      expect(await intake.next()).toEqual({
        kind: 'refused',
        message: head?.message,
        receivedAt: START,
        reason: 'event too large',
      });
      await intake.deadLetterHead('event too large', 1);

      expect(await intake.next()).toMatchObject({ kind: 'received', message: { body: '{"id":"next"}' } });
      expect(h.queues.messages('main-dlq').map((m) => m.body)).toEqual(['{"id":"big"}']);
      expect(h.run.tally.deadLettered).toBe(1);
    });
  });

  describe('release', () => {
    it('hands back the buffered messages whose visibility has not run out, and empties the buffer', async () => {
      const h = roomHarness();
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const intake = new Intake(
        h.run,
        h.ports.queues,
        () => START + 1_000,
        () => 10,
      );
      await intake.next();

      await intake.release();
      expect(h.queues.depth('main')).toBe(2);
      expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([1, 1]);
      expect(bodyOf(await intake.next())).toBe('{"id":"a"}');
    });
  });
});
