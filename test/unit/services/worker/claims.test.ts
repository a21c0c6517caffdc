import type { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import type { Settlement } from '../../../../lib/domain/quota/ledger';
import type { QueueName, SourceQueue } from '../../../../lib/ports/QueueReceiver';
import { processJob } from '../../../../lib/services/worker/processJob';
import {
  LANE,
  START,
  httpStatus,
  ok,
  receiveJobEvent,
  sendJob,
  testConfig,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';
import { COST_CONFIG, atSlot } from '../../../helpers/workerFixtures';

/** Queues whose next `failDeletes` deletes fail as a crash would (the worker dies before the delete lands). */
class FlakyDeleteQueues extends MemoryQueues {
  failDeletes = 0;

  override async delete(queue: QueueName, receiptHandle: string): Promise<void> {
    if (this.failDeletes > 0) {
      this.failDeletes--;
      throw new Error('worker crashed before the delete');
    }
    await super.delete(queue, receiptHandle);
  }
}

/** Queues whose next `failDeadLetters` sends to a dead-letter queue fail as a crash would (the worker dies before the message leaves). */
class FlakyDeadLetterQueues extends MemoryQueues {
  failDeadLetters = 0;

  override async send(queue: QueueName, message: Parameters<MemoryQueues['send']>[1]): Promise<void> {
    if (queue.endsWith('-dlq') && this.failDeadLetters > 0) {
      this.failDeadLetters--;
      throw new Error('worker crashed before the message left');
    }
    await super.send(queue, message);
  }
}

/**
 * Moves every message of `dlq` back to `to` as it is, attributes and all, as the SQS console's redrive does: each
 * becomes a new message (a new id), the original is deleted.
 */
async function moveBack(h: WorkerHarness, dlq: QueueName, to: SourceQueue, copies = 1): Promise<void> {
  for (const letter of await h.queues.receive(dlq, { max: 10, visibilityMs: 30_000, waitMs: 0 })) {
    for (let i = 0; i < copies; i++) await h.queues.send(to, { body: letter.body, attributes: letter.attributes });
    await h.queues.delete(dlq, letter.receiptHandle);
  }
}

/** A refund of dispatch `id`'s reservation of one unit made at `at`. */
function refund(id: string, at: number): Settlement {
  return { reservation: { at, costs: { cost: 1 }, windows: {} }, actual: null, id };
}

describe('claimKey', () => {
  it('lets the next delivery of a transiently failed key call the API again', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(503));
    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    await h.clock.advance(1_000);

    const retry = await receiveJobEvent(h, 'requeue', 'd-2');
    expect(retry).toMatchObject({ attempt: 2, idempotencyKey: 'm-1' });
    await expect(processJob(retry, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(['m-1', 'm-1']);
    expect(h.queues.depth('requeue')).toBe(0);
  });
});

describe('standBack', () => {
  it('does not call the API again on a second delivery of the same event after a recorded success, and deletes', async () => {
    // The first delivery records the success, then crashes before its delete; Lambda delivers the event again.
    const h = workerHarness(undefined, (clock: FakeClock) => new FlakyDeleteQueues({ clock }));
    (h.queues as FlakyDeleteQueues).failDeletes = 1;
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    await expect(processJob(event, h.deps)).rejects.toThrow('worker crashed before the delete');
    expect(h.queues.depth('main')).toBe(1);

    await expect(processJob(event, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('leaves the reservation of the first delivery alone on a redelivery of the same event', async () => {
    const h = workerHarness(COST_CONFIG);
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const event = await receiveJobEvent(h, 'main', 'd-1');
    await processJob(event, h.deps);

    await expect(processJob(event, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    // Only the first delivery's settlement (actual 7): the redelivery must not settle the same reservation again.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: { at: START, costs: { cost: 3 }, windows: {} }, actual: { cost: 7 }, id: 'd-1' },
    ]);
  });

  it('does not call the API for another dispatch of an already succeeded key, deletes, and refunds its reservation', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    await h.clock.advance(1_000);
    const second = await receiveJobEvent(h, 'main', 'd-2');

    await expect(processJob(second, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: { at: START + 1_000, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-2' },
    ]);
    await expect(h.stores.idempotency.getIdempotency('order-42', h.clock.now())).resolves.toMatchObject({
      status: 'succeeded',
      dispatchId: 'd-1',
    });
  });

  it("stands back as 'busy-elsewhere' while another delivery of the key is calling the API", async () => {
    const h = workerHarness();
    h.api.latencyMs = 500;
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    const first = processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    await h.clock.advance(100);
    const second = await receiveJobEvent(h, 'main', 'd-2');

    await expect(processJob(second, h.deps)).resolves.toBe('busy-elsewhere');

    expect(h.api.calls).toHaveLength(1);
    // Its message is left in flight to come back later; its reservation was never used.
    expect(h.queues.messages('main').map((m) => ({ id: m.messageId, inFlight: m.inFlight }))).toEqual([
      { id: 'm-1', inFlight: true },
      { id: 'm-2', inFlight: true },
    ]);
    await h.clock.advance(400);
    await expect(first).resolves.toBe('succeeded');
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: { at: START + 100, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-2' },
    ]);
  });

  it('never lets a job succeed twice when a failed event is delivered again after its requeued copy succeeded', async () => {
    // Lambda's async delivery is at-least-once: the first attempt's event may arrive a second time, late.
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(503));
    const first = await receiveJobEvent(h, 'main', 'd-1');
    await processJob(first, h.deps);
    await h.clock.advance(1_000);
    await expect(processJob(await receiveJobEvent(h, 'requeue', 'd-2'), h.deps)).resolves.toBe('succeeded');

    await expect(processJob(first, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(['m-1', 'm-1']);
  });

  it('does not call the API again when a failed event is delivered a second time, and leaves queues and quota alone', async () => {
    // Lambda delivers the first attempt's event twice; the first delivery's call failed and requeued the job.
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(httpStatus(503));
    const first = await receiveJobEvent(h, 'main', 'd-1');
    await expect(processJob(first, h.deps)).resolves.toBe('retried');
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'failed',
      dispatchId: 'd-1',
    });
    const queued = h.queues.depth('requeue');

    await expect(processJob(first, h.deps)).resolves.toBe('already-failed');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('requeue')).toBe(queued);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });
});

describe('processJob when events arrive more than once, or late: ended is ended', () => {
  it('writes the dead-lettered record before the message leaves; the next dispatch after a crash in between dead-letters it without calling', async () => {
    const h = workerHarness(testConfig(), (clock) => new FlakyDeadLetterQueues({ clock }));
    const queues = h.queues as FlakyDeadLetterQueues;
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(400));
    queues.failDeadLetters = 1;
    const first = await receiveJobEvent(h, 'main', 'd-1');
    await expect(processJob(first, h.deps)).rejects.toThrow('worker crashed');
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'dead-lettered',
      dispatchId: 'd-1',
      reason: 'permanent: HTTP 400 Bad Request',
    });

    await h.clock.advance(30_000);
    const second = await receiveJobEvent(h, 'main', 'd-2');
    await expect(processJob(second, h.deps)).resolves.toBe('duplicate');
    await expect(processJob(second, h.deps)).resolves.toBe('duplicate');
    await expect(processJob(first, h.deps)).resolves.toBe('already-ended');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.messages('main-dlq').map((m) => m.attributes.reason?.value)).toEqual([
      'permanent: HTTP 400 Bad Request',
    ]);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([refund('d-2', START + 30_000)]);
  });

  it('leaves a copy alone while the worker that recorded the dead-lettering may still be moving the message', async () => {
    // d-1 recorded the dead-lettering and has not sent the message yet (here it never will: it crashed, which d-2
    // cannot tell from a worker still at work); d-2 comes within d-1's worker timeout (5 s), d-3 after it.
    const h = workerHarness(testConfig(), (clock) => new FlakyDeadLetterQueues({ clock }));
    const queues = h.queues as FlakyDeadLetterQueues;
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(400));
    queues.failDeadLetters = 1;
    const first = await receiveJobEvent(h, 'main', 'd-1', { visibilityMs: 1_000 });
    await expect(processJob(first, h.deps)).rejects.toThrow('worker crashed');
    const recorded = await h.stores.idempotency.getIdempotency('m-1', h.clock.now());
    expect(recorded).toMatchObject({ status: 'dead-lettered', reason: 'permanent: HTTP 400 Bad Request' });

    const at = recorded !== undefined && 'at' in recorded ? recorded.at : NaN;
    await h.clock.advance(4_999 - (h.clock.now() - at));
    const second = await receiveJobEvent(h, 'main', 'd-2', { visibilityMs: 1 });
    await expect(processJob(second, h.deps)).resolves.toBe('busy-elsewhere');
    expect(h.queues.depth('main-dlq')).toBe(0);

    await h.clock.advance(1);
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-3'), h.deps)).resolves.toBe('duplicate');
    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.depth('main-dlq')).toBe(1);
  });

  it('keeps every later dispatch of a dead-lettered job from calling, and only deletes a copy left behind', async () => {
    // The invoke of d-1 failed after Lambda queued it: the orchestrator dispatched the message again as d-2. The
    // records, not lateness, are under test: d-1's call window is stretched to cover the wait (a late d-1 would give
    // its slot back without calling, see 'processJob held to its slot').
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(400));
    const received = await receiveJobEvent(h, 'main', 'd-1');
    const first = { ...received, callBy: received.callBy + 30_000 };
    await h.clock.advance(30_000);
    const second = await receiveJobEvent(h, 'main', 'd-2');
    await expect(processJob(first, h.deps)).resolves.toBe('dead-lettered');

    await expect(processJob(second, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.depth('main-dlq')).toBe(1);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([refund('d-2', START + 30_000)]);
  });

  it('writes the success record before the delete; the next dispatch after a crash in between deletes without calling', async () => {
    const h = workerHarness(testConfig(), (clock) => new FlakyDeleteQueues({ clock }));
    (h.queues as FlakyDeleteQueues).failDeletes = 1;
    await sendJob(h.queues, 'main', { id: 'a' });
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).rejects.toThrow('worker crashed');
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'succeeded',
      dispatchId: 'd-1',
    });

    await h.clock.advance(30_000);
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
  });

  it('refunds a dispatch that stood back once, however often it is delivered, before or after the job ended', async () => {
    const h = workerHarness();
    h.api.latencyMs = 500;
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    const calling = processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    const second = await receiveJobEvent(h, 'main', 'd-2');
    await expect(processJob(second, h.deps)).resolves.toBe('busy-elsewhere');
    await expect(processJob(second, h.deps)).resolves.toBe('busy-elsewhere');
    await h.clock.advance(500);
    await expect(calling).resolves.toBe('succeeded');

    await expect(processJob(second, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([refund('d-2', START)]);
  });

  it('never refunds a dispatch whose call was made, when a late delivery of it finds the next attempt’s record', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(503));
    const first = await receiveJobEvent(h, 'main', 'd-1');
    await expect(processJob(first, h.deps)).resolves.toBe('retried');
    await h.clock.advance(1_000);
    h.api.latencyMs = 500;
    const calling = processJob(await receiveJobEvent(h, 'requeue', 'd-2'), h.deps);

    // While the next attempt calls (in-progress), and once it succeeded.
    await expect(processJob(first, h.deps)).resolves.toBe('busy-elsewhere');
    await h.clock.advance(500);
    await expect(calling).resolves.toBe('succeeded');
    await expect(processJob(first, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(2);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('refunds once a first delivery that arrives after the message was dispatched again and succeeded (event age vs visibility)', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const waiting = await receiveJobEvent(h, 'main', 'd-1');
    await h.clock.advance(30_000);
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps)).resolves.toBe('succeeded');

    await expect(processJob(waiting, h.deps)).resolves.toBe('duplicate');
    await expect(processJob(waiting, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([refund('d-1', START)]);
  });

  it('never calls on a reservation it gave back: a dispatch that stood back, delivered again once the calling dispatch failed, calls nothing and gives nothing back', async () => {
    // d-1's invoke answered with an error but may have started: its message came back after its visibility and was
    // dispatched again as d-2, while d-1's event waited in Lambda's queue. d-2 finds d-1 calling and stands back.
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const first = atSlot(await receiveJobEvent(h, 'main', 'd-1'), 30_000, 30_100);
    await h.clock.advance(30_000);
    const second = atSlot(await receiveJobEvent(h, 'main', 'd-2'), 30_000, 31_000);
    h.api.latencyMs = 500;
    h.api.answers.push(httpStatus(503));
    const calling = processJob(first, h.deps);
    await expect(processJob(second, h.deps)).resolves.toBe('busy-elsewhere');
    await h.clock.advance(500);
    await expect(calling).resolves.toBe('retried');
    h.api.latencyMs = 0;

    // Lambda delivers d-2's event again, before its callBy: d-1's failed record keeps only d-1 out.
    await expect(processJob(second, h.deps)).resolves.toBe('already-spent');

    expect(h.api.calls).toHaveLength(1);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([refund('d-2', START + 30_000)]);
    expect(h.queues.messages('requeue').map((m) => m.attributes.attempt?.value)).toEqual(['2']);
  });

  it.each([
    ['late, past its callBy', 0],
    ['within its call window', 60_000],
  ])(
    'gives nothing back and requeues nothing for a repeat of a dispatch that called (%s), once the next attempt failed too',
    async (_, stretchMs) => {
      const h = workerHarness();
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 2 });
      h.api.answers.push(httpStatus(503), httpStatus(503));
      const received = await receiveJobEvent(h, 'main', 'd-1');
      const first = { ...received, callBy: received.callBy + stretchMs };
      await expect(processJob(first, h.deps)).resolves.toBe('retried');
      await h.clock.advance(1_000);
      await expect(processJob(await receiveJobEvent(h, 'requeue', 'd-2'), h.deps)).resolves.toBe('retried');
      await h.clock.advance(1_000);

      await expect(processJob(first, h.deps)).resolves.toBe('already-spent');

      expect(h.api.calls).toHaveLength(2);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
      expect(h.queues.messages('requeue').map((m) => m.attributes.attempt?.value)).toEqual(['3']);
      await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
        status: 'failed',
        dispatchId: 'd-2',
      });
    },
  );

  describe.each([
    ['succeeded', ok(), 'succeeded'],
    ['dead-lettered', httpStatus(400), 'dead-lettered'],
  ] as const)('in a FIFO group, job k %s', (_, answer, outcome) => {
    it('makes a late duplicate of job k’s event arriving after job k+1 started call nothing: the group stays in order', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'fifo', { id: 'k' }, { groupId: 'g-1' });
      await sendJob(h.queues, 'fifo', { id: 'k+1' }, { groupId: 'g-1' });
      h.api.answers.push(answer);
      const k = await receiveJobEvent(h, 'fifo', 'd-k');
      await expect(processJob(k, h.deps)).resolves.toBe(outcome);
      h.api.latencyMs = 500;
      const next = processJob(await receiveJobEvent(h, 'fifo', 'd-k+1'), h.deps);

      await expect(processJob(k, h.deps)).resolves.toBe(outcome === 'succeeded' ? 'duplicate' : 'already-ended');
      await h.clock.advance(500);
      await expect(next).resolves.toBe('succeeded');
      await expect(processJob(k, h.deps)).resolves.toBe(outcome === 'succeeded' ? 'duplicate' : 'already-ended');

      expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"k"}', '{"id":"k+1"}']);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });
  });
});

