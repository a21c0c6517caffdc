import fc from 'fast-check';
import { ConfigError } from '../../../../lib/errors';
import type { Classification } from '../../../../lib/domain/outcome/classify';
import {
  backoffDelayMs,
  decideRetry,
  DEFAULT_RETRY_SETTINGS,
  parseRetrySettings,
  type RetryInput,
  type RetrySettings,
} from '../../../../lib/domain/outcome/retryPolicy';

const ALMOST_ONE = 0.999999;
const fixed = (r: number) => () => r;
const settings = (overrides: Partial<RetrySettings> = {}): RetrySettings => ({
  ...DEFAULT_RETRY_SETTINGS,
  ...overrides,
});

const unavailable: Classification = { kind: 'transient', reason: 'HTTP 503 Service Unavailable' };
const tooMany: Classification = { kind: 'rate-limited', reason: 'HTTP 429 Too Many Requests' };

function input(classification: Classification, overrides: Partial<RetryInput> = {}): RetryInput {
  return { classification, attempt: 1, refillMs: 60_000, random: fixed(0.5), ...overrides };
}

describe('decideRetry', () => {
  it('succeeds on success', () => {
    expect(decideRetry(input({ kind: 'success' }), DEFAULT_RETRY_SETTINGS)).toEqual({ action: 'succeed' });
  });

  it('dead-letters a permanent failure at once, with its reason', () => {
    expect(decideRetry(input({ kind: 'permanent', reason: 'HTTP 400 Bad Request' }), DEFAULT_RETRY_SETTINGS)).toEqual({
      action: 'dead-letter',
      reason: 'permanent: HTTP 400 Bad Request',
    });
  });

  it('dead-letters a client error at once, with the permanent reason', () => {
    expect(decideRetry(input({ kind: 'client-error', reason: 'HTTP 404 Not Found' }), DEFAULT_RETRY_SETTINGS)).toEqual({
      action: 'dead-letter',
      reason: 'permanent: HTTP 404 Not Found',
    });
  });

  it.each([1, 5, 100])(
    'keeps a job whose caller was refused, at attempt %i too, without consuming the attempt',
    (attempt) => {
      expect(
        decideRetry(
          input({ kind: 'caller-rejected', reason: 'HTTP 401 Unauthorized' }, { attempt }),
          DEFAULT_RETRY_SETTINGS,
        ),
      ).toEqual({
        action: 'keep',
        reason: 'caller rejected: HTTP 401 Unauthorized',
      });
    },
  );

  it('retries a transient failure with backoff, not rate-limited', () => {
    expect(decideRetry(input(unavailable, { attempt: 2, random: fixed(0.5) }), DEFAULT_RETRY_SETTINGS)).toEqual({
      action: 'retry',
      delayMs: 1000, // 0.5 * min(60000, 1000 * 2^1)
      reason: 'transient: HTTP 503 Service Unavailable',
      rateLimited: false,
    });
  });

  it('retries a 429 and marks it rate-limited', () => {
    expect(decideRetry(input(tooMany, { attempt: 1, random: fixed(0.5) }), DEFAULT_RETRY_SETTINGS)).toEqual({
      action: 'retry',
      delayMs: 500,
      reason: 'rate-limited: HTTP 429 Too Many Requests',
      rateLimited: true,
    });
  });

  it('retries a network error and a timeout', () => {
    for (const reason of ['network error: ECONNRESET', 'timeout after 10000 ms']) {
      expect(decideRetry(input({ kind: 'transient', reason }), DEFAULT_RETRY_SETTINGS)).toMatchObject({
        action: 'retry',
        reason: `transient: ${reason}`,
      });
    }
  });

  it('gives up exactly at maxAttempts', () => {
    const s = settings({ maxAttempts: 5 });
    expect(decideRetry(input(unavailable, { attempt: 4 }), s)).toMatchObject({ action: 'retry' });
    expect(decideRetry(input(unavailable, { attempt: 5 }), s)).toEqual({
      action: 'dead-letter',
      reason: 'gave up after 5 attempts: HTTP 503 Service Unavailable',
    });
    expect(decideRetry(input({ ...tooMany, retryAfterMs: 1000 }, { attempt: 5 }), s)).toEqual({
      action: 'dead-letter',
      reason: 'gave up after 5 attempts: HTTP 429 Too Many Requests',
    });
  });

  it('never retries when maxAttempts is 1', () => {
    expect(decideRetry(input(unavailable, { attempt: 1 }), settings({ maxAttempts: 1 }))).toEqual({
      action: 'dead-letter',
      reason: 'gave up after 1 attempt: HTTP 503 Service Unavailable',
    });
  });

  describe('with a Retry-After', () => {
    it('waits exactly Retry-After when random() is 0', () => {
      expect(
        decideRetry(input({ ...tooMany, retryAfterMs: 2000 }, { random: fixed(0) }), DEFAULT_RETRY_SETTINGS),
      ).toMatchObject({ delayMs: 2000 });
    });

    it('adds at most 10% of Retry-After as jitter', () => {
      expect(
        decideRetry(input({ ...tooMany, retryAfterMs: 2000 }, { random: fixed(ALMOST_ONE) }), DEFAULT_RETRY_SETTINGS),
      ).toMatchObject({ delayMs: 2200 });
    });

    it('adds at most one second of jitter to a long Retry-After', () => {
      expect(
        decideRetry(
          input({ ...unavailable, retryAfterMs: 60_000 }, { random: fixed(ALMOST_ONE) }),
          DEFAULT_RETRY_SETTINGS,
        ),
      ).toMatchObject({ delayMs: 61_000 });
    });

    it('honours Retry-After beyond the backoff cap and the refill time', () => {
      expect(
        decideRetry(
          input({ ...tooMany, retryAfterMs: 30_000 }, { attempt: 1, refillMs: 1000, random: fixed(0) }),
          DEFAULT_RETRY_SETTINGS,
        ),
      ).toMatchObject({
        delayMs: 30_000,
      });
    });

    it('retries at once for Retry-After 0', () => {
      expect(
        decideRetry(input({ ...tooMany, retryAfterMs: 0 }, { random: fixed(ALMOST_ONE) }), DEFAULT_RETRY_SETTINGS),
      ).toMatchObject({ delayMs: 0 });
    });

    it('is clamped to maxDelayMs', () => {
      expect(decideRetry(input({ ...tooMany, retryAfterMs: 3_600_000 }), DEFAULT_RETRY_SETTINGS)).toMatchObject({
        delayMs: 900_000,
      });
      expect(decideRetry(input({ ...tooMany, retryAfterMs: 10_000 }), settings({ maxDelayMs: 5000 }))).toMatchObject({
        delayMs: 5000,
      });
    });
  });

  it.each([0, -1, 1.5, NaN])('refuses attempt %p', (attempt) => {
    expect(() => decideRetry(input(unavailable, { attempt }), DEFAULT_RETRY_SETTINGS)).toThrow(RangeError);
  });

  it.each([1, -0.1, NaN])('refuses random() returning %p', (r) => {
    expect(() => decideRetry(input(unavailable, { random: fixed(r) }), DEFAULT_RETRY_SETTINGS)).toThrow(
      /random\(\) must return a number in \[0, 1\)/,
    );
  });
});

