import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import type { CircuitEvent } from '../../../../lib/domain/breaker/state';
import type { JobEvent } from '../../../../lib/ports/Invoker';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { CircuitReadTimes } from '../../../../lib/services/worker/circuitReadTimes';
import { processJob } from '../../../../lib/services/worker/processJob';
import { atSlot } from '../../../helpers/workerFixtures';
import {
  httpStatus,
  LANE,
  receiveJobEvent,
  sendJob,
  START,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';

const REVOKED = 'caller rejected: HTTP 401 Unauthorized';

/** Applies `event` to the harness's circuit at `at`, as another worker or the orchestrator would. */
async function applyAt(h: WorkerHarness, event: CircuitEvent, at: number): Promise<void> {
  await applyCircuitEvent(h.stores.circuit, LANE, event, at, circuitPolicyFrom(h.config.circuit));
}

/**
 * A harness whose circuit a 401 opened, its check `c1` sent at START as a job's trial, and the job events of messages
 * `ids` (dispatch ids `d-<id>`) sent as that check.
 */
async function trialOf(...ids: string[]): Promise<{ h: WorkerHarness; jobs: JobEvent[] }> {
  const h = workerHarness();
  await applyAt(h, { type: 'caller-rejected', reason: 'HTTP 401 Unauthorized' }, START - 2_000);
  await applyAt(h, { type: 'health-check-sent', checkId: 'c1' }, START);
  const jobs = [];
  for (const id of ids) {
    await sendJob(h.queues, 'main', { id });
    jobs.push({ ...(await receiveJobEvent(h, 'main', `d-${id}`)), trial: 'c1' });
  }
  return { h, jobs };
}

describe('processJob: the job of a circuit’s trial', () => {
  it('claims the check before its call, and its success closes the circuit and ends the job', async () => {
    const { h, jobs } = await trialOf('a');

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls).toHaveLength(1);
    expect(h.api.probes).toBe(0);
    const circuit = await loadCircuit(h.stores.circuit, LANE);
    expect(circuit.state).toMatchObject({ status: 'closed', closedAt: START });
    expect(circuit.transitions.map((t) => t.reason)).toEqual([REVOKED, 'trial job c1 sent', 'trial job c1 passed']);
    expect(h.queues.depth('main')).toBe(0);
  });

  it('keeps the circuit open, tried with a job, when the call is refused again; the job is kept, not dead-lettered', async () => {
    const { h, jobs } = await trialOf('a');
    h.api.answers.push(httpStatus(401));

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('kept');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', reason: REVOKED, trial: 'job', failedChecks: 1 },
    });
    expect(h.queues.depth('main-dlq')).toBe(0);
    expect(h.queues.messages('requeue').map((m) => m.body)).toEqual(['{"id":"a"}']);
  });

  it('keeps the circuit open when the call fails for another reason', async () => {
    const { h, jobs } = await trialOf('a');
    h.api.answers.push(httpStatus(503));

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('retried');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', trial: 'job' },
    });
  });

  it('dead-letters a trial job the API refuses for itself (a 4xx that is not the caller’s): the next check tries another job, and a bad job cannot hold the lane open', async () => {
    const { h, jobs } = await trialOf('a');
    h.api.answers.push(httpStatus(400));

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('dead-lettered');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', trial: 'job', failedChecks: 1 },
    });
    expect(h.queues.messages('main-dlq').map((m) => m.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.depth('requeue')).toBe(0);
  });

  it('lets one job of a check call: another sent as the same check finds it claimed, and gives its job back', async () => {
    const { h, jobs } = await trialOf('a', 'b');
    h.api.latencyMs = 100;

    const outcomes = Promise.all(jobs.map((job) => processJob(job, h.deps)));
    await h.clock.advance(100);

    await expect(outcomes).resolves.toEqual(['succeeded', 'held-back']);
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.messages('requeue').map((m) => m.body)).toEqual(['{"id":"b"}']);
  });

  it('claims the check early enough for its read and its write while the table is slow, and calls at its slot', async () => {
    const { h, jobs } = await trialOf('a');
    // Every request to the table takes 60 ms: the job's claim, and the trial's claim, a read then a write.
    const slow = <A extends unknown[], R>(f: (...args: A) => Promise<R>) =>
      jest.fn((...args: A) => h.clock.sleep(60).then(() => f(...args)));
    const { circuit, idempotency } = h.stores;
    const [load, save, claim] = [
      slow(circuit.loadCircuit.bind(circuit)),
      slow(circuit.saveCircuit.bind(circuit)),
      slow(idempotency.putIdempotencyIfAbsent.bind(idempotency)),
    ];
    jest.spyOn(circuit, 'loadCircuit').mockImplementation(load);
    jest.spyOn(circuit, 'saveCircuit').mockImplementation(save);
    jest.spyOn(idempotency, 'putIdempotencyIfAbsent').mockImplementation(claim);
    const deps = { ...h.deps, circuitReads: new CircuitReadTimes() };

    const outcome = processJob(atSlot(jobs[0]!, 500, 510), deps);
    await h.clock.advance(1_000);

    // The check's lead is twice a read's (2 × (60 + 20) ms): claimed from 340 ms, written by 460 ms. At one read's
    // lead, the claim would end at 540 ms, past callBy, and no trial would ever call.
    await expect(outcome).resolves.toBe('succeeded');
    expect(h.api.calls.map((c) => c.at - START)).toEqual([500]);
  });

  it('makes no call for a check that is no longer current', async () => {
    const { h, jobs } = await trialOf('a');
    await applyAt(h, { type: 'operator-closed', by: 'ops' }, START);

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('held-back');

    expect(h.api.calls).toHaveLength(0);
  });

  it('makes no call when its claim cannot be written', async () => {
    const { h, jobs } = await trialOf('a');
    jest.spyOn(h.stores.circuit, 'saveCircuit').mockRejectedValue(new Error('unavailable'));

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('held-back');

    expect(h.api.calls).toHaveLength(0);
  });

  it('ends the job as its call did when the check’s result cannot be written', async () => {
    const { h, jobs } = await trialOf('a');
    const save = h.stores.circuit.saveCircuit.bind(h.stores.circuit);
    jest
      .spyOn(h.stores.circuit, 'saveCircuit')
      .mockImplementationOnce(save)
      .mockRejectedValue(new Error('unavailable'));

    await expect(processJob(jobs[0]!, h.deps)).resolves.toBe('succeeded');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'half-open', checkId: 'c1', probeStartedAt: START },
    });
  });
});
