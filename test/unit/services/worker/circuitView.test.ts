import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import type { JobEvent } from '../../../../lib/ports/Invoker';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { CircuitView } from '../../../../lib/services/worker/circuitView';
import { processBatch } from '../../../../lib/services/worker/processBatch';
import { processJob } from '../../../../lib/services/worker/processJob';
import { LANE, START, openCircuit, testConfig, workerHarness } from '../../../helpers/serviceFixtures';
import { atSlot, batchOf } from '../../../helpers/workerFixtures';

describe('CircuitView', () => {
  describe('stop', () => {
    it('says no to every later check, even when a read then finds the circuit closed', async () => {
      const h = workerHarness();
      const view = new CircuitView(START, LANE, h.deps);
      await expect(view.allows(START)).resolves.toBe(true);

      view.stop();
      await h.clock.advance(h.config.orchestrator.circuitPollMs + 1);

      await expect(view.allows(h.clock.now())).resolves.toBe(false);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'closed' } });
    });
  });

  it('holds back the jobs whose slots come after the circuit opened, once the reading it was sent with is circuitPollMs old', async () => {
    const h = workerHarness();
    const event = await batchOf(h, ['a', 'b', 'c']);
    const at = (job: JobEvent, ms: number): JobEvent => atSlot(job, ms, ms + 10);
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
    const at = (job: JobEvent, ms: number): JobEvent => atSlot(job, ms, ms + 10);
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
    const late = atSlot(job!, 400, 410);

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
      const at = (job: JobEvent, ms: number): JobEvent => atSlot(job, ms, ms + 10);
      const run = jest.spyOn(h.stores.circuit, 'refusalRun');
      const outcome = processBatch({ ...event, jobs: event.jobs.map((job, i) => at(job, slotsMs[i]!)) }, h.deps);
      await h.clock.advance(pollMs + 300);

      await expect(outcome).resolves.toEqual(['succeeded', 'succeeded']);
      expect(run).toHaveBeenCalledTimes(runReads);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ clientErrorRun: 0 });
    }
  });
});
