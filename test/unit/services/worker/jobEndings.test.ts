import { loadCircuit } from '../../../../lib/services/circuitUpdates';
import { processJob } from '../../../../lib/services/worker/processJob';
import {
  LANE,
  START,
  httpStatus,
  numberAttr,
  ok,
  receiveJobEvent,
  sendJob,
  stringAttr,
  workerHarness,
} from '../../../helpers/serviceFixtures';
import { COST_CONFIG, IDEMPOTENCY_TTL_MS, receiveAll } from '../../../helpers/workerFixtures';

describe('endSucceeded', () => {
  it('deletes the message and records the idempotency key as succeeded on success', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('succeeded');

    expect(h.api.calls).toEqual([{ at: START, body: '{"id":"a"}', idempotencyKey: 'm-1' }]);
    expect(h.queues.depth('main')).toBe(0);
    // What the call used (its estimate: the answer reports none), and no result destination.
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toEqual({
      status: 'succeeded',
      dispatchId: 'd-1',
      at: START,
      expiresAt: START + IDEMPOTENCY_TTL_MS,
      usage: { cost: 1 },
      result: 'none',
    });
  });

  it('records in the success what the answer says the call used, and where its result was handed', async () => {
    const h = workerHarness(COST_CONFIG);
    const results = { destination: 'sqs arn:aws:sqs:us-east-1:123456789012:answers', deliver: async () => [] };
    await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
    h.api.answers.push(ok(7));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, { ...h.deps, results })).resolves.toBe('succeeded');

    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'succeeded',
      usage: { cost: 7 },
      result: 'sqs arn:aws:sqs:us-east-1:123456789012:answers',
    });
  });

  it('names a result handler that does not say where it hands results on', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' });
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, { ...h.deps, results: { deliver: async () => [] } })).resolves.toBe('succeeded');

    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      result: 'result handler',
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
      expiresAt: START + 300 + IDEMPOTENCY_TTL_MS,
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
});

describe('endFailed', () => {
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
      expiresAt: START + IDEMPOTENCY_TTL_MS,
    });
  });

  it('returns a standard message refused with 401 to the requeue queue with its attempt and its key, so that a second copy cannot call again', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a' }, { attempt: 2 });
    h.api.answers.push(httpStatus(401));
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('kept');

    expect(h.queues.depth('main')).toBe(0);
    expect(h.queues.messages('requeue').map((m) => m.attributes)).toEqual([
      { idempotencyKey: stringAttr('m-1'), attempt: numberAttr(2) },
    ]);
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

  it('dead-letters a message refused with 400 even when its report to the circuit cannot be written, so that the next dispatch does not call again', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'main', { id: 'a', poison: true });
    h.api.answers.push(httpStatus(400));
    h.stores.circuit.saveCircuit = async () => {
      throw new Error('DynamoDB unavailable');
    };
    const event = await receiveJobEvent(h, 'main', 'd-1');

    await expect(processJob(event, h.deps)).resolves.toBe('dead-lettered');

    expect(h.queues.messages('main-dlq').map((m) => m.body)).toEqual(['{"id":"a","poison":true}']);
    await expect(h.stores.idempotency.getIdempotency('m-1', h.clock.now())).resolves.toMatchObject({
      status: 'dead-lettered',
      dispatchId: 'd-1',
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
});
