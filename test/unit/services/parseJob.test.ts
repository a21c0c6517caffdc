import type { MessageAttribute, ReceivedMessage } from '../../../lib/ports/QueueReceiver';
import fc from 'fast-check';
import type { JobEvent } from '../../../lib/ports/Invoker';
import { jobEventOf, MAX_BODY_DEPTH, parseJob, type ParsedJob, type ParseResult } from '../../../lib/services/parseJob';
import { awkwardBody, LANE, numberAttr, START, stringAttr } from '../../helpers/serviceFixtures';

/** A message as received from the main queue, first receive, with a JSON body and no attributes. */
function message(overrides: Partial<ReceivedMessage> = {}): ReceivedMessage {
  return {
    queue: 'main',
    messageId: 'm-1',
    receiptHandle: 'r-1',
    body: '{"id":"job-1"}',
    attributes: {},
    receiveCount: 1,
    ...overrides,
  };
}

function withAttributes(
  attributes: Record<string, MessageAttribute>,
  overrides: Partial<ReceivedMessage> = {},
): ReceivedMessage {
  return message({ attributes, ...overrides });
}

function reasonOf(result: ParseResult): string {
  if (result.ok) throw new Error(`expected a malformed message, got ${JSON.stringify(result.job)}`);
  return result.reason;
}

const RESERVATION = { at: START, costs: { cost: 1 }, windows: {} };

/** The job of a message `parseJob` must accept. */
function jobOf(received: ReceivedMessage): ParsedJob {
  const result = parseJob(received);
  if (!result.ok) throw new Error(`expected a valid message, got reason ${result.reason}`);
  return result.job;
}

const COST_RULE = "malformed: attribute 'cost' must be a Number holding an integer from 0 to 1000000000000";

