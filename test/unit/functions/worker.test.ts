import { StateFormatError } from '../../../lib/errors';
import { asWorkerEvent, makeHandler } from '../../../functions/worker';
import { recordingTelemetry, TEST_DEPLOYMENT } from '../../helpers/recordingTelemetry';
import type { HealthCheckEvent } from '../../../lib/ports/Invoker';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import { applyCircuitEvent, loadCircuit } from '../../../lib/services/circuitUpdates';
import { SlowKeyApi } from '../../../tools/faults/conditions/slowKeyWorld';
import {
  httpStatus,
  LANE,
  ok,
  openCircuit,
  receiveJobEvent,
  sendJob,
  START,
  workerHarness,
  type WorkerHarness,
} from '../../helpers/serviceFixtures';

/** The handler on a harness's in-memory ports, with everything it logs, the contexts it was given, and its EMF lines on stdout. */
function handlerOn(h: WorkerHarness) {
  const { telemetry, ...recorded } = recordingTelemetry();
  return { handler: makeHandler(h.deps, telemetry), ...recorded };
}

afterEach(() => jest.restoreAllMocks());

const HEALTH_CHECK: HealthCheckEvent = { kind: 'health-check', lane: LANE, checkId: 'c-1', sentAt: START + 2_000 };

/** Opens the harness's circuit at START and sends check `c-1` at START + 2 s, when it is due. */
async function halfOpen(h: WorkerHarness): Promise<void> {
  await openCircuit(h.stores.circuit, h.config, START);
  await h.clock.advanceTo(START + 2_000);
  await applyCircuitEvent(
    h.stores.circuit,
    LANE,
    { type: 'health-check-sent', checkId: 'c-1' },
    h.clock.now(),
    circuitPolicyFrom(h.config.circuit),
  );
}

describe('asWorkerEvent', () => {
  it.each([
    ['an empty object', {}, 'undefined'],
    ['an unknown kind', { kind: 'x' }, '"x"'],
    ['null', null, 'undefined'],
    ['a string', 'job', 'undefined'],
    ['an array', [], 'undefined'],
  ])('refuses %s, naming kind and what it got', (_, event, got) => {
    expect(() => asWorkerEvent(event)).toThrow(
      `worker event must be an object with kind 'job', 'batch' or 'health-check'; got kind ${got}`,
    );
  });

  it.each([
    ['a parsed object', { id: 'a' }, 'object'],
    ['a number', 1, 'number'],
    ['null', null, 'null'],
    ['nothing', undefined, 'undefined'],
  ])(
    'refuses a job event whose body is %s, not the message text (an older orchestrator sent the parsed body)',
    (_, body, got) => {
      expect(() => asWorkerEvent({ kind: 'job', messageId: 'm-1', body })).toThrow(
        `worker job event must carry the message body as a string of JSON text; got ${got}`,
      );
    },
  );

  it('refuses a batch event without jobs, or with a job whose body is not the message text', () => {
    expect(() => asWorkerEvent({ kind: 'batch', jobs: [] })).toThrow(
      'worker batch event must carry a non-empty list of jobs',
    );
    expect(() => asWorkerEvent({ kind: 'batch' })).toThrow('worker batch event must carry a non-empty list of jobs');
    const jobs = [
      { kind: 'job', body: '{}' },
      { kind: 'job', body: { id: 'a' } },
    ];
    expect(() => asWorkerEvent({ kind: 'batch', jobs })).toThrow(
      "worker batch event's job 1 must carry the message body as a string of JSON text; got object",
    );
  });

  it('accepts job, batch and health-check events as they are', () => {
    const job = { kind: 'job', messageId: 'm-1', body: '{"id":"a"}' };
    const batch = { kind: 'batch', jobs: [job, job] };

    expect(asWorkerEvent(job)).toBe(job);
    expect(asWorkerEvent(batch)).toBe(batch);
    expect(asWorkerEvent(HEALTH_CHECK)).toBe(HEALTH_CHECK);
  });
});