describe('backoffDelayMs', () => {
  const base = DEFAULT_RETRY_SETTINGS;

  it('is 0 when random() is 0', () => {
    for (const attempt of [1, 2, 5, 20]) expect(backoffDelayMs(attempt, 60_000, fixed(0), base)).toBe(0);
  });

  it('is just under the ceiling, rounded up, when random() approaches 1', () => {
    expect(backoffDelayMs(1, 60_000, fixed(ALMOST_ONE), base)).toBe(1000);
    expect(backoffDelayMs(3, 60_000, fixed(0.99), base)).toBe(3960);
  });

  it('grows exponentially until the refill time, then stays there', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8, 20].map((attempt) =>
      backoffDelayMs(attempt, 60_000, fixed(ALMOST_ONE), base),
    );
    expect(ceilings).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  it('caps at baseDelayMs when the window refills sooner', () => {
    expect(backoffDelayMs(10, 200, fixed(ALMOST_ONE), base)).toBe(1000);
    expect(backoffDelayMs(10, 0, fixed(ALMOST_ONE), base)).toBe(1000);
  });

  it('is clamped to maxDelayMs, also for an unknown (infinite) refill time', () => {
    expect(backoffDelayMs(30, 86_400_000, fixed(ALMOST_ONE), base)).toBe(900_000);
    expect(backoffDelayMs(30, Infinity, fixed(ALMOST_ONE), base)).toBe(900_000);
    expect(backoffDelayMs(2000, Infinity, fixed(0), base)).toBe(0);
    expect(backoffDelayMs(10, 60_000, fixed(ALMOST_ONE), settings({ maxDelayMs: 5000 }))).toBe(5000);
  });

  it('spreads uniformly: the delay is linear in random()', () => {
    expect([0.1, 0.25, 0.5, 0.75].map((r) => backoffDelayMs(4, 60_000, fixed(r), base))).toEqual([
      800, 2000, 4000, 6000,
    ]);
  });

  it('returns whole milliseconds, rounded up', () => {
    expect(backoffDelayMs(1, 60_000, fixed(0.0001), base)).toBe(1);
  });

  it.each([-1, NaN])('refuses refillMs %p', (refillMs) => {
    expect(() => backoffDelayMs(1, refillMs, fixed(0), base)).toThrow(RangeError);
  });

  describe('properties', () => {
    const settingsArb = fc
      .record({
        maxAttempts: fc.integer({ min: 1, max: 100 }),
        baseDelayMs: fc.integer({ min: 1, max: 900_000 }),
        maxDelayMs: fc.integer({ min: 1, max: 900_000 }),
      })
      .filter((s) => s.maxDelayMs >= s.baseDelayMs);
    const randomArb = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
    const refillArb = fc.oneof(
      fc.integer({ min: 0, max: 100_000_000 }),
      fc.double({ min: 0, max: 1e9, noNaN: true }),
      fc.constant(Infinity),
    );

    it('without Retry-After: 0 <= delay <= min(maxDelayMs, max(base, refill))', () => {
      fc.assert(
        fc.property(settingsArb, fc.integer({ min: 1, max: 100 }), refillArb, randomArb, (s, attempt, refillMs, r) => {
          const decision = decideRetry(
            { classification: unavailable, attempt, refillMs, random: () => r },
            { ...s, maxAttempts: 101 },
          );
          if (decision.action !== 'retry') return false;
          const bound = Math.min(s.maxDelayMs, Math.max(s.baseDelayMs, Math.ceil(refillMs)));
          return Number.isInteger(decision.delayMs) && decision.delayMs >= 0 && decision.delayMs <= bound;
        }),
      );
    });

    it('with Retry-After: delay >= retryAfterMs, up to maxDelayMs', () => {
      fc.assert(
        fc.property(
          settingsArb,
          fc.integer({ min: 1, max: 100 }),
          refillArb,
          randomArb,
          fc.integer({ min: 0, max: 86_400_000 }),
          (s, attempt, refillMs, r, retryAfterMs) => {
            const classification: Classification = {
              kind: 'rate-limited',
              reason: 'HTTP 429 Too Many Requests',
              retryAfterMs,
            };
            const decision = decideRetry(
              { classification, attempt, refillMs, random: () => r },
              { ...s, maxAttempts: 101 },
            );
            if (decision.action !== 'retry') return false;
            return (
              decision.delayMs >= Math.min(retryAfterMs, s.maxDelayMs) &&
              decision.delayMs <= s.maxDelayMs &&
              decision.rateLimited
            );
          },
        ),
      );
    });
  });
});

