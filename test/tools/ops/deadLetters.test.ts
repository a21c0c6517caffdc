import type { Message } from '@aws-sdk/client-sqs';
import { fitAttributes } from '../../../lib/adapters/sqs/fitAttributes';
import { ATTRIBUTES } from '../../../lib/ports/QueueReceiver';
import {
  deadLetterOf,
  deadLetterQueuesOf,
  idempotencyKeyOf,
  redriveMessageOf,
  SERVICE_WRITTEN_ATTRIBUTES,
  sourceOf,
  type DeadLetter,
} from '../../../tools/ops/deadLetters';

const SENT_AT = Date.UTC(2026, 10, 26, 9, 30);

/** A message of a DLQ as SQS returns it, with String attributes `attributes`. */
function received(attributes: Record<string, string>, extra: Partial<Message> = {}): Message {
  return {
    MessageId: 'dlq-message-1',
    ReceiptHandle: 'handle-1',
    Body: '{"id":"job-1"}',
    MessageAttributes: Object.fromEntries(
      Object.entries(attributes).map(([name, value]) => [
        name,
        { DataType: name === ATTRIBUTES.cost || name === ATTRIBUTES.attempt ? 'Number' : 'String', StringValue: value },
      ]),
    ),
    Attributes: { SentTimestamp: String(SENT_AT), ApproximateReceiveCount: '2', ...extra.Attributes },
    ...extra,
  };
}

/** A letter the service dead-lettered from `source` at its third attempt. */
function serviceLetter(attributes: Record<string, string> = {}, dlq: DeadLetter['dlq'] = 'main-dlq'): DeadLetter {
  return deadLetterOf(
    dlq,
    received({
      [ATTRIBUTES.reason]: 'HTTP 400 Bad Request: no such number',
      [ATTRIBUTES.attempt]: '3',
      [ATTRIBUTES.sourceQueue]: 'requeue',
      ...attributes,
    }),
  );
}

describe('deadLetterOf', () => {
  it('reads the reason, the attempt, the source queue from its attribute, and when it was dead-lettered', () => {
    const letter = serviceLetter();

    expect(letter).toMatchObject({
      dlq: 'main-dlq',
      source: 'requeue',
      messageId: 'dlq-message-1',
      body: '{"id":"job-1"}',
      reason: 'HTTP 400 Bad Request: no such number',
      attempt: 3,
      deadLetteredAt: SENT_AT,
      receiveCount: 2,
    });
  });

  it("reads the API's error text, the original message id and the dispatch id", () => {
    const letter = serviceLetter({
      [ATTRIBUTES.apiError]: '{"error":"invalid number"}',
      [ATTRIBUTES.originalMessageId]: 'm-0',
      [ATTRIBUTES.dispatchId]: 'd-9',
    });

    expect(letter).toMatchObject({
      apiError: '{"error":"invalid number"}',
      originalMessageId: 'm-0',
      dispatchId: 'd-9',
    });
  });

  it('takes the source from the dead-letter queue for a message SQS moved, which carries no reason or attempt', () => {
    const letter = deadLetterOf(
      'fifo-dlq',
      received({}, { Attributes: { MessageGroupId: 'g1', SentTimestamp: String(SENT_AT) } }),
    );

    expect(letter.source).toBe('fifo');
    expect(letter.groupId).toBe('g1');
    expect(letter.reason).toBeUndefined();
    expect(letter.attempt).toBeUndefined();
  });

  it('expands attributes the service packed to fit SQS', () => {
    const many = Object.fromEntries(
      Array.from({ length: 12 }, (_, i) => [`trace${i}`, { dataType: 'String', value: `v${i}` }]),
    );
    const packed = fitAttributes({ ...many, [ATTRIBUTES.reason]: { dataType: 'String', value: 'timeout' } });
    const message = received(Object.fromEntries(Object.entries(packed).map(([name, a]) => [name, a.value])));

    const letter = deadLetterOf('main-dlq', message);

    expect(Object.keys(letter.attributes)).toEqual(expect.arrayContaining(Object.keys(many)));
    expect(letter.reason).toBe('timeout');
  });

  it('refuses a message without a receipt handle', () => {
    expect(() => deadLetterOf('main-dlq', received({}, { ReceiptHandle: undefined }))).toThrow(
      /main-dlq without its id, receipt handle or body/,
    );
  });
});

