import { StateFormatError, StateUnavailableError } from '../../../../lib/errors';
import type { Settlement } from '../../../../lib/domain/quota/ledger';
import type { BatchEvent, JobEvent } from '../../../../lib/ports/Invoker';
import { jobEventOf, parseJob } from '../../../../lib/services/parseJob';
import { processBatch } from '../../../../lib/services/worker/processBatch';
import { processJob } from '../../../../lib/services/worker/processJob';
import { UNCLAIMED_RETURN_DELAY_MS } from '../../../../lib/services/worker/jobEndings';
import {
  LANE,
  START,
  httpStatus,
  ok,
  receiveJobEvent,
  sendJob,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';
import { atSlot, batchOf } from '../../../helpers/workerFixtures';

describe('processBatch', () => {
  it("stops the batch's later calls at once when one is answered 429, before its next read of the circuit", async () => {
    const h = workerHarness();
    h.api.answer = (body) => (body.includes('"a"') ? httpStatus(429, { 'retry-after': '5' }) : ok());
    const event = await batchOf(h, ['a', 'b', 'c']);
    // Slots within circuitPollMs of the event's sending: without the 429, no job of the batch reads the circuit.
    const [a, b, c] = event.jobs as [JobEvent, JobEvent, JobEvent];
    const jobs = [atSlot(a, 0, 25), atSlot(b, 60, 85), atSlot(c, 90, 115)];

    const outcome = processBatch({ ...event, jobs }, h.deps);
    await h.clock.advance(200);

    await expect(outcome).resolves.toEqual(['retried', 'held-back', 'held-back']);
    expect(h.api.calls.map((call) => call.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.depth('requeue')).toBe(3);
  });

  it('records its successes in one write under its first dispatch id, which its claims name, and writes no record per key', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const perKey = jest.spyOn(h.stores.idempotency, 'putIdempotency');
    const together = jest.spyOn(h.stores.idempotency, 'recordBatchSuccesses');

    await expect(processBatch(event, h.deps)).resolves.toEqual(['succeeded', 'succeeded', 'succeeded']);

    expect(perKey).not.toHaveBeenCalled();
    // Each with what its call used (its estimate: the answers report none), and no result destination.
    const jobs = ['d-a', 'd-b', 'd-c'].map((dispatchId) => ({ dispatchId, usage: { cost: 1 } }));
    const expiresAt = START + h.config.orchestrator.idempotencyTtlMs;
    expect(together.mock.calls).toEqual([['d-a', { at: START, expiresAt, jobs, result: 'none' }]]);
    await expect(h.stores.idempotency.batchSuccess('d-a', 'd-c')).resolves.toEqual({
      at: START,
      usage: { cost: 1 },
      result: 'none',
    });
    const busyUntil = START + h.config.orchestrator.workerTimeoutMs;
    await expect(h.stores.idempotency.getIdempotency('k-b', START)).resolves.toEqual({
      status: 'in-progress',
      dispatchId: 'd-b',
      expiresAt: START + h.config.orchestrator.idempotencyTtlMs,
      batch: { id: 'd-a', busyUntil },
    });
    expect(h.queues.depth('main')).toBe(0);
  });

  it("keeps a later dispatch of an ended job from calling, before and after the batch's worker time is up", async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    await processBatch(event, h.deps);
    // The producer sends job b again, with the same key.
    await sendJob(h.queues, 'main', { id: 'b' }, { idempotencyKey: 'k-b' });
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-b2'), h.deps)).resolves.toBe('busy-elsewhere');
    await h.clock.advance(h.config.orchestrator.workerTimeoutMs);
    await sendJob(h.queues, 'main', { id: 'b' }, { idempotencyKey: 'k-b' });
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-b3'), h.deps)).resolves.toBe('duplicate');
    // A second delivery of the whole batch, after it ended, calls nothing either.
    await expect(processBatch(event, h.deps)).resolves.toEqual(['duplicate', 'duplicate']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}', '{"id":"b"}']);
  });

  it('lets the next dispatch take over the claim of a worker that stopped without recording, once its time is up', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    // The worker stops after its calls, before the batch's record and deletes: its messages come back.
    jest.spyOn(h.stores.idempotency, 'recordBatchSuccesses').mockRejectedValueOnce(new Error('worker crashed'));
    jest.spyOn(h.stores.idempotency, 'putIdempotency').mockRejectedValue(new Error('worker crashed'));
    jest.spyOn(h.queues, 'deleteBatch').mockRejectedValueOnce(new Error('worker crashed'));
    await expect(processBatch(event, h.deps)).rejects.toThrow(
      'the batch of 2 jobs failed in part: deleting 2 from main: worker crashed',
    );
    jest.restoreAllMocks();

    await h.clock.advance(h.config.orchestrator.workerTimeoutMs - 1);
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'k-a' });
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-a2'), h.deps)).resolves.toBe('busy-elsewhere');
    await h.clock.advance(1);
    await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'k-a' });
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-a3'), h.deps)).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}', '{"id":"b"}', '{"id":"a"}']);
  });

  it('makes no call when the batch is delivered again after its time is up and none of its successes could be recorded', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    jest
      .spyOn(h.stores.idempotency, 'recordBatchSuccesses')
      .mockRejectedValueOnce(new Error('ProvisionedThroughputExceededException'));
    jest
      .spyOn(h.stores.idempotency, 'putIdempotency')
      .mockRejectedValue(new Error('ProvisionedThroughputExceededException'));
    await expect(processBatch(event, h.deps)).resolves.toEqual(['succeeded', 'succeeded']);
    jest.restoreAllMocks();
    expect(h.queues.depth('main')).toBe(0);

    await h.clock.advance(h.config.orchestrator.workerTimeoutMs + 1_000);
    await expect(processBatch(event, h.deps)).resolves.toEqual(['busy-elsewhere', 'busy-elsewhere']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}', '{"id":"b"}']);
  });

  it("gives each success a record of its own when the batch's record cannot be written, then deletes", async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    jest
      .spyOn(h.stores.idempotency, 'recordBatchSuccesses')
      .mockRejectedValueOnce(new Error('ServiceUnavailableException'));

    await expect(processBatch(event, h.deps)).resolves.toEqual(['succeeded', 'succeeded']);

    const ttl = h.config.orchestrator.idempotencyTtlMs;
    await expect(h.stores.idempotency.getIdempotency('k-a', START)).resolves.toEqual({
      status: 'succeeded',
      dispatchId: 'd-a',
      at: START,
      expiresAt: START + ttl,
      usage: { cost: 1 },
      result: 'none',
    });
    await expect(h.stores.idempotency.getIdempotency('k-b', START)).resolves.toEqual({
      status: 'succeeded',
      dispatchId: 'd-b',
      at: START,
      expiresAt: START + ttl,
      usage: { cost: 1 },
      result: 'none',
    });
    expect(h.queues.depth('main')).toBe(0);
  });

  it('gives back the reservations of the jobs that started too late in one write, and calls the others at their slots', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const lateBy = (job: JobEvent, ms: number): JobEvent => atSlot(job, ms, ms);
    const jobs = [lateBy(event.jobs[0]!, -20), lateBy(event.jobs[1]!, -10), lateBy(event.jobs[2]!, 30)];
    const appends = jest.spyOn(h.stores.ledger, 'addSettlements');

    const outcome = processBatch({ ...event, jobs }, h.deps);
    await h.clock.advance(30);

    await expect(outcome).resolves.toEqual(['too-late', 'too-late', 'succeeded']);
    expect(appends.mock.calls.map((call) => (call.slice(1) as Settlement[]).map((s) => s.id))).toEqual([
      ['d-a', 'd-b'],
    ]);
    expect(h.api.calls.map((c) => [c.body, c.at - START])).toEqual([['{"id":"c"}', 30]]);
    expect(h.queues.depth('requeue')).toBe(2);
  });

  it('sends the jobs that started too late back in one request, and deletes their originals with the successes', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const late = (job: JobEvent): JobEvent => atSlot(job, -20, -20);
    const stats = { ...h.queues.stats };

    await expect(
      processBatch({ ...event, jobs: [late(event.jobs[0]!), event.jobs[1]!, late(event.jobs[2]!)] }, h.deps),
    ).resolves.toEqual(['too-late', 'succeeded', 'too-late']);

    expect({
      sendBatch: h.queues.stats.sendBatch - stats.sendBatch,
      send: h.queues.stats.send - stats.send,
      delete: h.queues.stats.delete - stats.delete,
      deleteBatch: h.queues.stats.deleteBatch - stats.deleteBatch,
    }).toEqual({ sendBatch: 1, send: 0, delete: 0, deleteBatch: 1 });
    expect(h.queues.depth('main')).toBe(0);
    const requeued = await h.queues.receive('requeue', { max: 10, visibilityMs: 1_000, waitMs: 0 });
    expect(requeued.map((m) => [m.body, m.attributes.attempt?.value, m.attributes.idempotencyKey?.value])).toEqual([
      ['{"id":"a"}', '1', 'k-a'],
      ['{"id":"c"}', '1', 'k-c'],
    ]);
  });

  it('keeps a job whose copy could not be sent back: its original reappears, and the batch names it', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    const late = (job: JobEvent): JobEvent => atSlot(job, -20, -20);
    jest.spyOn(h.queues, 'sendBatch').mockResolvedValueOnce([{ index: 0, reason: 'InternalError' }]);

    await expect(processBatch({ ...event, jobs: [late(event.jobs[0]!), event.jobs[1]!] }, h.deps)).rejects.toThrow(
      `the batch of 2 jobs failed in part: returning ${event.jobs[0]!.messageId}: InternalError`,
    );

    // b succeeded and was deleted; a is still in flight in the main queue, to reappear after its visibility.
    expect(h.queues.depth('main')).toBe(1);
    expect(h.queues.depth('requeue')).toBe(0);
  });

  it('records nothing for the batch when none of its jobs succeeded', async () => {
    const h = workerHarness();
    h.api.answer = () => httpStatus(503);
    const together = jest.spyOn(h.stores.idempotency, 'recordBatchSuccesses');

    await expect(processBatch(await batchOf(h, ['a', 'b']), h.deps)).resolves.toEqual(['retried', 'retried']);

    expect(together).not.toHaveBeenCalled();
  });

  describe("a FIFO group's messages", () => {
    /** A batch of `ids`, all of group g-1 and received together, slotted `gapMs` apart from now. */
    async function groupBatchOf(h: WorkerHarness, ids: readonly string[], gapMs: number): Promise<BatchEvent> {
      for (const id of ids) await sendJob(h.queues, 'fifo', { id }, { groupId: 'g-1', idempotencyKey: `k-${id}` });
      const messages = await h.queues.receive('fifo', { max: 10, visibilityMs: 30_000, waitMs: 0 });
      const jobs = messages.map((message, i) => {
        const parsed = parseJob(message);
        if (!parsed.ok) throw new Error(parsed.reason);
        const at = START + i * gapMs;
        return jobEventOf(LANE, message, parsed.job, `d-${ids[i]}`, { at, costs: { cost: 1 }, windows: {} }, at, START);
      });
      expect(jobs).toHaveLength(ids.length);
      return { kind: 'batch', lane: LANE, jobs, sentAt: START };
    }
    const callsOf = (h: WorkerHarness) =>
      h.api.calls.map((c) => [(JSON.parse(c.body) as { id: string }).id, c.at - START]);

    it('calls each once the one before has answered, at its own slot', async () => {
      const h = workerHarness();
      h.api.latencyMs = 60;
      const outcome = processBatch(await groupBatchOf(h, ['a1', 'a2', 'a3'], 100), h.deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toEqual(['succeeded', 'succeeded', 'succeeded']);
      expect(callsOf(h)).toEqual([
        ['a1', 0],
        ['a2', 100],
        ['a3', 200],
      ]);
      expect(h.queues.depth('fifo')).toBe(0);
    });

    it('calls none after one that failed: they go back uncalled, in order, with their reservations', async () => {
      const h = workerHarness();
      h.api.answers.push(httpStatus(503));
      const event = await groupBatchOf(h, ['a1', 'a2', 'a3'], 100);
      const outcome = processBatch(event, h.deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toEqual(['retried', 'behind-unfinished', 'behind-unfinished']);
      expect(callsOf(h)).toEqual([['a1', 0]]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
        { reservation: { at: START + 100, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-a2' },
        { reservation: { at: START + 200, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-a3' },
      ]);
      // a1 stays in flight for its retry delay, holding its group; a2 and a3 are visible again behind it.
      expect(h.queues.messages('fifo').map((m) => [m.body, m.visibleAt - START])).toEqual([
        ['{"id":"a1"}', 1_000],
        ['{"id":"a2"}', 0],
        ['{"id":"a3"}', 0],
      ]);
      // A later delivery of the batch calls none of them either: each dispatch spent its key.
      await h.clock.advance(h.config.orchestrator.workerTimeoutMs);
      await expect(processBatch(event, h.deps)).resolves.toEqual([
        'already-failed',
        'busy-elsewhere',
        'busy-elsewhere',
      ]);
      expect(callsOf(h)).toEqual([['a1', 0]]);
    });

    it("gives back one that the slow answer before it made too late, saying how long after that one's slot it could start", async () => {
      const h = workerHarness();
      h.api.latencyMs = 150;
      const outcome = processBatch(await groupBatchOf(h, ['a1', 'a2', 'a3'], 100), h.deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toEqual(['succeeded', 'too-late', 'behind-unfinished']);
      expect(callsOf(h)).toEqual([['a1', 0]]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
        {
          reservation: { at: START + 100, costs: { cost: 1 }, windows: {} },
          actual: null,
          id: 'd-a2',
          chainGapMs: 150,
        },
        { reservation: { at: START + 200, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-a3' },
      ]);
    });

    it('gives the group back in order, its head receivable after 10 s, when the first key cannot be claimed: the table failed every try', async () => {
      const h = workerHarness();
      const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
      jest.spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent').mockImplementation(async (key, ...rest) => {
        if (key === 'k-a1') throw new StateUnavailableError('putIdempotencyIfAbsent', { cause: new Error('503') });
        return claim(key, ...rest);
      });
      const event = await groupBatchOf(h, ['a1', 'a2', 'a3'], 100);
      const outcome = processBatch(event, h.deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toEqual(['unclaimed', 'behind-unfinished', 'behind-unfinished']);
      expect(callsOf(h)).toEqual([]);
      // a1 is visible again after 10 s rather than its 30 s visibility, holding its group until then; a2 and a3 are
      // back behind it. Every reservation is given back.
      expect(h.queues.messages('fifo').map((m) => [m.body, m.visibleAt - START])).toEqual([
        ['{"id":"a1"}', UNCLAIMED_RETURN_DELAY_MS],
        ['{"id":"a2"}', 0],
        ['{"id":"a3"}', 0],
      ]);
      const refunds = await h.stores.ledger.pendingSettlements(LANE);
      expect(refunds.map((r) => [r.id, r.actual])).toEqual([
        ['d-a1', null],
        ['d-a2', null],
        ['d-a3', null],
      ]);
    });

    it.each([
      [
        'throttling past the retries',
        Object.assign(new Error('Rate exceeded'), { name: 'ProvisionedThroughputExceededException' }),
      ],
      ['a write not sent again', Object.assign(new Error('not sent again'), { name: 'UncertainWriteError' })],
      ['a network error', new TypeError('fetch failed')],
    ])(
      'gives a job back unclaimed on the SDK error the table throws (%s), as on any failure of the claim',
      async (_, failure) => {
        const h = workerHarness();
        jest.spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent').mockRejectedValue(failure);
        const outcome = processBatch(await groupBatchOf(h, ['a1'], 100), h.deps);
        await h.clock.advance(1_000);

        await expect(outcome).resolves.toEqual(['unclaimed']);
        expect(callsOf(h)).toEqual([]);
        expect(h.queues.messages('fifo').map((m) => m.visibleAt - START)).toEqual([UNCLAIMED_RETURN_DELAY_MS]);
      },
    );

    it('throws on a key record that cannot be read, rather than give the job back for ever', async () => {
      const h = workerHarness();
      jest
        .spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent')
        .mockRejectedValue(new StateFormatError("stored idempotency record 'k-a1' is not an object; got 7"));
      const outcome = processBatch(await groupBatchOf(h, ['a1'], 100), h.deps);
      const settled = expect(outcome).rejects.toMatchObject({
        message: expect.stringContaining("m-1: stored idempotency record 'k-a1' is not an object"),
        cause: expect.any(StateFormatError),
      });
      await h.clock.advance(1_000);
      await settled;
      expect(callsOf(h)).toEqual([]);
    });

    it('gives back nothing of a dispatch whose claim may have landed (its refund mark is refused), but still returns its message', async () => {
      const h = workerHarness();
      const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
      // The claim lands, and its answer is lost on every try.
      jest.spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent').mockImplementation(async (...args) => {
        await claim(...args);
        throw new StateUnavailableError('putIdempotencyIfAbsent', { cause: new Error('answer lost') });
      });
      const outcome = processBatch(await groupBatchOf(h, ['a1'], 100), h.deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toEqual(['unclaimed']);
      expect(callsOf(h)).toEqual([]);
      expect(h.queues.messages('fifo').map((m) => m.visibleAt - START)).toEqual([UNCLAIMED_RETURN_DELAY_MS]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });

    it('leaves the others to the delivery that has the one before: a second delivery of the batch calls nothing', async () => {
      const h = workerHarness();
      h.api.latencyMs = 60;
      const event = await groupBatchOf(h, ['a1', 'a2'], 100);
      const first = processBatch(event, h.deps);
      await h.clock.advance(10);
      const second = processBatch(event, h.deps);
      await h.clock.advance(1_000);

      await expect(first).resolves.toEqual(['succeeded', 'succeeded']);
      await expect(second).resolves.toEqual(['busy-elsewhere', 'busy-elsewhere']);
      expect(callsOf(h)).toEqual([
        ['a1', 0],
        ['a2', 100],
      ]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });
  });
});