describe('parseRetrySettings', () => {
  it('gives the defaults for an empty object or nothing', () => {
    expect(DEFAULT_RETRY_SETTINGS).toEqual({ maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 900_000 });
    expect(parseRetrySettings({})).toEqual(DEFAULT_RETRY_SETTINGS);
    expect(parseRetrySettings(undefined)).toEqual(DEFAULT_RETRY_SETTINGS);
  });

  it('fills in the keys that are missing and freezes the result', () => {
    const parsed = parseRetrySettings({ maxAttempts: 3 });
    expect(parsed).toEqual({ maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 900_000 });
    expect(Object.isFrozen(parsed)).toBe(true);
    expect(Object.isFrozen(DEFAULT_RETRY_SETTINGS)).toBe(true);
  });

  it('accepts the edges of each range', () => {
    expect(parseRetrySettings({ maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 })).toEqual({
      maxAttempts: 1,
      baseDelayMs: 1,
      maxDelayMs: 1,
    });
    expect(parseRetrySettings({ maxAttempts: 100, baseDelayMs: 900_000, maxDelayMs: 900_000 })).toEqual({
      maxAttempts: 100,
      baseDelayMs: 900_000,
      maxDelayMs: 900_000,
    });
  });

  it.each([
    [{ maxAttempts: 0 }, 'retry.maxAttempts: must be an integer from 1 to 100; got 0'],
    [{ maxAttempts: 101 }, 'retry.maxAttempts: must be an integer from 1 to 100; got 101'],
    [{ maxAttempts: 2.5 }, 'retry.maxAttempts: must be an integer from 1 to 100; got 2.5'],
    [{ maxAttempts: '5' }, 'retry.maxAttempts: must be an integer from 1 to 100; got "5"'],
    [{ baseDelayMs: 0 }, 'retry.baseDelayMs: must be an integer from 1 to 900000; got 0'],
    [{ baseDelayMs: 900_001 }, 'retry.baseDelayMs: must be an integer from 1 to 900000; got 900001'],
    [{ maxDelayMs: 900_001 }, 'retry.maxDelayMs: must be an integer from 1 to 900000; got 900001'],
    [{ maxDelayMs: 500 }, 'retry.maxDelayMs: must be an integer from 1000 (baseDelayMs) to 900000; got 500'],
    [
      { baseDelayMs: 5000, maxDelayMs: 4000 },
      'retry.maxDelayMs: must be an integer from 5000 (baseDelayMs) to 900000; got 4000',
    ],
    [{ maxDelayMs: null }, 'retry.maxDelayMs: must be an integer from 1 to 900000; got null'],
    [{ retries: 3 }, 'retry.retries: unknown key; allowed keys are maxAttempts, baseDelayMs, maxDelayMs'],
    [null, 'retry: must be an object with optional keys maxAttempts, baseDelayMs, maxDelayMs; got null'],
    [[5], 'retry: must be an object with optional keys maxAttempts, baseDelayMs, maxDelayMs; got [5]'],
    [5, 'retry: must be an object with optional keys maxAttempts, baseDelayMs, maxDelayMs; got 5'],
  ])('refuses %p with a ConfigError naming the field and range', (value, message) => {
    expect(() => parseRetrySettings(value)).toThrow(message);
    try {
      parseRetrySettings(value);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).field).toBe(message.slice(0, message.indexOf(':')));
    }
  });

  it('names the field it was given', () => {
    expect(() => parseRetrySettings({ maxAttempts: 0 }, 'lanes[1].retry')).toThrow(
      'lanes[1].retry.maxAttempts: must be an integer from 1 to 100',
    );
  });
});
