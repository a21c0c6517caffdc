import { DEAD_LETTER_CLASSES, deadLetterClass } from '../../../../lib/adapters/metrics/serviceMetrics';
import { decideRetry } from '../../../../lib/domain/outcome/retryPolicy';
import { parseJob } from '../../../../lib/services/parseJob';
import { testConfig } from '../../../helpers/serviceFixtures';

describe('deadLetterClass', () => {
  const retry = testConfig().retry;

  it('classes the reasons the services write', () => {
    const malformed = parseJob({
      queue: 'main',
      messageId: 'm',
      receiptHandle: 'r',
      body: '{',
      attributes: {},
      receiveCount: 1,
    });
    const permanent = decideRetry(
      {
        classification: { kind: 'client-error', reason: 'HTTP 400 Bad Request' },
        attempt: 1,
        refillMs: 1_000,
        random: () => 0,
      },
      retry,
    );
    const exhausted = decideRetry(
      {
        classification: { kind: 'transient', reason: 'HTTP 503' },
        attempt: retry.maxAttempts,
        refillMs: 1_000,
        random: () => 0,
      },
      retry,
    );

    expect([malformed, permanent, exhausted].map((r) => deadLetterClass('reason' in r ? r.reason : ''))).toEqual([
      'malformed',
      'permanent',
      'attempts-exhausted',
    ]);
    expect(
      deadLetterClass(
        "worker event of 300000 bytes is too large to invoke 'qo-worker': RequestEntityTooLargeException",
      ),
    ).toBe('too-large');
    expect(
      deadLetterClass("worker event of 100 bytes was refused by invoke of 'qo-worker': InvalidRequestContentException"),
    ).toBe('refused');
    expect(deadLetterClass('cost 20 exceeds the limit 10 per second of a quota tier, so it can never be sent')).toBe(
      'over-quota',
    );
    expect(deadLetterClass('something new')).toBe('other');
  });

  it('has a small fixed set of classes', () => {
    expect(DEAD_LETTER_CLASSES).toEqual([
      'malformed',
      'permanent',
      'attempts-exhausted',
      'too-large',
      'over-quota',
      'refused',
      'other',
    ]);
  });
});
