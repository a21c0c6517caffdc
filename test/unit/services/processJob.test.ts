import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../tools/memory/MemoryQueues';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import type { Settlement } from '../../../lib/domain/quota/ledger';
import { StateUnavailableError } from '../../../lib/errors';
import type { QueueName } from '../../../lib/ports/QueueReceiver';
import { applyCircuitEvent, loadCircuit } from '../../../lib/services/circuitUpdates';
import { processBatch } from '../../../lib/services/worker/processBatch';
import { processHealthCheck } from '../../../lib/services/worker/processHealthCheck';
import { processJob } from '../../../lib/services/worker/processJob';
import type { WorkerDeps } from '../../../lib/services/worker/types';
import { jobEventOf, parseJob } from '../../../lib/services/parseJob';
import type { BatchEvent, JobEvent } from '../../../lib/ports/Invoker';
import {
  LANE,
  START,
  httpStatus,
  numberAttr,
  awkwardBody,
  ok,
  openCircuit,
  receiveJobEvent,
  sendJob,
  stringAttr,
  workerHarness,
  type WorkerHarness,
  testConfig,
} from '../../helpers/serviceFixtures';

const DAY_MS = 86_400_000;

/** {@link testConfig} with a tier of the `cost` unit too, so that the worker reads the cost a call used (`x-actual-cost`). */
const COST_CONFIG = testConfig({
  quotas: [
    { limit: 5, per: 'second' },
    { limit: 1_000, per: 'second', unit: 'cost' },
  ],
});

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

/** A worker's settlement recorder over `h`'s ledger whose next `failures` appends fail (all of them for Infinity), recording when each was tried. */
function flakyRecorder(h: WorkerHarness, failures: number) {
  const recorder = {
    failures,
    tries: [] as number[],
    async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
      recorder.tries.push(h.clock.now());
      if (recorder.failures-- > 0) throw new Error('ServiceUnavailableException: DynamoDB is down');
      return h.stores.ledger.addSettlements(lane, ...settlements);
    },
  };
  return recorder;
}

async function receiveAll(h: WorkerHarness, queue: 'main' | 'fifo' | 'requeue') {
  return h.queues.receive(queue, { max: 10, visibilityMs: 30_000, waitMs: 0 });
}

