import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueues } from '../../../lib/adapters/sqs/SqsQueues';
import { ATTRIBUTES, type MessageAttribute, type QueueName, type SourceQueue } from '../../../lib/ports/QueueReceiver';
import { deadLetter } from '../../../lib/services/queueOutcomes';
import { createLaneQueues } from '../../../tools/local/laneQueues';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryIdempotencyStore } from '../../../tools/memory/MemoryStores';
import { peekDeadLetters } from '../../../tools/ops/deadLetters';
import { redrive, type RedriveDeps } from '../../../tools/ops/redrive';
import { testSqsClient, uniqueName } from '../../helpers/awsClients';

const TTL_MS = 86_400_000;

describe('redrive', () => {
  let sqs: SQSClient;
  let queueUrls: Record<QueueName, string>;
  let queues: SqsQueues;
  let clock: FakeClock;
  let idempotency: MemoryIdempotencyStore;
  let deps: RedriveDeps;

  beforeEach(async () => {
    sqs = testSqsClient();
    queueUrls = await createLaneQueues(sqs, uniqueName('ops'));
    queues = new SqsQueues({ client: sqs, queueUrls });
    clock = new FakeClock(Date.UTC(2026, 10, 26, 9));
    idempotency = new MemoryIdempotencyStore();
    deps = { sqs, queueUrls, queues, idempotency, clock };
  });

  afterEach(() => sqs.destroy());

  /** Sends a job to `queue`, receives it and dead-letters it as a worker does, at `attempt`, with its key's record `dead-lettered`. */
  async function deadLettered(
    queue: SourceQueue,
    body: string,
    attributes: Record<string, MessageAttribute>,
    attempt: number,
    groupId?: string,
  ): Promise<void> {
    await queues.send(queue, { body, attributes, ...(groupId === undefined ? {} : { groupId }) });
    const [message] = await queues.receive(queue, { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
    if (message === undefined) throw new Error(`the job sent to ${queue} was not received`);
    const key = attributes[ATTRIBUTES.idempotencyKey]?.value;
    if (key !== undefined)
      await idempotency.putIdempotency(key, {
        status: 'dead-lettered',
        dispatchId: 'dispatch-1',
        at: clock.now(),
        expiresAt: clock.now() + TTL_MS,
      });
    await deadLetter(queues, { ...message, queue }, 'HTTP 400 Bad Request', attempt);
  }

  const receiveOne = async (queue: QueueName) =>
    (await queues.receive(queue, { max: 10, visibilityMs: 30_000, waitMs: 1_000 }))[0];

  it('sends a dead letter back to its source queue without its attempt and dead-letter attributes, then deletes it', async () => {
    const key = { dataType: 'String', value: 'order-42' };
    await deadLettered(
      'requeue',
      '{"id":"order-42"}',
      {
        [ATTRIBUTES.cost]: { dataType: 'Number', value: '3' },
        [ATTRIBUTES.idempotencyKey]: key,
        [ATTRIBUTES.attempt]: { dataType: 'Number', value: '5' },
      },
      5,
    );

    const results = await redrive(deps, { max: 10 });

    expect(results).toEqual([
      expect.objectContaining({
        from: 'requeue-dlq',
        to: 'requeue',
        idempotencyKey: 'order-42',
        keyWas: 'dead-lettered',
        outcome: 'redriven',
      }),
    ]);
    const back = await receiveOne('requeue');
    expect(back?.body).toBe('{"id":"order-42"}');
    expect(back?.attributes).toEqual({
      [ATTRIBUTES.cost]: { dataType: 'Number', value: '3' },
      [ATTRIBUTES.idempotencyKey]: key,
    });
    expect(await peekDeadLetters(deps, { max: 10 })).toEqual([]);
  });

  it("reopens the job's dead-lettered key, so that the redriven job's dispatch may claim it and call", async () => {
    await deadLettered('main', '{"id":"a"}', { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'a' } }, 1);
    const claim = {
      status: 'in-progress',
      dispatchId: 'dispatch-after-redrive',
      expiresAt: clock.now() + TTL_MS,
    } as const;
    expect(await idempotency.putIdempotencyIfAbsent('a', claim, clock.now())).toMatchObject({
      status: 'dead-lettered',
    });

    await redrive(deps, { max: 10 });

    expect(await idempotency.putIdempotencyIfAbsent('a', claim, clock.now())).toBeNull();
  });

  it('keeps a late delivery of the dispatch that dead-lettered the job out of the reopened key', async () => {
    await deadLettered(
      'main',
      '{"id":"late"}',
      { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'late' } },
      1,
    );

    await redrive(deps, { max: 10 });

    const late = { status: 'in-progress', dispatchId: 'dispatch-1', expiresAt: clock.now() + TTL_MS } as const;
    expect(await idempotency.putIdempotencyIfAbsent('late', late, clock.now())).toMatchObject({
      status: 'failed',
      dispatchId: 'dispatch-1',
    });
  });

  it('reports a key without a record as none, and writes none', async () => {
    await queues.send('main-dlq', {
      body: '{"id":"n"}',
      attributes: { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'n' } },
    });

    const [result] = await redrive(deps, { max: 10 });

    expect(result).toMatchObject({ idempotencyKey: 'n', keyWas: 'none', outcome: 'redriven' });
    expect(await idempotency.getIdempotency('n', clock.now())).toBeUndefined();
  });

  it('leaves the key of a job that had succeeded as it is: the service deletes the redriven copy without calling', async () => {
    await queues.send('main', {
      body: '{"id":"done"}',
      attributes: { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'done' } },
    });
    const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
    await idempotency.putIdempotency('done', {
      status: 'succeeded',
      dispatchId: 'd1',
      at: clock.now(),
      expiresAt: clock.now() + TTL_MS,
    });
    // As SQS moves a message whose worker succeeded but could not delete it: the same message, no reason.
    await queues.send('main-dlq', { body: message?.body ?? '', attributes: message?.attributes ?? {} });

    const [result] = await redrive(deps, { max: 10 });

    expect(result).toMatchObject({ keyWas: 'succeeded', outcome: 'redriven' });
    expect(await idempotency.getIdempotency('done', clock.now())).toMatchObject({
      status: 'succeeded',
      dispatchId: 'd1',
    });
  });

  it('sends a FIFO dead letter back to the FIFO queue in its group', async () => {
    await deadLettered('fifo', '{"id":"f1"}', {}, 2, 'customer-9');

    const [result] = await redrive(deps, { max: 10, queues: ['fifo-dlq'] });

    expect(result).toMatchObject({ from: 'fifo-dlq', to: 'fifo', outcome: 'redriven' });
    expect(await receiveOne('fifo')).toMatchObject({ body: '{"id":"f1"}', groupId: 'customer-9', receiveCount: 1 });
  });

  it('keeps a dead letter whose send failed, visible again, and deletes nothing', async () => {
    await deadLettered('main', '{"id":"kept"}', {}, 1);
    const failing: RedriveDeps = {
      ...deps,
      queues: {
        ...queues,
        send: () => Promise.reject(new Error('SQS is down')),
        delete: (q, h) => queues.delete(q, h),
        changeVisibility: (q, h, ms) => queues.changeVisibility(q, h, ms),
      },
    };

    const [result] = await redrive(failing, { max: 10 });

    expect(result).toMatchObject({ outcome: 'failed', error: 'Error: SQS is down' });
    expect(await receiveOne('main-dlq')).toMatchObject({ body: '{"id":"kept"}' });
  });

  it('redrives only the ids asked for, at most max, and leaves the others visible', async () => {
    for (const id of ['a', 'b', 'c']) await deadLettered('main', `{"id":"${id}"}`, {}, 1);
    const letters = await peekDeadLetters(deps, { max: 10 });
    const idOf = (body: string) => letters.find((l) => l.body === body)?.messageId ?? '';

    const results = await redrive(deps, { max: 10, ids: [idOf('{"id":"b"}')] });
    const capped = await redrive(deps, { max: 1 });

    expect(results.map((r) => r.messageId)).toEqual([idOf('{"id":"b"}')]);
    expect(capped).toHaveLength(1);
    const left = await peekDeadLetters(deps, { max: 10 });
    expect(left).toHaveLength(1);
  });
});

