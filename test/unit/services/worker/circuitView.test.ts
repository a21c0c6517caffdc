import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import type { CircuitEvent } from '../../../../lib/domain/breaker/state';
import type { JobEvent } from '../../../../lib/ports/Invoker';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import {
  CIRCUIT_CHECK_AHEAD_MS,
  CircuitReadTimes,
  MAX_CIRCUIT_CHECK_AHEAD_MS,
} from '../../../../lib/services/worker/circuitReadTimes';
import { CircuitView } from '../../../../lib/services/worker/circuitView';
import { processBatch } from '../../../../lib/services/worker/processBatch';
import { processJob } from '../../../../lib/services/worker/processJob';
import type { WorkerDeps } from '../../../../lib/services/worker/types';
import {
  httpStatus,
  LANE,
  START,
  openCircuit,
  receiveJobEvent,
  sendJob,
  testConfig,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';
import { atSlot, batchOf } from '../../../helpers/workerFixtures';

/** Applies `event` to the harness's circuit now, as another worker or an operator would. */
async function applyNow(h: WorkerHarness, event: CircuitEvent): Promise<void> {
  await applyCircuitEvent(h.stores.circuit, LANE, event, h.clock.now(), circuitPolicyFrom(h.config.circuit));
}

/** `job` at a slot `ms` after START, to be called by 10 ms after it. */
const at = (job: JobEvent, ms: number): JobEvent => atSlot(job, ms, ms + 10);

describe('CircuitView', () => {
  describe('stop', () => {
    it('says no to every later check, even when a read then finds the circuit closed', async () => {
      const h = workerHarness();
      const view = new CircuitView(LANE, h.deps);
      await expect(view.allows({ slotAt: START })).resolves.toBe(true);

      view.stop();
      await h.clock.advance(1_000);

      await expect(view.allows({ slotAt: h.clock.now() })).resolves.toBe(false);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'closed' } });
    });
  });

  describe('a 429 another worker answered', () => {
    it('holds back a job dispatched before the pause, whatever its lead: no call leaves once the pause is written', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const first = at(await receiveJobEvent(h, 'main', 'd-a'), 0);
      // Dispatched with the first, its slot well within circuitPollMs of the send.
      const second = at(await receiveJobEvent(h, 'main', 'd-b'), 60);
      h.api.answers.push(httpStatus(429, { 'retry-after': '2' }));

      const outcomes = Promise.all([processJob(first, h.deps), processJob(second, h.deps)]);
      await h.clock.advance(100);

      await expect(outcomes).resolves.toEqual(['retried', 'held-back']);
      expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
      expect(h.queues.messages('requeue').map((m) => m.body)).toContain('{"id":"b"}');
    });

    it('lets a job call whose slot comes once the pause is over', async () => {
      const h = workerHarness();
      await applyNow(h, { type: 'rate-limited', retryAt: START + 100 });
      await sendJob(h.queues, 'main', { id: 'a' });
      const job = at(await receiveJobEvent(h, 'main', 'd-a'), 100);

      const outcome = processJob(job, h.deps);
      await h.clock.advance(200);

      await expect(outcome).resolves.toBe('succeeded');
      expect(h.api.calls.map((c) => c.at - START)).toEqual([100]);
    });
  });

  it('holds back the jobs of a batch whose slots come after the circuit opened, however soon after the send', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const outcome = processBatch(
      { ...event, jobs: [at(event.jobs[0]!, 20), at(event.jobs[1]!, 100), at(event.jobs[2]!, 150)] },
      h.deps,
    );
    // Another worker's reports open the circuit after a's call, 55 ms before b's slot.
    await h.clock.advance(45);
    await openCircuit(h.stores.circuit, h.config, h.clock.now());
    await h.clock.advance(100);

    await expect(outcome).resolves.toEqual(['succeeded', 'held-back', 'held-back']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      expect.objectContaining({ id: 'd-b', actual: null }),
      expect.objectContaining({ id: 'd-c', actual: null }),
    ]);
    await expect(h.stores.idempotency.getIdempotency('k-c', h.clock.now())).resolves.toMatchObject({
      status: 'failed',
      dispatchId: 'd-c',
    });
  });

  it('holds back the jobs whose slots come after an operator paused the lane, as after the circuit opened', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b']);
    const outcome = processBatch({ ...event, jobs: [at(event.jobs[0]!, 100), at(event.jobs[1]!, 400)] }, h.deps);
    await h.clock.advance(150);
    await applyNow(h, { type: 'operator-paused', by: 'ops' });
    await h.clock.advance(300);

    await expect(outcome).resolves.toEqual(['succeeded', 'held-back']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.depth('requeue')).toBe(1);
  });

  it('reads the circuit once a call, strongly consistent, shared only by calls whose slots are as close', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c', 'd']);
    // b's check comes with a's, when the worker starts: its slot is no later than 50 ms after a's read.
    const slots = [20, CIRCUIT_CHECK_AHEAD_MS, 300, 500];
    const load = jest.spyOn(h.stores.circuit, 'loadCircuit');
    const outcome = processBatch({ ...event, jobs: event.jobs.map((job, i) => at(job, slots[i]!)) }, h.deps);
    await h.clock.advance(600);

    await expect(outcome).resolves.toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    // a's read serves b too; c and d read each their own, 50 ms before their slots.
    expect(load.mock.calls.length).toBe(3);
  });

  it('waits for a read that answers after the slot, until callBy, and calls on its answer', async () => {
    const h = workerHarness();
    const [job] = (await batchOf(h, ['a'])).jobs;
    const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation((lane) => h.clock.sleep(55).then(() => load(lane)));

    const outcome = processJob(at(job!, 100), h.deps);
    await h.clock.advance(200);

    await expect(outcome).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at - START)).toEqual([105]);
  });

  it('gives its job back without a call, ready too late, when the read of the circuit answers after callBy: it says how late', async () => {
    const h = workerHarness();
    const [job] = (await batchOf(h, ['a'])).jobs;
    const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation((lane) => h.clock.sleep(500).then(() => load(lane)));

    const outcome = processJob(at(job!, 400), h.deps);
    await h.clock.advance(1_000);

    // The orchestrator's reading at dispatch may be seconds old: no call on it.
    await expect(outcome).resolves.toBe('too-late');
    expect(h.api.calls).toEqual([]);
    expect(h.stores.circuit.loadCircuit).toHaveBeenCalledTimes(1);
    expect(h.queues.messages('requeue').map((m) => m.body)).toEqual(['{"id":"a"}']);
    // Read 50 ms before the slot, answered 500 ms later: ready 850 ms after the event was sent, so the lead grows.
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([
      expect.objectContaining({ id: job!.dispatchId, actual: null, startDelayMs: 850 }),
    ]);
  });

  describe('how early it reads', () => {
    /** The harness with one container's read times, and its circuit reads taking `readMs`, each noted as sent. */
    const slowReads = (h: WorkerHarness, readMs: number): { deps: WorkerDeps; sentAt: number[] } => {
      const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
      const sentAt: number[] = [];
      jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation((lane) => {
        sentAt.push(h.clock.now() - START);
        return h.clock.sleep(readMs).then(() => load(lane));
      });
      return { deps: { ...h.deps, circuitReads: new CircuitReadTimes() }, sentAt };
    };

    it('reads earlier once a read was slow: the container’s next job calls, where a fixed 50 ms never would', async () => {
      const h = workerHarness();
      const { deps, sentAt } = slowReads(h, 80);
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const a = at(await receiveJobEvent(h, 'main', 'd-a'), 100);
      const b = at(await receiveJobEvent(h, 'main', 'd-b'), 1_000);

      const first = processJob(a, deps);
      await h.clock.advance(300);
      const second = processJob(b, deps);
      await h.clock.advance(1_000);

      // a's read goes 50 ms ahead and answers 30 ms after its slot; b's goes 100 ms ahead (80 + 20) and answers in time.
      await expect(Promise.all([first, second])).resolves.toEqual(['too-late', 'succeeded']);
      expect(sentAt).toEqual([50, 900]);
      expect(h.api.calls.map((c) => c.at - START)).toEqual([1_000]);
    });

    it('reads as early as the job’s claim took, on a container that has read nothing yet', async () => {
      const h = workerHarness();
      const { deps, sentAt } = slowReads(h, 70);
      const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
      jest
        .spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent')
        .mockImplementation((...args) => h.clock.sleep(70).then(() => claim(...args)));
      await sendJob(h.queues, 'main', { id: 'a' });
      const job = at(await receiveJobEvent(h, 'main', 'd-a'), 500);

      const outcome = processJob(job, deps);
      await h.clock.advance(1_000);

      await expect(outcome).resolves.toBe('succeeded');
      expect(sentAt).toEqual([410]);
    });

    it('reads at most a second ahead, however slow the reads were', () => {
      const times = new CircuitReadTimes();
      expect(times.aheadMs()).toBe(CIRCUIT_CHECK_AHEAD_MS);
      times.record(10);
      expect(times.aheadMs()).toBe(CIRCUIT_CHECK_AHEAD_MS);
      times.record(5_000);
      expect(times.aheadMs()).toBe(MAX_CIRCUIT_CHECK_AHEAD_MS);
    });

    it('goes by the slowest of the last 8 reads: one slow read stops counting 8 reads later', () => {
      const times = new CircuitReadTimes();
      times.record(200);
      for (let i = 0; i < 7; i++) times.record(10);
      expect(times.aheadMs()).toBe(220);
      times.record(10);
      expect(times.aheadMs()).toBe(CIRCUIT_CHECK_AHEAD_MS);
    });
  });

  it('gives its job back without a call when the read fails: no call on a circuit it could not read', async () => {
    const h = workerHarness();
    const [job] = (await batchOf(h, ['a'])).jobs;
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockRejectedValue(new Error('throttled'));

    const outcome = processJob(at(job!, 100), h.deps);
    await h.clock.advance(200);

    await expect(outcome).resolves.toBe('held-back');
    expect(h.api.calls).toEqual([]);
  });

  it('ends a run of refusals on the reading before the calls, however long they take, with no read of the run', async () => {
    const h = workerHarness(testConfig());
    await applyNow(h, { type: 'client-error', reason: 'HTTP 400' });
    const event = await batchOf(h, ['a', 'b']);
    // Calls as long as an LLM's answers.
    h.api.latencyMs = 5_000;
    const run = jest.spyOn(h.stores.circuit, 'refusalRun');
    const outcome = processBatch({ ...event, jobs: [at(event.jobs[0]!, 100), at(event.jobs[1]!, 200)] }, h.deps);
    await h.clock.advance(5_300);

    await expect(outcome).resolves.toEqual(['succeeded', 'succeeded']);
    expect(run).not.toHaveBeenCalled();
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ clientErrorRun: 0 });
  });
});
