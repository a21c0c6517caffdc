import { loadCircuit } from '../../../../lib/services/circuitUpdates';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { processJob } from '../../../../lib/services/worker/processJob';
import type { WorkerDeps } from '../../../../lib/services/worker/types';
import {
  LANE,
  START,
  httpStatus,
  numberAttr,
  ok,
  openCircuit,
  receiveJobEvent,
  sendJob,
  testConfig,
  workerHarness,
} from '../../../helpers/serviceFixtures';
import { receiveAll } from '../../../helpers/workerFixtures';

describe('reportFailure', () => {
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

  it("pauses every lane of a pool whose rateLimitScope is pool, through the pool's item, and no other pool", async () => {
    const quotas = parseTiers([{ limit: 10, per: 'second' }]);
    const config = {
      ...testConfig(),
      pools: [
        { name: 'org', quotas, rateLimitScope: 'pool' as const },
        { name: 'spend', quotas },
      ],
    };
    const h = workerHarness(config);
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(429, { 'retry-after': '2' }));

    await processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);

    await expect(loadCircuit(h.stores.circuit, 'pool:org')).resolves.toMatchObject({ pausedUntil: START + 2_000 });
    await expect(loadCircuit(h.stores.circuit, 'pool:spend')).resolves.toMatchObject({ pausedUntil: 0, version: 0 });
  });

  it('never opens the circuit on 429s, however many', async () => {
    const h = workerHarness();
    h.api.fallback = httpStatus(429, { 'retry-after': '1' });
    for (let i = 0; i < 10; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });

    for (let i = 0; i < 10; i++) {
      await expect(processJob(await receiveJobEvent(h, 'main', `d-${i}`), h.deps)).resolves.toBe('retried');
      // Past the pause, which holds back every call until then.
      await h.clock.advance(1_100);
    }

    const circuit = await loadCircuit(h.stores.circuit, LANE);
    expect(circuit.state).toEqual({ status: 'closed', failures: [], closedAt: null, reopenStreak: 0 });
    expect(circuit.pausedUntil).toBe(START + 9 * 1_100 + 1_000);
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
    h.api.latencyMs = 100;
    for (let i = 0; i < 5; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });
    const events = [];
    for (let i = 0; i < 5; i++) events.push(await receiveJobEvent(h, 'main', `d-${i}`));

    // All five call at once, and their answers come back one after the other.
    const outcomes = Promise.all(events.map((event) => processJob(event, deps)));
    await h.clock.advance(100);

    await expect(outcomes).resolves.toEqual(['dead-lettered', 'dead-lettered', 'kept', 'kept', 'kept']);
    const reason = 'caller rejected: HTTP 404 Not Found on 3 jobs in a row';
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', reason },
      clientErrorRun: 5,
    });
    expect(opened).toEqual([
      { type: 'circuit-transition', lane: LANE, at: START + 100, from: 'closed', to: 'open', reason },
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

  it('reports a success to the circuit only when a run of refusals is open, as the read before its call found it', async () => {
    const h = workerHarness();
    h.api.answers.push(ok(), httpStatus(400), ok());
    for (const id of ['a', 'b', 'c']) await sendJob(h.queues, 'main', { id });
    const load = jest.spyOn(h.stores.circuit, 'loadCircuit');
    const save = jest.spyOn(h.stores.circuit, 'saveCircuit');
    const run = jest.spyOn(h.stores.circuit, 'refusalRun');

    await processJob(await receiveJobEvent(h, 'main', 'd-a'), h.deps);
    // The read before the call, and nothing more: it found no run.
    expect([load.mock.calls.length, save.mock.calls.length]).toEqual([1, 0]);
    await processJob(await receiveJobEvent(h, 'main', 'd-b'), h.deps);
    save.mockClear();
    await processJob(await receiveJobEvent(h, 'main', 'd-c'), h.deps);

    expect(save).toHaveBeenCalledTimes(1);
    expect(run).not.toHaveBeenCalled();
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ clientErrorRun: 0 });
  });

  it('makes no call, and reads no run, when its read before the call failed', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const run = jest.spyOn(h.stores.circuit, 'refusalRun');
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockRejectedValueOnce(new Error('throttled'));

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-a'), h.deps)).resolves.toBe('held-back');

    expect(h.api.calls).toEqual([]);
    expect(run).not.toHaveBeenCalled();
  });

  it('keeps a job refused with another 4xx while the circuit is open for any reason', async () => {
    const h = workerHarness();
    h.api.latencyMs = 100;
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(httpStatus(400));

    const outcome = processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps);
    // The circuit opens while the call is on its way.
    await h.clock.advance(50);
    await openCircuit(h.stores.circuit, h.config, h.clock.now());
    await h.clock.advance(50);

    await expect(outcome).resolves.toBe('kept');

    expect(h.queues.depth('main-dlq')).toBe(0);
    expect(h.queues.depth('requeue')).toBe(1);
  });
});