describe('processJob', () => {
  it('deletes the message and records the idempotency key as succeeded on success', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls).toEqual([{ at: START, body: '{"id":"a"}', idempotencyKey: 'm-1' }]);
    expect(h.queues.depth('main')).toBe(0);
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toEqual({
      status: 'succeeded',
      dispatchId: 'd-1',
      at: START,
      expiresAt: START + DAY_MS,
    });
  });

  it('records the success at the instant the API answered', async () => {
    const h = workerHarness();
    h.api.latencyMs = 300;
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    const outcome = processJob(event, h.deps);
    await h.clock.advance(300);

    await expect(outcome).resolves.toBe('succeeded');
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'succeeded',
      at: START + 300,
      expiresAt: START + 300 + DAY_MS,
    });
  });

  it('writes no settlement when the actual cost equals the reserved one', async () => {
    const h = workerHarness(COST_CONFIG);
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(3));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('writes no settlement when the API reports no actual cost', async () => {
    const h = workerHarness(COST_CONFIG);
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await processJob(event, h.deps);

    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('writes no settlement on a lane whose tiers count no cost, whatever cost the API reports', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('settles the reservation with the actual cost the API reports when it differs', async () => {
    const h = workerHarness(COST_CONFIG);
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: { at: START, costs: { cost: 3 }, windows: {} }, actual: { cost: 7 }, id: 'd-1' },
    ]);
  });

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

  describe('when the settlement cannot be recorded at once', () => {
    const owed: Settlement = {
      reservation: { at: START, costs: { cost: 3 }, windows: {} },
      actual: { cost: 7 },
      id: 'd-1',
    };

    it('tries again with back-off and records it before deleting the message', async () => {
      const h = workerHarness(COST_CONFIG);
      const ledger = flakyRecorder(h, 2);
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
      h.api.answers.push(ok(7));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...h.deps, stores: { ...h.stores, ledger } });
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toBe('succeeded');
      expect(ledger.tries).toEqual([START, START + 100, START + 300]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([owed]);
      expect(h.queues.depth('main')).toBe(0);
    });

    it('keeps the message and the settlement in the success record; its next dispatch records it without calling again', async () => {
      const h = workerHarness(COST_CONFIG);
      const ledger = flakyRecorder(h, Number.POSITIVE_INFINITY);
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
      h.api.answers.push(ok(7));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...h.deps, stores: { ...h.stores, ledger } });
      const settled = expect(outcome).rejects.toBeInstanceOf(StateUnavailableError);
      await h.clock.advance(5_000);
      await settled;
      // It tried until three quarters of its 5 s.
      expect(ledger.tries.at(-1)).toBeLessThanOrEqual(START + 3_750);
      expect(ledger.tries.length).toBeGreaterThan(3);
      await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
        status: 'succeeded',
        dispatchId: 'd-1',
        settlement: owed,
      });
      expect(h.queues.depth('main')).toBe(1);

      await h.clock.advanceTo(START + 30_000);
      const again = await receiveJobEvent(h, 'main', 'd-2');
      await expect(processJob(again, h.deps)).resolves.toBe('duplicate');

      expect(h.api.calls).toHaveLength(1);
      expect(h.queues.depth('main')).toBe(0);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
        { reservation: { at: START + 30_000, costs: { cost: 3 }, windows: {} }, actual: null, id: 'd-2' },
        owed,
      ]);
      const record = await h.stores.idempotency.getIdempotency('m-1', h.clock.now());
      expect(record).toEqual({ status: 'succeeded', dispatchId: 'd-1', at: START, expiresAt: START + DAY_MS });
    });

    it('deletes the message all the same when the success record cannot be written either: ended is ended', async () => {
      const h = workerHarness(COST_CONFIG);
      const ledger = flakyRecorder(h, Number.POSITIVE_INFINITY);
      const idempotency = Object.assign(Object.create(h.stores.idempotency) as typeof h.stores.idempotency, {
        putIdempotency: () => Promise.reject(new Error('ServiceUnavailableException: DynamoDB is down')),
      });
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
      h.api.answers.push(ok(7));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...h.deps, stores: { ...h.stores, ledger, idempotency } });
      const settled = expect(outcome).rejects.toThrow(/could not be recorded: it is lost/);
      await h.clock.advance(5_000);
      await settled;
      expect(h.queues.depth('main')).toBe(0);
      expect(h.api.calls).toHaveLength(1);
    });

    it('requeues a failed call all the same, and fails naming the settlement', async () => {
      const h = workerHarness(COST_CONFIG);
      const ledger = flakyRecorder(h, Number.POSITIVE_INFINITY);
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
      h.api.answers.push(httpStatus(503, { 'x-actual-cost': '1' }));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...h.deps, stores: { ...h.stores, ledger } });
      const settled = expect(outcome).rejects.toThrow(/settlement .*"actual":\{"cost":1\}.* could not be recorded/);
      await h.clock.advance(5_000);
      await settled;
      expect(h.queues.depth('main')).toBe(0);
      expect(h.queues.depth('requeue')).toBe(1);
    });
  });

  it('still deletes a succeeded message when its success cannot be recorded, so that it is not dispatched and called again', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const unavailable = new Error('ServiceUnavailableException: DynamoDB is down');
    const idempotency = Object.assign(Object.create(h.stores.idempotency) as typeof h.stores.idempotency, {
      putIdempotency: () => Promise.reject(unavailable),
    });

    await expect(processJob(event, { ...h.deps, stores: { ...h.stores, idempotency } })).resolves.toBe('succeeded');

    expect(h.api.calls).toHaveLength(1);
    expect(h.queues.depth('main')).toBe(0);
    // Lambda delivers the event again after its claim expired: the dispatch claimed the key once, and calls no more.
    await h.clock.advance(h.config.orchestrator.workerTimeoutMs + 1_000);
    await expect(processJob(event, h.deps)).resolves.toBe('busy-elsewhere');
    expect(h.api.calls).toHaveLength(1);
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

  it('sends a standard message failing with 503 to the requeue queue with attempt + 1, its key and a delay, and deletes the original', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 2 });
    h.api.answers.push(httpStatus(503));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('retried');

    expect(h.queues.depth('main')).toBe(0);
    // Full jitter: random 0.5 × min(baseDelayMs 1000, refill 1000) = 500 ms, rounded up to SQS's whole second.
    expect(h.queues.messages('requeue')).toEqual([
      {
        messageId: 'm-2',
        body: '{"id":"a"}',
        attributes: { cost: numberAttr(2), idempotencyKey: stringAttr('m-1'), attempt: numberAttr(2) },
        receiveCount: 0,
        visibleAt: START + 1_000,
        inFlight: false,
      },
    ]);
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toEqual({
      status: 'failed',
      dispatchId: 'd-1',
      at: START,
      expiresAt: START + DAY_MS,
    });
  });

  it('records a transient failure with the circuit', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(503));

    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);

    const circuit = await loadCircuit(h.stores.circuit, LANE);
    expect(circuit).toEqual({
      state: { status: 'closed', failures: [START], closedAt: null, reopenStreak: 0 },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [],
      version: 1,
    });
  });

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

  it('keeps a FIFO message failing with 503 in flight with its visibility pushed out, holding back its group', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'fifo', { id: 'a1' }, { groupId: 'g-1' });
    await sendJob(h.queues, 'fifo', { id: 'a2' }, { groupId: 'g-1' });
    h.api.answers.push(httpStatus(503));
    const event = await receiveJobEvent(h, 'fifo', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('retried');

    expect(h.queues.depth('requeue')).toBe(0);
    expect(
      h.queues.messages('fifo').map((m) => ({ id: m.messageId, visibleAt: m.visibleAt, inFlight: m.inFlight })),
    ).toEqual([
      { id: 'm-1', visibleAt: START + 1_000, inFlight: true },
      { id: 'm-2', visibleAt: START, inFlight: false },
    ]);
    await expect(receiveAll(h, 'fifo')).resolves.toEqual([]);
    // Once the delay is over the same message comes back first, on its second receive (its attempt 2).
    await h.clock.advance(1_000);
    const retry = await receiveJobEvent(h, 'fifo', 'd-2');
    expect(retry).toMatchObject({ messageId: 'm-1', attempt: 2 });
  });

  it("dead-letters a message the API refuses with 400 at once, with reason, attempt, source queue, message and dispatch ids, the API's error and the body kept", async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a', poison: true }, { cost: 2 });
    h.api.answers.push({ kind: 'response', status: 400, headers: {}, body: '{"error":"invalid phone number"}' });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('dead-lettered');

    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.depth('requeue')).toBe(0);
    const [dead, ...others] = h.queues.messages('main-dlq');
    expect(others).toEqual([]);
    expect(dead?.body).toBe('{"id":"a","poison":true}');
    expect(dead?.attributes).toEqual({
      cost: numberAttr(2),
      reason: stringAttr('permanent: HTTP 400 Bad Request'),
      attempt: numberAttr(1),
      sourceQueue: stringAttr('main'),
      originalMessageId: stringAttr('m-1'),
      dispatchId: stringAttr('d-1'),
      apiError: stringAttr('{"error":"invalid phone number"}'),
    });
    // One job's 4xx says nothing about the API's health: it only starts a run of refusals, far below the threshold.
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', failures: [] },
      clientErrorRun: 1,
    });
  });

  describe('refusals of the caller', () => {
    it.each([401, 403])(
      'keeps a job refused with %i: circuit opened with the reason, job requeued with its attempt, nothing dead-lettered',
      async (status) => {
        const h = workerHarness();
        const opened: unknown[] = [];
        await sendJob(h.queues, 'main', { id: 'a' }, { cost: 2 });
        h.api.answers.push(httpStatus(status));

        const outcome = await processJob(await receiveJobEvent(h, 'main', 'd-1'), {
          ...h.deps,
          onEvent: (e) => e.type === 'circuit-transition' && opened.push(e),
        });

        expect(outcome).toBe('kept');
        const reason = `caller rejected: HTTP ${status} ${status === 401 ? 'Unauthorized' : 'Forbidden'}`;
        await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
          state: { status: 'open', openedAt: START, reason },
        });
        expect(opened).toEqual([
          { type: 'circuit-transition', lane: LANE, at: START, from: 'closed', to: 'open', reason },
        ]);
        expect(h.queues.depth('main')).toBe(0);
        expect(h.queues.depth('main-dlq')).toBe(0);
        expect(
          h.queues.messages('requeue').map((m) => ({
            body: m.body,
            visibleAt: m.visibleAt,
            attempt: m.attributes.attempt,
            cost: m.attributes.cost,
          })),
        ).toEqual([{ body: '{"id":"a"}', visibleAt: START, attempt: numberAttr(1), cost: numberAttr(2) }]);
      },
    );

    it('keeps a job refused with 401 on its last attempt, still without consuming it', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'main', { id: 'a' }, { attempt: 3 });
      h.api.answers.push(httpStatus(401));

      await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('kept');

      expect(h.queues.messages('requeue').map((m) => m.attributes.attempt)).toEqual([numberAttr(3)]);
      expect(h.queues.depth('main-dlq')).toBe(0);
    });

    it('keeps a FIFO job refused with 403 in its own queue, visible again at once, its group in order', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g' });
      await sendJob(h.queues, 'fifo', { id: 'b' }, { groupId: 'g' });
      h.api.answers.push(httpStatus(403));

      await expect(processJob(await receiveJobEvent(h, 'fifo', 'd-1'), h.deps)).resolves.toBe('kept');

      expect(h.queues.depth('requeue')).toBe(0);
      expect(h.queues.depth('fifo-dlq')).toBe(0);
      const [next] = await receiveAll(h, 'fifo');
      expect(next?.body).toBe('{"id":"a"}');
    });

    it('dead-letters the first 4xx jobs below callerRejectThreshold, then opens the circuit and keeps the rest, in flight ones included', async () => {
      const h = workerHarness(testConfig({ circuit: { callerRejectThreshold: 3 } }));
      const opened: unknown[] = [];
      const deps: WorkerDeps = { ...h.deps, onEvent: (e) => e.type === 'circuit-transition' && opened.push(e) };
      h.api.fallback = httpStatus(404);
      for (let i = 0; i < 5; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });
      const events = [];
      for (let i = 0; i < 5; i++) events.push(await receiveJobEvent(h, 'main', `d-${i}`));

      const outcomes = [];
      for (const event of events) outcomes.push(await processJob(event, deps));

      expect(outcomes).toEqual(['dead-lettered', 'dead-lettered', 'kept', 'kept', 'kept']);
      const reason = 'caller rejected: HTTP 404 Not Found on 3 jobs in a row';
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
        state: { status: 'open', reason },
        clientErrorRun: 5,
      });
      expect(opened).toEqual([
        { type: 'circuit-transition', lane: LANE, at: START, from: 'closed', to: 'open', reason },
      ]);
      expect(h.queues.depth('main-dlq')).toBe(2);
      expect(h.queues.messages('requeue').map((m) => m.attributes.attempt)).toEqual([
        numberAttr(1),
        numberAttr(1),
        numberAttr(1),
      ]);
    });

    it('lets a success between 4xx jobs reset the run, so scattered bad jobs never open the circuit', async () => {
      const h = workerHarness(testConfig({ circuit: { callerRejectThreshold: 2 } }));
      const answers = [httpStatus(400), ok(), httpStatus(422), ok(), httpStatus(404)];
      h.api.answers.push(...answers);
      for (let i = 0; i < answers.length; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });

      const outcomes = [];
      for (let i = 0; i < answers.length; i++)
        outcomes.push(await processJob(await receiveJobEvent(h, 'main', `d-${i}`), h.deps));

      expect(outcomes).toEqual(['dead-lettered', 'succeeded', 'dead-lettered', 'succeeded', 'dead-lettered']);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
        state: { status: 'closed' },
        clientErrorRun: 1,
      });
    });

    it('reports a success to the circuit only when a run of refusals is open: otherwise one cheap read of the run', async () => {
      const h = workerHarness();
      h.api.answers.push(ok(), httpStatus(400), ok());
      for (const id of ['a', 'b', 'c']) await sendJob(h.queues, 'main', { id });
      const load = jest.spyOn(h.stores.circuit, 'loadCircuit');
      const run = jest.spyOn(h.stores.circuit, 'refusalRun');

      await processJob(await receiveJobEvent(h, 'main', 'd-a'), h.deps);
      expect([run.mock.calls.length, load.mock.calls.length]).toEqual([1, 0]);
      await processJob(await receiveJobEvent(h, 'main', 'd-b'), h.deps);
      load.mockClear();
      await processJob(await receiveJobEvent(h, 'main', 'd-c'), h.deps);

      expect(load).toHaveBeenCalled();
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ clientErrorRun: 0 });
    });

    it('keeps a job refused with another 4xx while the circuit is open for any reason', async () => {
      const h = workerHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      await sendJob(h.queues, 'main', { id: 'a' });
      h.api.answers.push(httpStatus(400));

      await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('kept');

      expect(h.queues.depth('main-dlq')).toBe(0);
      expect(h.queues.depth('requeue')).toBe(1);
    });
  });

  it('dead-letters a message that fails transiently on its last attempt', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'requeue', { id: 'a' }, { attempt: 3 });
    h.api.answers.push(httpStatus(503));
    const event = await receiveJobEvent(h, 'requeue', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('dead-lettered');

    expect(h.queues.depth('requeue')).toBe(0);
    expect(h.queues.messages('requeue-dlq').map((m) => m.attributes)).toEqual([
      {
        attempt: numberAttr(3),
        reason: stringAttr('gave up after 3 attempts: HTTP 503 Service Unavailable'),
        sourceQueue: stringAttr('requeue'),
        originalMessageId: stringAttr('m-1'),
        dispatchId: stringAttr('d-1'),
      },
    ]);
  });

  it('dead-letters a FIFO message on its last attempt into the FIFO dead-letter queue, in its group', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'fifo', { id: 'a1' }, { groupId: 'g-1' });
    h.api.fallback = httpStatus(503);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const event = await receiveJobEvent(h, 'fifo', `d-${attempt}`);
      expect(event.attempt).toBe(attempt);
      await expect(processJob(event, h.deps)).resolves.toBe(attempt < 3 ? 'retried' : 'dead-lettered');
      await h.clock.advance(2_000);
    }

    expect(h.queues.depth('fifo')).toBe(0);
    expect(
      h.queues.messages('fifo-dlq').map((m) => ({ groupId: m.groupId, reason: m.attributes.reason?.value })),
    ).toEqual([{ groupId: 'g-1', reason: 'gave up after 3 attempts: HTTP 503 Service Unavailable' }]);
  });

  it('pauses the lane until Retry-After on a 429 and requeues after that wait', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(429, { 'retry-after': '2' }));

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('retried');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 },
      pausedUntil: START + 2_000,
      clientErrorRun: 0,
      hold: null,
      transitions: [],
      version: 1,
    });
    // 2000 ms + jitter 0.5 × min(1000, 200) = 2100 ms, rounded up to a whole second.
    expect(
      h.queues.messages('requeue').map((m) => ({ visibleAt: m.visibleAt, attempt: m.attributes.attempt })),
    ).toEqual([{ visibleAt: START + 3_000, attempt: numberAttr(2) }]);
  });

  it('never opens the circuit on 429s, however many', async () => {
    const h = workerHarness();
    h.api.fallback = httpStatus(429, { 'retry-after': '1' });
    for (let i = 0; i < 10; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });

    for (let i = 0; i < 10; i++) {
      await processJob(await receiveJobEvent(h, 'main', `d-${i}`), h.deps);
      await h.clock.advance(100);
    }

    const circuit = await loadCircuit(h.stores.circuit, LANE);
    expect(circuit.state).toEqual({ status: 'closed', failures: [], closedAt: null, reopenStreak: 0 });
    expect(circuit.pausedUntil).toBe(START + 900 + 1_000);
  });

  it('opens the circuit after failureThreshold transient failures within the window', async () => {
    const h = workerHarness();
    h.api.fallback = httpStatus(503);
    for (let i = 0; i < 3; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });

    await processJob(await receiveJobEvent(h, 'main', 'd-0'), h.deps);
    await h.clock.advance(100);
    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', failures: [START, START + 100] },
    });
    await h.clock.advance(100);
    await processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps);

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: {
        status: 'open',
        openedAt: START + 200,
        nextCheckAt: START + 200 + 2_000,
        failedChecks: 0,
        reopenStreak: 0,
        reason: '3 transient failures within 10 s',
      },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [{ at: START + 200, from: 'closed', to: 'open', reason: '3 transient failures within 10 s' }],
      version: 3,
    });
  });

  it('counts timeouts and network errors as transient failures', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    await sendJob(h.queues, 'main', { id: 'b' });
    h.api.answers.push({ kind: 'timeout', afterMs: 5_000 }, { kind: 'network-error', message: 'ECONNRESET' });

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('retried');
    await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps)).resolves.toBe('retried');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', failures: [START, START] },
    });
    expect(h.queues.depth('requeue')).toBe(2);
  });
});

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

  it('gives its reservation back when the claim itself takes it past callBy, and leaves the key to the next dispatch', async () => {
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
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: event.reservation, actual: null, id: 'd-1' },
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

/** A refund of dispatch `id`'s reservation of one unit made at `at`. */
function refund(id: string, at: number): Settlement {
  return { reservation: { at, costs: { cost: 1 }, windows: {} }, actual: null, id };
}

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

describe('processHealthCheck', () => {
  /** A circuit opened at START and half-open since START + openSeconds with check `c-1`. */
  async function halfOpen(h: WorkerHarness): Promise<void> {
    await openCircuit(h.stores.circuit, h.config, START);
    await h.clock.advanceTo(START + 2_000);
    const { after } = await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-sent', checkId: 'c-1' },
      h.clock.now(),
      circuitPolicyFrom(h.config.circuit),
    );
    expect(after.state).toMatchObject({ status: 'half-open', checkId: 'c-1' });
  }

  const check = (checkId = 'c-1', sentAt = START + 2_000) =>
    ({ kind: 'health-check', lane: LANE, checkId, sentAt }) as const;

  it('claims the check, probes, and closes the circuit when the probe succeeds', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(100);

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('healthy');

    expect(h.api.probes).toBe(1);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: { status: 'closed', failures: [], closedAt: START + 2_100, reopenStreak: 0 },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [
        { at: START, from: 'closed', to: 'open', reason: '3 transient failures within 10 s' },
        { at: START + 2_000, from: 'open', to: 'half-open', reason: 'health check c-1 sent' },
        { at: START + 2_100, from: 'half-open', to: 'closed', reason: 'health check c-1 passed' },
      ],
      version: 6,
    });
  });

  it('records the probe start before it calls, so the timeout counts from there', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.latencyMs = 1_000;
    await h.clock.advance(1_500);

    const probing = processHealthCheck(check(), h.deps);
    await h.clock.advance(1);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'half-open', checkId: 'c-1', probeStartedAt: START + 3_500 },
    });
    await h.clock.advance(1_000);
    await expect(probing).resolves.toBe('healthy');
  });

  it('keeps the circuit open when the probe fails, with the next check healthCheckSeconds later and the reason kept', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(100);
    h.api.probeAnswers.push(httpStatus(503));

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: {
        status: 'open',
        openedAt: START,
        nextCheckAt: START + 2_100 + 1_000,
        failedChecks: 1,
        reopenStreak: 0,
        reason: '3 transient failures within 10 s',
      },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [
        { at: START, from: 'closed', to: 'open', reason: '3 transient failures within 10 s' },
        { at: START + 2_000, from: 'open', to: 'half-open', reason: 'health check c-1 sent' },
        { at: START + 2_100, from: 'half-open', to: 'open', reason: 'health check c-1 failed' },
      ],
      version: 6,
    });
  });

  it('counts a probe refused with 401 as failed: the circuit stays open until the key is fixed', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.probeAnswers.push(httpStatus(401));

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', failedChecks: 1 },
    });
  });

  it('makes no call for a check that is not current, and changes nothing', async () => {
    const h = workerHarness();
    await halfOpen(h);
    const before = await loadCircuit(h.stores.circuit, LANE);

    await expect(processHealthCheck(check('c-0', START), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual(before);
  });

  it('makes no call when the circuit is closed, and writes nothing', async () => {
    const h = workerHarness();

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
    await expect(h.stores.circuit.loadCircuit(LANE)).resolves.toBeUndefined();
  });

  it('makes no call for a second delivery of a check whose probe is running: one probe at a time', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.latencyMs = 3_000;

    const first = processHealthCheck(check(), h.deps);
    await h.clock.advance(1_000);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');
    await h.clock.advance(2_000);

    await expect(first).resolves.toBe('healthy');
    expect(h.api.probes).toBe(1);
  });

  it('makes no call for a delivery of a check after its first delivery ended', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.probeAnswers.push(httpStatus(503));
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await h.clock.advance(10_000);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(1);
  });

  it('makes no call for a check that started too late: past the timeout, the orchestrator may already have replaced it', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(5_000);

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
  });

  it('makes no call for the late delivery of a check that was replaced, while the replacement probes', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(5_000);
    const policy = circuitPolicyFrom(h.config.circuit);
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-sent', checkId: 'c-2' },
      h.clock.now(),
      policy,
    );
    h.api.latencyMs = 2_000;

    const replacement = processHealthCheck(check('c-2', START + 7_000), h.deps);
    await h.clock.advance(500);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');
    await h.clock.advance(1_500);

    await expect(replacement).resolves.toBe('healthy');
    expect(h.api.probes).toBe(1);
  });
});

