import { QuotaLedger, type Settlement } from '../../../../lib/domain/quota/ledger';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { StateUnavailableError } from '../../../../lib/errors';
import { processJob } from '../../../../lib/services/worker/processJob';
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
import { COST_CONFIG, IDEMPOTENCY_TTL_MS } from '../../../helpers/workerFixtures';

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

describe('owedBy', () => {
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

  it('writes the success record once, without the settlement, when the settlement is recorded', async () => {
    const h = workerHarness(COST_CONFIG);
    const records = jest.spyOn(h.stores.idempotency, 'putIdempotency');
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    expect(records.mock.calls).toEqual([
      [
        'm-1',
        {
          status: 'succeeded',
          dispatchId: 'd-1',
          at: START,
          expiresAt: START + IDEMPOTENCY_TTL_MS,
          usage: { cost: 7 },
          result: 'none',
        },
      ],
    ]);
  });
});

describe('recordSettlement', () => {
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
        owed,
        { reservation: { at: START + 30_000, costs: { cost: 3 }, windows: {} }, actual: null, id: 'd-2' },
      ]);
      const record = await h.stores.idempotency.getIdempotency('m-1', h.clock.now());
      // Written again without the settlement, it keeps what the call used.
      expect(record).toEqual({
        status: 'succeeded',
        dispatchId: 'd-1',
        at: START,
        expiresAt: START + IDEMPOTENCY_TTL_MS,
        usage: { cost: 7 },
        result: 'none',
      });
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

  describe('when its tries land and their answers are lost (a hand-back)', () => {
    /** A recorder whose appends all land, and then fail as a write whose answer was lost. */
    function lostAnswers(h: WorkerHarness) {
      return {
        async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
          await h.stores.ledger.addSettlements(lane, ...settlements);
          throw new Error('InternalServerError: the append landed, then the answer was lost');
        },
      };
    }

    it('hands the unused units back once, whatever copies are folded, in whatever runs', async () => {
      const h = workerHarness(COST_CONFIG);
      // Every copy written, as the store may hold them in turn (a copy replaces the last while it is pending).
      const writes = jest.spyOn(h.stores.ledger, 'addSettlements');
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 7 });
      h.api.answers.push(ok(3));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...h.deps, stores: { ...h.stores, ledger: lostAnswers(h) } });
      const settled = expect(outcome).rejects.toBeInstanceOf(StateUnavailableError);
      await h.clock.advance(5_000);
      await settled;
      // The message was kept: its next dispatch, in a later run, records what the success record holds.
      await h.clock.advanceTo(START + 30_000);
      await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), h.deps)).resolves.toBe('duplicate');

      const copies = writes.mock.calls.flatMap(([, ...written]) => written).filter((s) => s.id === 'd-1');
      expect(copies.length).toBeGreaterThan(2);
      // Folded each in a run of its own, as if every earlier copy had been removed before the next was read.
      const ledger = new QuotaLedger(parseTiers([{ limit: 1_000, per: 'day', unit: 'cost' }]));
      const reservation = ledger.reserve(START, { cost: 7 });
      for (const copy of copies) ledger.settle({ ...copy, reservation });
      expect(ledger.usage(START + 30_000).map((u) => u.used)).toEqual([3]);
    });
  });
});

describe('settlements of a lane that draws from pools', () => {
  it("records the call's usage in the lane and, as each pool's reservation, in each pool", async () => {
    const h = workerHarness(COST_CONFIG);
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const received = await receiveJobEvent(h, 'main', 'd-1');
    const pools = { org: { 'day:cost': '2026-01-05' } };
    const event = { ...received, reservation: { ...received.reservation, pools } };

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: { at: START, costs: { cost: 3 }, windows: {} }, actual: { cost: 7 }, id: 'd-1' },
    ]);
    await expect(h.stores.ledger.pendingSettlements('pool:org')).resolves.toEqual([
      { reservation: { at: START, costs: { cost: 3 }, windows: pools.org }, actual: { cost: 7 }, id: 'd-1' },
    ]);
  });
});