describe('parseJob', () => {
  describe('a valid message', () => {
    it('defaults cost to 1, the idempotency key to the message id and the attempt to 1', () => {
      expect(parseJob(message())).toEqual({ ok: true, job: { costs: { cost: 1 }, idempotencyKey: 'm-1', attempt: 1 } });
    });

    it('accepts any JSON value as the body', () => {
      expect(parseJob(message({ body: '[1,"two",null]' }))).toEqual({
        ok: true,
        job: { costs: { cost: 1 }, idempotencyKey: 'm-1', attempt: 1 },
      });
    });

    it('takes the cost from the Number attribute cost', () => {
      const result = parseJob(withAttributes({ cost: numberAttr(250) }));
      expect(result).toEqual({ ok: true, job: { costs: { cost: 250 }, idempotencyKey: 'm-1', attempt: 1 } });
    });

    it('accepts a cost of 0 and a custom Number data type', () => {
      expect(parseJob(withAttributes({ cost: numberAttr(0) }))).toMatchObject({
        ok: true,
        job: { costs: { cost: 0 } },
      });
      expect(parseJob(withAttributes({ cost: { dataType: 'Number.tokens', value: '12' } }))).toMatchObject({
        ok: true,
        job: { costs: { cost: 12 } },
      });
    });

    it('takes the idempotency key from the String attribute idempotencyKey', () => {
      const result = parseJob(withAttributes({ idempotencyKey: stringAttr('order-42') }));
      expect(result).toEqual({ ok: true, job: { costs: { cost: 1 }, idempotencyKey: 'order-42', attempt: 1 } });
    });

    it("takes the attempt of a requeued message from its 'attempt' attribute", () => {
      const result = parseJob(withAttributes({ attempt: numberAttr(3) }, { queue: 'requeue' }));
      expect(result).toEqual({ ok: true, job: { costs: { cost: 1 }, idempotencyKey: 'm-1', attempt: 3 } });
    });

    it("falls back to attempt 1 when the 'attempt' attribute is not a positive integer", () => {
      expect(parseJob(withAttributes({ attempt: numberAttr('zero') }, { queue: 'requeue' }))).toMatchObject({
        ok: true,
        job: { attempt: 1 },
      });
      expect(parseJob(withAttributes({ attempt: numberAttr(0) }, { queue: 'requeue' }))).toMatchObject({
        ok: true,
        job: { attempt: 1 },
      });
    });

    it('counts the attempt of a FIFO message by its receives', () => {
      const result = parseJob(message({ queue: 'fifo', groupId: 'g-1', receiveCount: 2 }));
      expect(result).toEqual({ ok: true, job: { costs: { cost: 1 }, idempotencyKey: 'm-1', attempt: 2 } });
    });

    it("ignores an 'attempt' attribute on a FIFO message in favour of the receive count", () => {
      const result = parseJob(
        withAttributes({ attempt: numberAttr(7) }, { queue: 'fifo', groupId: 'g-1', receiveCount: 3 }),
      );
      expect(result).toMatchObject({ ok: true, job: { attempt: 3 } });
    });
  });

  describe('a dead letter moved back as it was (the SQS console’s redrive)', () => {
    /** The attributes the service wrote on the dead letter of message `m-0`, ended by dispatch `d-1` at attempt 3. */
    const MARKS = {
      reason: stringAttr('transient: HTTP 503'),
      attempt: numberAttr(3),
      sourceQueue: stringAttr('main'),
      originalMessageId: stringAttr('m-0'),
      dispatchId: stringAttr('d-1'),
    };

    it.each(['main', 'requeue'] as const)(
      'starts its attempts afresh in the %s queue, keyed by the message it was',
      (queue) => {
        expect(parseJob(withAttributes(MARKS, { queue, messageId: 'm-9' }))).toEqual({
          ok: true,
          job: { costs: { cost: 1 }, idempotencyKey: 'm-0', attempt: 1 },
        });
      },
    );

    it("keeps the producer's idempotencyKey, and counts a FIFO message's receives as any", () => {
      const keyed = { ...MARKS, idempotencyKey: stringAttr('order-42') };
      expect(parseJob(withAttributes(keyed, { messageId: 'm-9' }))).toMatchObject({
        ok: true,
        job: { idempotencyKey: 'order-42', attempt: 1 },
      });
      expect(parseJob(withAttributes(MARKS, { queue: 'fifo', groupId: 'g-1', receiveCount: 2 }))).toMatchObject({
        ok: true,
        job: { idempotencyKey: 'm-0', attempt: 2 },
      });
    });

    it('needs the three marks the service writes on every dead letter: with only some (a producer’s own reason), it is a message as any', () => {
      const { reason, attempt, sourceQueue, originalMessageId } = MARKS;
      expect(parseJob(withAttributes({ reason, attempt, sourceQueue, originalMessageId }))).toMatchObject({
        ok: true,
        job: { idempotencyKey: 'm-0', attempt: 1 },
      });
      expect(parseJob(withAttributes({ reason, attempt, sourceQueue }, { queue: 'requeue' }))).toEqual({
        ok: true,
        job: { costs: { cost: 1 }, idempotencyKey: 'm-1', attempt: 3 },
      });
    });
  });

  describe('a malformed message', () => {
    it('is refused when the body is not JSON, with the parser error in the reason', () => {
      expect(reasonOf(parseJob(message({ body: '{not json' })))).toMatch(/^malformed: body is not JSON \(.+\)$/);
    });

    it('quotes the body in the reason on one line, as text: control characters, line separators and a cut surrogate pair are escaped', () => {
      // The parser quotes ten UTF-16 units of the body and its first token: here half an emoji, a NEL and a newline.
      expect(reasonOf(parseJob(message({ body: `a${'😀'.repeat(10)}` })))).toBe(
        `malformed: body is not JSON (Unexpected token 'a', "a😀😀😀😀\\ud83d"... is not valid JSON)`,
      );
      expect(reasonOf(parseJob(message({ body: '😀' })))).toBe(
        `malformed: body is not JSON (Unexpected token '\\ud83d', "😀" is not valid JSON)`,
      );
      expect(reasonOf(parseJob(message({ body: 'x\u0085\ny\u2028' })))).toBe(
        `malformed: body is not JSON (Unexpected token 'x', "x\\u0085\\u000ay\\u2028" is not valid JSON)`,
      );
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr('1\u0085') })))).toBe(
        `${COST_RULE}; got Number "1\\u0085"`,
      );
    });

    it('is refused when the body is empty', () => {
      expect(reasonOf(parseJob(message({ body: '' })))).toMatch(/^malformed: body is not JSON \(.+\)$/);
    });

    it('is refused when cost is negative', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr(-1) })))).toBe(`${COST_RULE}; got Number "-1"`);
    });

    it('is refused when cost is NaN', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr('NaN') })))).toBe(`${COST_RULE}; got Number "NaN"`);
    });

    it('is refused when cost is an empty or blank Number', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr(' ') })))).toBe(`${COST_RULE}; got Number " "`);
    });

    it('is refused when cost has the String data type, even if it holds digits', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: stringAttr('3') })))).toBe(`${COST_RULE}; got String "3"`);
    });

    it('is refused when cost is not an integer', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr(1.5) })))).toBe(`${COST_RULE}; got Number "1.5"`);
    });

    it('is refused when cost is above 1e12', () => {
      expect(reasonOf(parseJob(withAttributes({ cost: numberAttr('1e13') })))).toBe(`${COST_RULE}; got Number "1e13"`);
    });

    it('quotes at most 40 characters of a bad cost', () => {
      const reason = reasonOf(parseJob(withAttributes({ cost: numberAttr('9'.repeat(100)) })));
      expect(reason).toBe(`${COST_RULE}; got Number "${'9'.repeat(40)}"`);
    });

    it('is refused when idempotencyKey is empty', () => {
      expect(reasonOf(parseJob(withAttributes({ idempotencyKey: stringAttr('') })))).toBe(
        "malformed: attribute 'idempotencyKey' must be a String of 1 to 512 characters; got String of length 0",
      );
    });

    it('is refused when idempotencyKey is longer than 512 characters or not a String', () => {
      expect(reasonOf(parseJob(withAttributes({ idempotencyKey: stringAttr('k'.repeat(513)) })))).toBe(
        "malformed: attribute 'idempotencyKey' must be a String of 1 to 512 characters; got String of length 513",
      );
      expect(reasonOf(parseJob(withAttributes({ idempotencyKey: numberAttr(42) })))).toBe(
        "malformed: attribute 'idempotencyKey' must be a String of 1 to 512 characters; got Number of length 2",
      );
    });

    it('is refused when a FIFO message has no MessageGroupId', () => {
      expect(reasonOf(parseJob(message({ queue: 'fifo' })))).toBe('malformed: FIFO message without a MessageGroupId');
    });
  });

  describe('a deeply nested body', () => {
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

    it(`accepts nesting up to ${MAX_BODY_DEPTH} levels`, () => {
      expect(parseJob(message({ body: nested(MAX_BODY_DEPTH) })).ok).toBe(true);
      expect(parseJob(message({ body: `{"a":${nested(MAX_BODY_DEPTH - 1)}}` })).ok).toBe(true);
    });

    it('refuses deeper nesting, which recursive parsers behind the API caller refuse or overflow on', () => {
      const body = nested(128_000); // what a 256 KB message can hold: JSON.parse takes it
      expect(reasonOf(parseJob(message({ body })))).toBe(
        `malformed: body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`,
      );
      expect(reasonOf(parseJob(message({ body: `{"a":${nested(MAX_BODY_DEPTH)}}` })))).toMatch(/deeper than/);
    });
  });

  describe('any input (fuzzed)', () => {
    const attribute = fc.record({
      dataType: fc.constantFrom('String', 'Number', 'Number.tokens', 'Binary', 'Strung'),
      value: fc.oneof(fc.string(), fc.double().map(String), fc.constantFrom('NaN', '-3', '1e12', '1e13', ' ', '')),
    });
    const received = fc.record({
      queue: fc.constantFrom('main' as const, 'fifo' as const, 'requeue' as const),
      body: fc.oneof(
        fc.string(),
        fc.json(),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc.nat(300).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
      ),
      attributes: fc.dictionary(fc.constantFrom('cost', 'idempotencyKey', 'attempt', 'other', 'reason'), attribute),
      groupId: fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
      receiveCount: fc.integer({ min: 1, max: 20 }),
    });

    it('gives a reason free of control characters, line separators and lone surrogates for any text', () => {
      const unprintable =
        // eslint-disable-next-line no-control-regex -- control characters are exactly what is looked for
        /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
      const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)); // lone surrogate halves included
      const text = fc.oneof(
        fc.string({ unit: codeUnit, maxLength: 40 }),
        fc.string({ unit: 'grapheme', maxLength: 20 }),
      );
      fc.assert(
        fc.property(text, text, (body, cost) => {
          const results = [parseJob(message({ body })), parseJob(withAttributes({ cost: numberAttr(cost) }))];
          return results.every((result) => result.ok || !unprintable.test(result.reason));
        }),
        { numRuns: 200 },
      );
    });

    it('never throws: a job whose cost is a whole number in range and whose event carries the body through Lambda unchanged, or a readable reason', () => {
      fc.assert(
        fc.property(received, ({ groupId, ...rest }) => {
          const received = message({ ...rest, ...(groupId === undefined ? {} : { groupId }) });
          const result = parseJob(received);
          if (!result.ok) return result.reason.startsWith('malformed: ') && result.reason.length < 300;
          const delivered = JSON.parse(
            JSON.stringify(
              jobEventOf(LANE, received, result.job, 'd-1', RESERVATION, RESERVATION.at + 20, RESERVATION.at - 250),
            ),
          ) as JobEvent;
          return (
            delivered.body === rest.body &&
            Object.values(result.job.costs).every((cost) => Number.isInteger(cost) && cost >= 0 && cost <= 1e12) &&
            result.job.attempt >= 1
          );
        }),
        { numRuns: 300 },
      );
    });
  });
});