describe('processBatch', () => {
  /** A batch event of `ids`' jobs (keys `k-<id>`), received now, dispatch ids `d-<id>`. */
  async function batchOf(h: WorkerHarness, ids: readonly string[]): Promise<BatchEvent> {
    for (const id of ids) await sendJob(h.queues, 'main', { id }, { idempotencyKey: `k-${id}` });
    const jobs = [];
    for (const id of ids) jobs.push(await receiveJobEvent(h, 'main', `d-${id}`));
    return { kind: 'batch', lane: LANE, jobs, sentAt: h.clock.now() };
  }

  it('records its successes in one write under its first dispatch id, which its claims name, and writes no record per key', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const perKey = jest.spyOn(h.stores.idempotency, 'putIdempotency');
    const together = jest.spyOn(h.stores.idempotency, 'recordBatchSuccesses');

    await expect(processBatch(event, h.deps)).resolves.toEqual(['succeeded', 'succeeded', 'succeeded']);

    expect(perKey).not.toHaveBeenCalled();
    expect(together.mock.calls).toEqual([
      ['d-a', ['d-a', 'd-b', 'd-c'], START, START + h.config.orchestrator.idempotencyTtlMs],
    ]);
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
    });
    await expect(h.stores.idempotency.getIdempotency('k-b', START)).resolves.toEqual({
      status: 'succeeded',
      dispatchId: 'd-b',
      at: START,
      expiresAt: START + ttl,
    });
    expect(h.queues.depth('main')).toBe(0);
  });

  it('gives back the reservations of the jobs that started too late in one write, and calls the others at their slots', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const lateBy = (job: JobEvent, ms: number): JobEvent => ({
      ...job,
      slotAt: START + ms,
      callBy: START + ms,
      reservation: { ...job.reservation, at: START + ms },
    });
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
    const late = (job: JobEvent): JobEvent => ({
      ...job,
      slotAt: START - 20,
      callBy: START - 20,
      reservation: { ...job.reservation, at: START - 20 },
    });
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
    const late = (job: JobEvent): JobEvent => ({
      ...job,
      slotAt: START - 20,
      callBy: START - 20,
      reservation: { ...job.reservation, at: START - 20 },
    });
    jest.spyOn(h.queues, 'sendBatch').mockResolvedValueOnce([{ index: 0, reason: 'InternalError' }]);

    await expect(processBatch({ ...event, jobs: [late(event.jobs[0]!), event.jobs[1]!] }, h.deps)).rejects.toThrow(
      `the batch of 2 jobs failed in part: returning ${event.jobs[0]!.messageId}: InternalError`,
    );

    // b succeeded and was deleted; a is still in flight in the main queue, to reappear after its visibility.
    expect(h.queues.depth('main')).toBe(1);
    expect(h.queues.depth('requeue')).toBe(0);
  });

  it('holds back the jobs whose slots come after the circuit opened, once the reading it was sent with is circuitPollMs old', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const at = (job: JobEvent, ms: number): JobEvent => ({
      ...job,
      slotAt: START + ms,
      callBy: START + ms + 10,
      reservation: { ...job.reservation, at: START + ms },
    });
    const pollMs = h.config.orchestrator.circuitPollMs;
    const outcome = processBatch(
      { ...event, jobs: [at(event.jobs[0]!, 100), at(event.jobs[1]!, pollMs + 100), at(event.jobs[2]!, pollMs + 400)] },
      h.deps,
    );
    // Another worker's reports open the circuit between b's check and c's.
    await h.clock.advance(pollMs + 150);
    await openCircuit(h.stores.circuit, h.config, h.clock.now());
    await h.clock.advance(300);

    await expect(outcome).resolves.toEqual(['succeeded', 'succeeded', 'held-back']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}', '{"id":"b"}']);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      expect.objectContaining({ id: 'd-c', actual: null }),
    ]);
    expect(h.queues.depth('requeue')).toBe(1);
    await expect(h.stores.idempotency.getIdempotency('k-c', h.clock.now())).resolves.toMatchObject({
      status: 'failed',
      dispatchId: 'd-c',
    });
  });

  it('holds back the jobs whose slots come after an operator paused the lane, as after the circuit opened', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    const at = (job: JobEvent, ms: number): JobEvent => ({
      ...job,
      slotAt: START + ms,
      callBy: START + ms + 10,
      reservation: { ...job.reservation, at: START + ms },
    });
    const pollMs = h.config.orchestrator.circuitPollMs;
    const outcome = processBatch(
      { ...event, jobs: [at(event.jobs[0]!, 100), at(event.jobs[1]!, pollMs + 400)] },
      h.deps,
    );
    await h.clock.advance(pollMs + 150);
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'operator-paused', by: 'ops' },
      h.clock.now(),
      circuitPolicyFrom(h.config.circuit),
    );
    await h.clock.advance(300);

    await expect(outcome).resolves.toEqual(['succeeded', 'held-back']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.depth('requeue')).toBe(1);
  });

  it('calls at the slot on the last reading when the read of the circuit has not answered by then', async () => {
    const h = workerHarness();
    const [job] = (await batchOf(h, ['a'])).jobs;
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation(() => h.clock.sleep(500).then(() => undefined));
    const late = {
      ...job!,
      slotAt: START + 400,
      callBy: START + 410,
      reservation: { ...job!.reservation, at: START + 400 },
    };

    const outcome = processJob(late, h.deps);
    await h.clock.advance(1_000);

    await expect(outcome).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at - START)).toEqual([400]);
    expect(h.stores.circuit.loadCircuit).toHaveBeenCalledTimes(1);
  });

  it("ends a run of refusals on its checks' reading of the circuit, and reads the run when no check read the circuit", async () => {
    const pollMs = testConfig().orchestrator.circuitPollMs;
    // Slots after the reading the batch was sent with is circuitPollMs old: a's check reads the circuit. Slots before
    // it: no check reads, and the run is read at the end.
    for (const [slotsMs, runReads] of [
      [[pollMs + 100, pollMs + 200], 0],
      [[50, 100], 1],
    ] as const) {
      const h = workerHarness();
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'client-error', reason: 'HTTP 400' },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      const event = await batchOf(h, ['a', 'b']);
      const at = (job: JobEvent, ms: number): JobEvent => ({
        ...job,
        slotAt: START + ms,
        callBy: START + ms + 10,
        reservation: { ...job.reservation, at: START + ms },
      });
      const run = jest.spyOn(h.stores.circuit, 'refusalRun');
      const outcome = processBatch({ ...event, jobs: event.jobs.map((job, i) => at(job, slotsMs[i]!)) }, h.deps);
      await h.clock.advance(pollMs + 300);

      await expect(outcome).resolves.toEqual(['succeeded', 'succeeded']);
      expect(run).toHaveBeenCalledTimes(runReads);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ clientErrorRun: 0 });
    }
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