describe('processJob with a dead letter moved back as it was (the SQS console’s redrive)', () => {
  it('calls the job again from its first attempt: it reopens the key the dead-lettering holds, and its retry is a plain one', async () => {
    // Three 503s within seconds would open the circuit at the harness's threshold, and the redriven job would not call.
    const h = workerHarness(testConfig({ circuit: { failureThreshold: 5 } }));
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    h.api.answers.push(httpStatus(503), httpStatus(503), httpStatus(503), httpStatus(503));
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('retried');
    for (const id of ['d-2', 'd-3']) {
      await h.clock.advance(1_000);
      await processJob(await receiveJobEvent(h, 'requeue', id), h.deps);
    }
    expect(h.queues.messages('requeue-dlq').map((m) => m.attributes.attempt?.value)).toEqual(['3']);
    await moveBack(h, 'requeue-dlq', 'requeue');

    const redriven = await receiveJobEvent(h, 'requeue', 'd-4');
    expect(redriven.attempt).toBe(1);
    await expect(processJob(redriven, h.deps)).resolves.toBe('retried');
    await h.clock.advance(1_000);
    const retry = await receiveJobEvent(h, 'requeue', 'd-5');
    expect(retry.attempt).toBe(2);
    await expect(processJob(retry, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(Array(5).fill('order-42'));
    expect(h.queues.depth('requeue')).toBe(0);
    expect(h.queues.depth('requeue-dlq')).toBe(0);
  });

  it('keys a letter without an idempotencyKey by the message it was, so that a second copy of it is absorbed', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(400));
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('dead-lettered');
    await moveBack(h, 'main-dlq', 'main', 2);

    const first = await receiveJobEvent(h, 'main', 'd-2');
    expect(first).toMatchObject({ messageId: 'm-3', idempotencyKey: 'm-1', attempt: 1 });
    await expect(processJob(first, h.deps)).resolves.toBe('succeeded');
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-3'), h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(['m-1', 'm-1']);
    expect(h.queues.depth('main')).toBe(0);
  });

  it('leaves out a copy that names an older dead-lettering: the job was redriven and dead-lettered again since', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'order-42' });
    h.api.answers.push(httpStatus(400), httpStatus(400));
    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    await moveBack(h, 'main-dlq', 'main', 2);
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps)).resolves.toBe('dead-lettered');

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-3'), h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(2);
    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.messages('main-dlq').map((m) => m.attributes.dispatchId?.value)).toEqual(['d-2']);
  });
});