describe('idempotencyKeyOf', () => {
  it("is the job's idempotencyKey attribute when it has one", () => {
    expect(idempotencyKeyOf(serviceLetter({ [ATTRIBUTES.idempotencyKey]: 'order-42' }))).toBe('order-42');
  });

  it('is the message id of a message SQS moved, which keeps its id', () => {
    expect(idempotencyKeyOf(deadLetterOf('main-dlq', received({})))).toBe('dlq-message-1');
  });

  it('is the id of the message the service dead-lettered, when the job had no key of its own', () => {
    expect(idempotencyKeyOf(serviceLetter({ [ATTRIBUTES.originalMessageId]: 'source-message-7' }))).toBe(
      'source-message-7',
    );
  });

  it('is unknown for a dead letter that does not say which message it was', () => {
    expect(idempotencyKeyOf(serviceLetter())).toBeUndefined();
  });
});

describe('redriveMessageOf', () => {
  it("keeps the body and the producer's attributes and drops the attempt and every dead-letter attribute", () => {
    const letter = serviceLetter({
      [ATTRIBUTES.cost]: '7',
      [ATTRIBUTES.idempotencyKey]: 'order-42',
      traceId: 'abc',
      [ATTRIBUTES.apiError]: 'bad',
      [ATTRIBUTES.dispatchId]: 'd',
      [ATTRIBUTES.originalMessageId]: 'm',
    });

    const message = redriveMessageOf(letter);

    expect(message.body).toBe('{"id":"job-1"}');
    expect(message.attributes).toEqual({
      [ATTRIBUTES.cost]: { dataType: 'Number', value: '7' },
      [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'order-42' },
      traceId: { dataType: 'String', value: 'abc' },
    });
    for (const name of SERVICE_WRITTEN_ATTRIBUTES) expect(message.attributes).not.toHaveProperty(name);
  });

  it('gives a message SQS moved its own id as idempotency key, so that a second redrive of it is a duplicate', () => {
    const message = redriveMessageOf(deadLetterOf('main-dlq', received({})));

    expect(message.attributes).toEqual({ [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'dlq-message-1' } });
  });

  it('keeps a FIFO message in its group and leaves its deduplication id to be drawn afresh', () => {
    const letter = deadLetterOf(
      'fifo-dlq',
      received(
        { [ATTRIBUTES.reason]: 'HTTP 422', [ATTRIBUTES.sourceQueue]: 'fifo' },
        { Attributes: { MessageGroupId: 'customer-9', SentTimestamp: '1' } },
      ),
    );

    const message = redriveMessageOf(letter);

    expect(message.groupId).toBe('customer-9');
    expect(message.deduplicationId).toBeUndefined();
  });

  it('sends a standard message without a group, even one SQS gave a fair-queue group', () => {
    const letter = deadLetterOf(
      'main-dlq',
      received({ [ATTRIBUTES.reason]: 'HTTP 404' }, { Attributes: { MessageGroupId: 'tenant-1', SentTimestamp: '1' } }),
    );

    expect(redriveMessageOf(letter).groupId).toBeUndefined();
  });

  it('sends no attributes when the job had none of its own and no key is known', () => {
    expect(redriveMessageOf(serviceLetter()).attributes).toBeUndefined();
  });
});

describe('sourceOf and deadLetterQueuesOf', () => {
  it('pair each source queue with its dead-letter queue', () => {
    expect(sourceOf('fifo-dlq')).toBe('fifo');
    expect(sourceOf('bulk-dlq')).toBe('bulk');
    expect(deadLetterQueuesOf(['main'])).toEqual(['main-dlq']);
    expect(deadLetterQueuesOf(undefined)).toEqual(['requeue-dlq', 'fifo-dlq', 'main-dlq', 'bulk-dlq']);
  });
});
