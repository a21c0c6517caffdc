import { loadCircuit } from '../../../../lib/services/circuitUpdates';
import { processBatch } from '../../../../lib/services/worker/processBatch';
import { processJob } from '../../../../lib/services/worker/processJob';
import type { WorkerDeps, WorkerReport } from '../../../../lib/services/worker/types';
import { SlowKeyApi } from '../../../../tools/faults/conditions/slowKeyWorld';
import {
  LANE,
  START,
  numberAttr,
  receiveJobEvent,
  sendJob,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';
import { atSlot, batchOf } from '../../../helpers/workerFixtures';

/** `h`'s dependencies with an API caller whose key takes `keyReadMs` to read (and fails with `failure`), and its reports. */
function keyed(h: WorkerHarness, keyReadMs: number, failure?: string): { deps: WorkerDeps; reports: WorkerReport[] } {
  const reports: WorkerReport[] = [];
  const api = new SlowKeyApi(h.api, h.clock, keyReadMs, failure);
  return { deps: { ...h.deps, api, onEvent: (report) => reports.push(report) }, reports };
}

/** The attempt each message of the requeue queue carries. */
const requeuedAttempts = (h: WorkerHarness) => h.queues.messages('requeue').map((m) => m.attributes.attempt);

describe('processJob reading its key', () => {
  it('reads it during the lead, before the on-time check: a slow read that ends in time costs nothing', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = atSlot(await receiveJobEvent(h, 'main', 'd-1'), 250, 270);
    const { deps } = keyed(h, 200);
    const prepare = jest.spyOn(deps.api, 'prepare');

    const done = processJob(event, deps);
    await h.clock.advance(500);

    await expect(done).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at)).toEqual([START + 250]);
    expect(prepare.mock.calls).toEqual([['call']]);
  });

  it('does not call when its key is in hand only after callBy: gives its reservation back, saying how late it was ready', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = atSlot(await receiveJobEvent(h, 'main', 'd-1'), 100, 120);
    const { deps } = keyed(h, 300);

    const done = processJob(event, deps);
    await h.clock.advance(400);

    await expect(done).resolves.toBe('too-late');
    expect(h.api.calls).toEqual([]);
    // Ready 300 ms after its event was sent (at START): the orchestrator's lead grows to cover such reads.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: event.reservation, actual: null, id: 'd-1', startDelayMs: 300 },
    ]);
    expect(requeuedAttempts(h)).toEqual([numberAttr(1)]);
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'failed',
      dispatchId: 'd-1',
    });
  });

  it('gives the job back when its key cannot be read: no call, no attempt spent, nothing told to the circuit', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { attempt: 2 });
    const event = atSlot(await receiveJobEvent(h, 'main', 'd-1'), 100, 120);
    const { deps, reports } = keyed(h, 30, 'no authorization: ThrottlingException');

    const done = processJob(event, deps);
    await h.clock.advance(200);

    await expect(done).resolves.toBe('not-ready');
    expect(h.api.calls).toEqual([]);
    expect(reports).toEqual([
      {
        type: 'caller-not-ready',
        lane: LANE,
        at: START + 30,
        reason: 'no authorization: ThrottlingException',
        messageId: event.messageId,
        dispatchId: 'd-1',
        idempotencyKey: 'm-1',
      },
    ]);
    // Nothing reached the API: the whole reservation flows back, and the worker was not late.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      { reservation: event.reservation, actual: null, id: 'd-1' },
    ]);
    expect(requeuedAttempts(h)).toEqual([numberAttr(2)]);
    const circuit = await loadCircuit(h.stores.circuit, LANE);
    expect(circuit.state).toMatchObject({ status: 'closed', failures: [] });
    expect(circuit.version).toBe(0);
  });

  it("leaves a batch's jobs whose key cannot be read to their batch: given back and returned by their batch", async () => {
    const h = workerHarness();
    const batch = await batchOf(h, ['a', 'b']);
    const { deps } = keyed(h, 30, 'no authorization: AccessDeniedException');

    const done = processBatch(batch, deps);
    await h.clock.advance(200);

    await expect(done).resolves.toEqual(['not-ready', 'not-ready']);
    expect(h.api.calls).toEqual([]);
    expect((await h.stores.ledger.pendingSettlements(LANE)).map((s) => [s.id, s.actual])).toEqual([
      ['d-a', null],
      ['d-b', null],
    ]);
    expect(requeuedAttempts(h)).toEqual([numberAttr(1), numberAttr(1)]);
    expect(h.queues.depth('main')).toBe(0);
  });
});