describe('jobEventOf', () => {
  it('carries the job, the message, the dispatch and its slot in one worker event', () => {
    const received = message({ queue: 'fifo', groupId: 'g-1', receiveCount: 2, attributes: { cost: numberAttr(3) } });

    expect(
      jobEventOf(LANE, received, jobOf(received), 'd-1', RESERVATION, RESERVATION.at + 20, RESERVATION.at - 250),
    ).toEqual({
      kind: 'job',
      lane: LANE,
      queue: 'fifo',
      receiptHandle: 'r-1',
      messageId: 'm-1',
      body: '{"id":"job-1"}',
      attempt: 2,
      cost: 3,
      idempotencyKey: 'm-1',
      groupId: 'g-1',
      attributes: { cost: numberAttr(3) },
      dispatchId: 'd-1',
      reservation: RESERVATION,
      slotAt: RESERVATION.at,
      callBy: RESERVATION.at + 20,
      sentAt: RESERVATION.at - 250,
    });
  });

  it('carries a body that a JSON round trip would change as its text, which reaches the worker byte for byte', () => {
    const body = awkwardBody('job-1');
    const received = message({ body });

    const event = jobEventOf(
      LANE,
      received,
      jobOf(received),
      'd-1',
      RESERVATION,
      RESERVATION.at + 20,
      RESERVATION.at - 250,
    );

    expect(event.body).toBe(body);
    // Lambda hands an async payload to the worker through JSON.parse.
    expect((JSON.parse(JSON.stringify(event)) as JobEvent).body).toBe(body);
    expect(JSON.stringify(JSON.parse(body))).not.toBe(body);
  });
});