describe('worker handler', () => {
  it('rejects an event that is not a worker event without calling the API', async () => {
    const h = workerHarness();
    const { handler } = handlerOn(h);

    await expect(handler({ kind: 'x' })).rejects.toThrow(/kind/);

    expect(h.api.calls).toEqual([]);
    expect(h.api.probes).toBe(0);
  });

  it("processes a job and returns 'succeeded' when the API answers 200, logging one line with its keys", async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const { handler, lines } = handlerOn(h);

    await expect(handler(event)).resolves.toBe('succeeded');

    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"a"}']);
    expect(h.queues.depth('main')).toBe(0);
    expect(lines).toEqual([
      {
        level: 'info',
        message: 'worker event succeeded',
        fields: {
          kind: 'job',
          outcome: 'succeeded',
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'm-1',
          attempt: 1,
        },
      },
    ]);
  });

  it('calls each job of a batch at its own slot, returns their outcomes in order, and logs each', async () => {
    const h = workerHarness();
    h.api.answer = (body) => (body.includes('"b"') ? httpStatus(503) : ok());
    await sendJob(h.queues, 'main', { id: 'a' });
    await sendJob(h.queues, 'main', { id: 'b' });
    const first = await receiveJobEvent(h, 'main', 'd-1');
    const second = await receiveJobEvent(h, 'main', 'd-2');
    const later = {
      ...second,
      slotAt: START + 50,
      callBy: START + 60,
      reservation: { ...second.reservation, at: START + 50 },
    };
    const { handler, lines } = handlerOn(h);

    const outcome = handler({ kind: 'batch', lane: LANE, jobs: [first, later], sentAt: START });
    await h.clock.advance(100);

    await expect(outcome).resolves.toEqual(['succeeded', 'retried']);
    expect(h.api.calls.map((c) => [c.body, c.at - START])).toEqual([
      ['{"id":"a"}', 0],
      ['{"id":"b"}', 50],
    ]);
    // The success's message went in a batch delete; the retried one, sent to the requeue queue, was deleted at once.
    expect(h.queues.stats).toMatchObject({ delete: 1, deleteBatch: 1 });
    expect(lines).toEqual([
      {
        level: 'info',
        message: 'worker event succeeded',
        fields: {
          kind: 'job',
          outcome: 'succeeded',
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'm-1',
          attempt: 1,
        },
      },
      {
        level: 'info',
        message: 'worker event retried',
        fields: {
          kind: 'job',
          outcome: 'retried',
          messageId: 'm-2',
          dispatchId: 'd-2',
          idempotencyKey: 'm-2',
          attempt: 1,
        },
      },
    ]);
  });

  it('reports the successes of a batch to the circuit once, which ends a run of refusals', async () => {
    const h = workerHarness();
    const policy = circuitPolicyFrom(h.config.circuit);
    for (let i = 1; i < h.config.circuit.callerRejectThreshold; i++)
      await applyCircuitEvent(h.stores.circuit, LANE, { type: 'client-error', reason: 'HTTP 422' }, START, policy);
    for (const id of ['a', 'b', 'c']) await sendJob(h.queues, 'main', { id });
    const jobs = [
      await receiveJobEvent(h, 'main', 'd-1'),
      await receiveJobEvent(h, 'main', 'd-2'),
      await receiveJobEvent(h, 'main', 'd-3'),
    ];
    const reads = jest.spyOn(h.stores.circuit, 'loadCircuit');
    const writes = jest.spyOn(h.stores.circuit, 'saveCircuit');
    const { handler } = handlerOn(h);

    await expect(handler({ kind: 'batch', lane: LANE, jobs, sentAt: START })).resolves.toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);

    // One read before the calls (their slots are one), which found the run; one write, and the read it makes.
    expect(writes).toHaveBeenCalledTimes(1);
    expect(reads).toHaveBeenCalledTimes(2);
    // The run was one refusal short of opening; after the batch's success, one more refusal does not open it.
    await applyCircuitEvent(h.stores.circuit, LANE, { type: 'client-error', reason: 'HTTP 422' }, START, policy);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'closed' } });
  });

  it('ends every job of a batch before it fails for one that could not end', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    await sendJob(h.queues, 'main', { id: 'b' });
    const first = await receiveJobEvent(h, 'main', 'd-1');
    const second = await receiveJobEvent(h, 'main', 'd-2');
    const { handler } = handlerOn(h);
    const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
    jest.spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent').mockImplementation(async (key, record, now) => {
      if (key === 'broken') throw new StateFormatError("stored idempotency record 'broken' is not an object; got 7");
      return claim(key, record, now);
    });

    const batch = { kind: 'batch', lane: LANE, jobs: [{ ...first, idempotencyKey: 'broken' }, second], sentAt: START };
    // A key record that cannot be read ends nothing: a table that is merely down gives the job back instead.
    await expect(handler(batch)).rejects.toThrow(
      "the batch of 2 jobs failed in part: m-1: stored idempotency record 'broken' is not an object; got 7",
    );
    expect(h.api.calls.map((c) => c.body)).toEqual(['{"id":"b"}']);
  });

  it('logs a retried job at info with its message id, dispatch id, idempotency key and attempt', async () => {
    const h = workerHarness();
    h.api.answers.push(httpStatus(503));
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const { handler, lines } = handlerOn(h);

    await expect(handler(event)).resolves.toBe('retried');

    expect(lines).toEqual([
      {
        level: 'info',
        message: 'worker event retried',
        fields: {
          kind: 'job',
          outcome: 'retried',
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'm-1',
          attempt: 1,
        },
      },
    ]);
  });

  it('logs a dead-lettered job as a warning with its reason and keys', async () => {
    const h = workerHarness();
    h.api.answers.push(httpStatus(400));
    await sendJob(h.queues, 'main', { id: 'a' }, { attempt: 2 });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const { handler, lines } = handlerOn(h);

    await expect(handler(event)).resolves.toBe('dead-lettered');

    const reason = expect.stringMatching(/^permanent: HTTP 400 Bad Request/);
    expect(lines).toEqual([
      {
        level: 'warn',
        message: expect.stringMatching(/^job dead-lettered: permanent: HTTP 400 Bad Request/),
        fields: {
          type: 'dead-lettered',
          lane: LANE,
          at: START,
          reason,
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'm-1',
        },
      },
    ]);
  });

  it("logs a second delivery of a succeeded job as 'duplicate' without calling the API again", async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const { handler, lines } = handlerOn(h);
    await handler(event);

    await expect(handler(event)).resolves.toBe('duplicate');

    expect(h.api.calls).toHaveLength(1);
    expect(lines.map((l) => [l.level, l.message, l.fields?.messageId])).toEqual([
      ['info', 'worker event succeeded', 'm-1'],
      ['info', 'worker event duplicate', 'm-1'],
    ]);
  });

  it('logs a job refused with 401 as kept, and the circuit it opened with the reason, both as warnings', async () => {
    const h = workerHarness();
    h.api.answers.push(httpStatus(401));
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');
    const { handler, lines } = handlerOn(h);

    await expect(handler(event)).resolves.toBe('kept');

    const reason = 'caller rejected: HTTP 401 Unauthorized';
    expect(lines).toEqual([
      {
        level: 'warn',
        message: `circuit closed -> open: ${reason}`,
        fields: { type: 'circuit-transition', lane: LANE, at: START, from: 'closed', to: 'open', reason },
      },
      {
        level: 'warn',
        message: 'worker event kept',
        fields: {
          kind: 'job',
          outcome: 'kept',
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'm-1',
          attempt: 1,
        },
      },
    ]);
  });

  it("probes the API for a health check and returns 'healthy', logging the circuit's close", async () => {
    const h = workerHarness();
    await halfOpen(h);
    const { handler, lines } = handlerOn(h);

    await expect(handler(HEALTH_CHECK)).resolves.toBe('healthy');

    expect(h.api.probes).toBe(1);
    expect(h.api.calls).toEqual([]);
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['info', 'circuit half-open -> closed: health check c-1 passed'],
    ]);
  });

  it("returns 'unhealthy' when the probe fails, logging the circuit's reopening and the check id", async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.probeAnswers.push(httpStatus(503));
    const { handler, lines } = handlerOn(h);

    await expect(handler(HEALTH_CHECK)).resolves.toBe('unhealthy');

    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'circuit half-open -> open: health check c-1 failed',
        fields: expect.objectContaining({ from: 'half-open', to: 'open' }),
      },
      {
        level: 'info',
        message: 'worker event unhealthy',
        fields: { kind: 'health-check', outcome: 'unhealthy', checkId: 'c-1' },
      },
    ]);
  });

  it("returns 'not-ready' without probing when the API key cannot be read, warning with the reason", async () => {
    const h = workerHarness();
    await halfOpen(h);
    const api = new SlowKeyApi(h.api, h.clock, 0, 'no authorization: AccessDeniedException');
    const { telemetry, lines } = recordingTelemetry();
    const handler = makeHandler({ ...h.deps, api }, telemetry);

    const done = handler(HEALTH_CHECK);
    await h.clock.advance(0);

    await expect(done).resolves.toBe('not-ready');
    expect(h.api.probes).toBe(0);
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'API caller not ready: no authorization: AccessDeniedException',
        fields: {
          type: 'caller-not-ready',
          lane: LANE,
          at: START + 2_000,
          reason: 'no authorization: AccessDeniedException',
          checkId: 'c-1',
        },
      },
      {
        level: 'info',
        message: 'worker event not-ready',
        fields: { kind: 'health-check', outcome: 'not-ready', checkId: 'c-1' },
      },
    ]);
  });

  it("returns 'not-current' without probing for a check that is no longer the circuit's, logging the check id", async () => {
    const h = workerHarness();
    const { handler, lines } = handlerOn(h);

    await expect(handler(HEALTH_CHECK)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
    expect(lines).toEqual([
      {
        level: 'info',
        message: 'worker event not-current',
        fields: { kind: 'health-check', outcome: 'not-current', checkId: 'c-1' },
      },
    ]);
  });

  describe('metrics', () => {
    it('publishes each API call by outcome and each job by outcome as EMF lines on stdout at the end of the invocation', async () => {
      const h = workerHarness();
      h.api.answer = (body) => (body.includes('"b"') ? httpStatus(503) : ok());
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const jobs = [await receiveJobEvent(h, 'main', 'd-1'), await receiveJobEvent(h, 'main', 'd-2')];
      const { handler, stdout } = handlerOn(h);

      await expect(handler({ kind: 'batch', lane: LANE, jobs, sentAt: START })).resolves.toEqual([
        'succeeded',
        'retried',
      ]);

      const emf = (dimensions: Record<string, string>, metric: string, value: number) => ({
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [
            {
              Namespace: 'QuotaOrchestrator',
              Dimensions: [Object.keys(dimensions)],
              Metrics: [{ Name: metric, Unit: 'Count' }],
            },
          ],
        },
        ...dimensions,
        [metric]: value,
      });
      expect(stdout.emf()).toEqual(
        expect.arrayContaining([
          emf({ ...TEST_DEPLOYMENT, lane: LANE, outcome: 'success' }, 'ApiCalls', 1),
          emf({ ...TEST_DEPLOYMENT, lane: LANE, outcome: 'transient' }, 'ApiCalls', 1),
          emf({ ...TEST_DEPLOYMENT, lane: LANE, outcome: 'succeeded' }, 'JobOutcomes', 1),
          emf({ ...TEST_DEPLOYMENT, lane: LANE, outcome: 'retried' }, 'JobOutcomes', 1),
        ]),
      );
      expect(stdout.emf()).toHaveLength(4);
    });

    it('counts a 429 as a rate-limited call', async () => {
      const h = workerHarness();
      h.api.answers.push(httpStatus(429, { 'retry-after': '1' }));
      await sendJob(h.queues, 'main', { id: 'a' });
      const { handler, stdout } = handlerOn(h);

      await expect(handler(await receiveJobEvent(h, 'main', 'd-1'))).resolves.toBe('retried');

      expect(stdout.metric('RateLimitedCalls')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE }, value: 1 },
      ]);
      expect(stdout.metric('ApiCalls')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, outcome: 'rate-limited' }, value: 1 },
      ]);
    });

    it('counts a dead letter by the class of its reason', async () => {
      const h = workerHarness();
      h.api.answers.push(httpStatus(400));
      await sendJob(h.queues, 'main', { id: 'a' });
      const { handler, stdout } = handlerOn(h);

      await expect(handler(await receiveJobEvent(h, 'main', 'd-1'))).resolves.toBe('dead-lettered');

      expect(stdout.metric('DeadLetters')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, reason: 'permanent' }, value: 1 },
      ]);
    });

    it('counts a worker that started after its callBy as a late start refused', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'main', { id: 'a' });
      const event = await receiveJobEvent(h, 'main', 'd-1');
      const { handler, stdout } = handlerOn(h);

      await expect(handler({ ...event, callBy: START - 1 })).resolves.toBe('too-late');

      expect(h.api.calls).toEqual([]);
      expect(stdout.metric('LateStartsRefused')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE }, value: 1 },
      ]);
    });

    it('counts the circuit transition its report wrote by the state it went to', async () => {
      const h = workerHarness();
      h.api.answers.push(httpStatus(401));
      await sendJob(h.queues, 'main', { id: 'a' });
      const { handler, stdout } = handlerOn(h);

      await handler(await receiveJobEvent(h, 'main', 'd-1'));

      expect(stdout.metric('CircuitTransitions')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, to: 'open' }, value: 1 },
      ]);
    });

    it('publishes what it recorded when the invocation fails, and adds the Lambda context to its log', async () => {
      const h = workerHarness();
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const jobs = [await receiveJobEvent(h, 'main', 'd-1'), await receiveJobEvent(h, 'main', 'd-2')];
      const claim = h.stores.idempotency.putIdempotencyIfAbsent.bind(h.stores.idempotency);
      jest.spyOn(h.stores.idempotency, 'putIdempotencyIfAbsent').mockImplementation(async (key, record, now) => {
        if (key === 'broken') throw new StateFormatError("stored idempotency record 'broken' is not an object; got 7");
        return claim(key, record, now);
      });
      const { handler, stdout, contexts } = handlerOn(h);

      await expect(
        handler(
          { kind: 'batch', lane: LANE, jobs: [{ ...jobs[0]!, idempotencyKey: 'broken' }, jobs[1]!], sentAt: START },
          { awsRequestId: 'req-1' },
        ),
      ).rejects.toThrow(/failed in part/);

      expect(stdout.metric('ApiCalls')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, outcome: 'success' }, value: 1 },
      ]);
      expect(contexts).toEqual([{ awsRequestId: 'req-1' }]);
    });
  });
});