describe('peekDeadLetters', () => {
  it('shows the dead letters and leaves each in its queue, visible, one receive more', async () => {
    const sqs = testSqsClient();
    try {
      const queueUrls = await createLaneQueues(sqs, uniqueName('ops'));
      const queues = new SqsQueues({ client: sqs, queueUrls });
      await queues.send('main', { body: '{"id":"p"}' });
      const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
      if (message === undefined) throw new Error('not received');
      await deadLetter(queues, { ...message, queue: 'main' }, 'HTTP 404 Not Found', 1);

      const first = await peekDeadLetters({ sqs, queueUrls, queues }, { max: 10 });
      const second = await peekDeadLetters({ sqs, queueUrls, queues }, { max: 10 });

      expect(first).toEqual([
        expect.objectContaining({
          dlq: 'main-dlq',
          source: 'main',
          reason: 'HTTP 404 Not Found',
          attempt: 1,
          receiveCount: 1,
        }),
      ]);
      expect(second).toEqual([expect.objectContaining({ messageId: first[0]?.messageId, receiveCount: 2 })]);
    } finally {
      sqs.destroy();
    }
  });

  it('receives no more letters than it may look at (`ops job --max-letters`), and leaves the others untouched', async () => {
    const sqs = testSqsClient();
    try {
      const queueUrls = await createLaneQueues(sqs, uniqueName('ops'));
      const queues = new SqsQueues({ client: sqs, queueUrls });
      for (let i = 0; i < 5; i++) {
        await queues.send('main', { body: `{"id":"p${i}"}` });
        const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
        if (message === undefined) throw new Error('not received');
        await deadLetter(queues, { ...message, queue: 'main' }, 'HTTP 404 Not Found', 1);
      }

      const looked = await peekDeadLetters({ sqs, queueUrls, queues }, { max: 3, until: () => false });
      const all = await peekDeadLetters({ sqs, queueUrls, queues }, { max: 10 });

      expect(looked).toHaveLength(3);
      // The three looked at were received once before; the other two only now.
      const counts = all.map((letter) => [looked.some((l) => l.messageId === letter.messageId), letter.receiveCount]);
      expect(counts.sort()).toEqual([
        [false, 1],
        [false, 1],
        [true, 2],
        [true, 2],
        [true, 2],
      ]);
    } finally {
      sqs.destroy();
    }
  });
});
