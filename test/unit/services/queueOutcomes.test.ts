import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../tools/memory/MemoryQueues';
import type { SourceQueue } from '../../../lib/ports/QueueReceiver';
import { attributeText, deadLetter, MAX_API_ERROR_BYTES, retryLater } from '../../../lib/services/queueOutcomes';
import { awkwardBody } from '../../helpers/serviceFixtures';

/** Queues holding one received message with `body` in `queue`, and that message as a worker would refer to it. */
async function receivedOne(queue: SourceQueue, body: string) {
  const queues = new MemoryQueues({ clock: new FakeClock(0) });
  await queues.send(queue, { body, ...(queue === 'fifo' ? { groupId: 'g-1' } : {}) });
  const [message] = await queues.receive(queue, { max: 1, visibilityMs: 30_000, waitMs: 0 });
  if (message === undefined) throw new Error('no message received');
  return { queues, message: { ...message, queue } };
}

/** A body that a JSON round trip would change: the copies must carry it as it came. */
const BODY = awkwardBody('a');

describe('deadLetter', () => {
  it('parks a standard message that carries a group id (SQS fair queues) without a FIFO deduplication id', async () => {
    const queues = new MemoryQueues({ clock: new FakeClock(0) });
    await queues.send('main', { body: '{"id":"a"}', groupId: 'tenant-1' });
    const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 0 });
    if (message === undefined) throw new Error('no message received');
    await deadLetter(queues, { ...message, queue: 'main', groupId: 'tenant-1' }, 'permanent: 400', 1);
    expect(queues.messages('main-dlq').map((m) => m.body)).toEqual(['{"id":"a"}']);
    expect(queues.depth('main')).toBe(0);
  });

  it.each(['main', 'requeue', 'fifo'] as const)('copies the body of a %s message byte for byte', async (queue) => {
    const { queues, message } = await receivedOne(queue, BODY);

    await deadLetter(queues, message, 'permanent: 400', 1);

    expect(queues.messages(`${queue}-dlq`).map((m) => m.body)).toEqual([BODY]);
  });

  it("carries the original message id, and the dispatch id and the API's error when given, beside reason, attempt and source queue", async () => {
    const { queues, message } = await receivedOne('main', '{}');
    await deadLetter(queues, message, 'permanent: HTTP 422', 2, {
      dispatchId: 'd-7',
      apiError: '{"error":"no such user"}',
    });
    expect(queues.messages('main-dlq')[0]?.attributes).toEqual({
      reason: { dataType: 'String', value: 'permanent: HTTP 422' },
      attempt: { dataType: 'Number', value: '2' },
      sourceQueue: { dataType: 'String', value: 'main' },
      originalMessageId: { dataType: 'String', value: message.messageId },
      dispatchId: { dataType: 'String', value: 'd-7' },
      apiError: { dataType: 'String', value: '{"error":"no such user"}' },
    });
  });

  it('drops the dispatch id and API error an earlier dead-lettering left on a redriven message, and writes no empty error', async () => {
    const { queues, message } = await receivedOne('main', '{}');
    const redriven = {
      ...message,
      attributes: {
        dispatchId: { dataType: 'String', value: 'd-old' },
        apiError: { dataType: 'String', value: 'old' },
        cost: { dataType: 'Number', value: '3' },
      },
    };
    await deadLetter(queues, redriven, 'malformed: body is not JSON', 1, { apiError: '' });
    const attributes = queues.messages('main-dlq')[0]?.attributes ?? {};
    expect(Object.keys(attributes).sort()).toEqual(['attempt', 'cost', 'originalMessageId', 'reason', 'sourceQueue']);
  });

  it(`cuts the API's error to ${MAX_API_ERROR_BYTES} bytes`, async () => {
    const { queues, message } = await receivedOne('main', '{}');
    await deadLetter(queues, message, 'permanent: HTTP 400', 1, { apiError: 'x'.repeat(5_000) });
    const value = queues.messages('main-dlq')[0]?.attributes.apiError?.value ?? '';
    expect(Buffer.byteLength(value)).toBe(MAX_API_ERROR_BYTES);
    expect(value.endsWith('…')).toBe(true);
  });
});

describe('attributeText', () => {
  it('is the text as it is when SQS takes it and it fits', () => {
    expect(attributeText('{"error":"é 😀"}\n\t', 100)).toBe('{"error":"é 😀"}\n\t');
  });

  it('escapes the characters SQS refuses in an attribute: control characters, lone surrogates, U+FFFE and U+FFFF', () => {
    expect(attributeText('a\u0000b\u001fc\ud800d\uffff', 100)).toBe('a\\u0000b\\u001fc\\ud800d\\uffff');
  });

  it('cuts on a whole character, never inside a multi-byte one, and marks the cut', () => {
    // '😀' is 4 bytes and '…' 3: 10 bytes hold one emoji and the mark, not a broken second emoji.
    expect(attributeText('😀😀😀', 10)).toBe('😀…');
    expect(attributeText('😀😀😀', 11)).toBe('😀😀…');
  });
});

describe('retryLater', () => {
  it('requeues a dead letter moved back as it was as a retry of its job: attempt + 1, without the dead-letter attributes', async () => {
    const { queues, message } = await receivedOne('main', BODY);
    const attributes = {
      idempotencyKey: { dataType: 'String', value: 'order-42' },
      cost: { dataType: 'Number', value: '2' },
      reason: { dataType: 'String', value: 'transient: HTTP 503' },
      attempt: { dataType: 'Number', value: '3' },
      sourceQueue: { dataType: 'String', value: 'main' },
      originalMessageId: { dataType: 'String', value: 'm-0' },
      dispatchId: { dataType: 'String', value: 'd-1' },
      apiError: { dataType: 'String', value: 'busy' },
    };

    await retryLater(queues, { ...message, attributes }, 'order-42', 1, 1_000);

    expect(queues.messages('requeue').map((m) => m.attributes)).toEqual([
      {
        idempotencyKey: { dataType: 'String', value: 'order-42' },
        cost: { dataType: 'Number', value: '2' },
        attempt: { dataType: 'Number', value: '2' },
      },
    ]);
  });

  it("carries the job's key on the copy, which gets a new message id: every attempt of a job shares one key", async () => {
    const { queues, message } = await receivedOne('main', BODY);

    await retryLater(queues, message, message.messageId, 1, 1_000);

    const [copy] = queues.messages('requeue');
    expect(copy?.messageId).not.toBe(message.messageId);
    expect(copy?.attributes.idempotencyKey).toEqual({ dataType: 'String', value: message.messageId });
  });

  it.each(['main', 'requeue'] as const)(
    'copies the body of a %s message to the requeue queue byte for byte',
    async (queue) => {
      const { queues, message } = await receivedOne(queue, BODY);

      await retryLater(queues, message, 'k-1', 1, 1_000);

      expect(queues.messages('requeue').map((m) => m.body)).toEqual([BODY]);
    },
  );
});
