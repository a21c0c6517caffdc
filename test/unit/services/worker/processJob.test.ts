import { processJob } from '../../../../lib/services/worker/processJob';
import {
  LANE,
  START,
  awkwardBody,
  httpStatus,
  numberAttr,
  receiveJobEvent,
  sendJob,
  stringAttr,
  testConfig,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';
import { receiveAll } from '../../../helpers/workerFixtures';

describe('processJob held to its slot', () => {
  /** A job event of `queue` whose slot is `slotMs` after START, to be called by `callByMs` after START. */
  async function slotted(
    h: WorkerHarness,
    queue: 'main' | 'fifo',
    slotMs: number,
    callByMs: number,
    dispatchId = 'd-1',
  ) {
    const event = await receiveJobEvent(h, queue, dispatchId);
    return { ...event, slotAt: START + slotMs, callBy: START + callByMs };
  }

  it('waits for its slot when it starts early, then calls at the slot', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const done = processJob(await slotted(h, 'main', 250, 270), h.deps);
    await h.clock.advance(250);

    await expect(done).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at)).toEqual([START + 250]);
  });

  it('claims its key before it waits: nothing but the call follows the slot', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const done = processJob(await slotted(h, 'main', 250, 270), h.deps);
    await h.clock.advance(1);

    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'in-progress',
      dispatchId: 'd-1',
    });
    expect(h.api.calls).toEqual([]);
    await h.clock.advance(249);
    await expect(done).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at)).toEqual([START + 250]);
  });

  it('gives its reservation back when the claim itself takes it past callBy, says how late it was ready, and leaves the key to the next dispatch', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await slotted(h, 'main', 0, 20);
    const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
    h.stores.idempotency.putIdempotencyIfAbsent = async (...args) => {
      const held = await claim(...args);
      await h.clock.sleep(30); // a slow answer
      return held;
    };
    const done = processJob(event, h.deps);
    await h.clock.advance(30);

    await expect(done).resolves.toBe('too-late');
    expect(h.api.calls).toEqual([]);
    // Sent at its slot and ready 30 ms later: the dispatch lead learns that claims take that long.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: event.reservation, actual: null, id: 'd-1', startDelayMs: 30 },
    ]);
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'failed',
      dispatchId: 'd-1',
    });
    h.stores.idempotency.putIdempotencyIfAbsent = claim;
    await expect(processJob(event, h.deps)).resolves.toBe('already-failed');
    expect(h.api.calls).toEqual([]);
  });

  it.each([
    ['exactly at its slot', 0],
    ['exactly at callBy', 20],
  ])('calls at once when it starts %s', async (_, startMs) => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await slotted(h, 'main', 0, 20);
    await h.clock.advance(startMs);

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at)).toEqual([START + startMs]);
  });

  it('does not call when it starts after callBy: gives its reservation back once and requeues the job with its attempt and key', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 2, attempt: 2 });
    const event = await slotted(h, 'main', 0, 20);
    await h.clock.advance(21);

    await expect(processJob(event, h.deps)).resolves.toBe('too-late');

    expect(h.api.calls).toEqual([]);
    // The refund reports how late the worker started after its event was sent (at START), for the lead to grow.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: event.reservation, actual: null, id: 'd-1', startDelayMs: 21 },
    ]);
    expect(h.queues.depth('main')).toBe(0);
    expect(
      h.queues
        .messages('requeue')
        .map((m) => ({ attempt: m.attributes.attempt, key: m.attributes.idempotencyKey, visibleAt: m.visibleAt })),
    ).toEqual([{ attempt: numberAttr(2), key: stringAttr('m-1'), visibleAt: START + 21 }]);
  });

  it('leaves no record that blocks the next dispatch, while another delivery of the late event still makes no call', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const late = await slotted(h, 'main', 0, 20);
    await h.clock.advance(100);
    await expect(processJob(late, h.deps)).resolves.toBe('too-late');

    await expect(processJob(late, h.deps)).resolves.toBe('already-failed');
    const next = await receiveJobEvent(h, 'requeue', 'd-2');
    await expect(processJob(next, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(['m-1']);
    expect((await h.stores.ledger.pendingSettlements(LANE)).map((s) => s.id)).toEqual(['d-1']);
  });

  it('gives nothing back when a delivery of the same dispatch already claimed the call', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await slotted(h, 'main', 0, 20);
    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');
    await h.clock.advance(100);

    await expect(processJob(event, h.deps)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('returns a late FIFO job to its own queue, visible at once, its group in order', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g' });
    await sendJob(h.queues, 'fifo', { id: 'b' }, { groupId: 'g' });
    const event = await slotted(h, 'fifo', 0, 20);
    await h.clock.advance(21);

    await expect(processJob(event, h.deps)).resolves.toBe('too-late');

    expect(h.queues.depth('requeue')).toBe(0);
    const [next] = await receiveAll(h, 'fifo');
    expect(next?.body).toBe('{"id":"a"}');
  });

  it("holds a worker whose clock runs ahead of the orchestrator's within the margin: skew is part of the allowance", async () => {
    // The worker's clock is 10 ms ahead: it calls at orchestrator time slot − 10 at the earliest and callBy − 10 at
    // the latest, so with callBy = slot + margin − allowance and allowance >= network time + 2 · skew, every arrival
    // lies within a margin-wide window around the slot.
    const h = workerHarness();
    const skewMs = 10;
    const { arrivalMarginMs, callAllowanceMs } = testConfig({
      pacing: { arrivalMarginMs: 50, callAllowanceMs: 30 },
    }).pacing;
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await slotted(h, 'main', 200 + skewMs, 200 + skewMs + arrivalMarginMs - callAllowanceMs);
    const done = processJob(event, h.deps);
    await h.clock.advance(400);

    await expect(done).resolves.toBe('succeeded');
    const [call] = h.api.calls;
    expect(call!.at - skewMs).toBeGreaterThanOrEqual(START + 200 - skewMs);
    expect(call!.at - skewMs).toBeLessThanOrEqual(START + 200 + arrivalMarginMs - callAllowanceMs);
  });
});

describe('processJob with a body that a JSON round trip would change', () => {
  const body = awkwardBody('a');

  it('is such a body: parsing and serialising it again loses digits, the number beyond a double, a key and the escapes', () => {
    expect(JSON.stringify(JSON.parse(body))).not.toBe(body);
  });

  it('hands the API caller the body byte for byte', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', body);

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.body)).toEqual([body]);
  });

  it('requeues the body byte for byte, and hands it on again at the next attempt', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', body);
    h.api.answers.push(httpStatus(503));

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('retried');
    expect(h.queues.messages('requeue').map((m) => m.body)).toEqual([body]);
    await h.clock.advance(1_000);
    await expect(processJob(await receiveJobEvent(h, 'requeue', 'd-2'), h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.body)).toEqual([body, body]);
  });

  it.each([
    ['a standard message', 'main', undefined],
    ['a FIFO message', 'fifo', 'g-1'],
  ] as const)('dead-letters %s with its body byte for byte', async (_, queue, groupId) => {
    const h = workerHarness();
    await sendJob(h.queues, queue, body, groupId === undefined ? {} : { groupId });
    h.api.answers.push(httpStatus(400));

    await expect(processJob(await receiveJobEvent(h, queue, 'd-1'), h.deps)).resolves.toBe('dead-lettered');

    expect(h.queues.messages(`${queue}-dlq`).map((m) => m.body)).toEqual([body]);
  });
});
