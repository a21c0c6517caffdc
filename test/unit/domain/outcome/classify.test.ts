import type { ApiResult } from '../../../../lib/domain/outcome/apiResult';
import { classify, MAX_RETRY_AFTER_MS, parseRetryAfterMs } from '../../../../lib/domain/outcome/classify';

const NOW = Date.UTC(2024, 0, 15, 12, 0, 0); // Mon, 15 Jan 2024 12:00:00 GMT

function response(status: number, headers: Record<string, string> = {}): ApiResult {
  return { kind: 'response', status, headers };
}

describe('classify', () => {
  it.each([200, 201, 202, 204, 299])('treats %i as success', (status) => {
    expect(classify(response(status), NOW)).toEqual({ kind: 'success' });
  });

  it('treats 429 as rate-limited', () => {
    expect(classify(response(429), NOW)).toEqual({ kind: 'rate-limited', reason: 'HTTP 429 Too Many Requests' });
  });

  it.each([
    [408, 'HTTP 408 Request Timeout'],
    [425, 'HTTP 425 Too Early'],
    [500, 'HTTP 500 Internal Server Error'],
    [501, 'HTTP 501 Not Implemented'],
    [502, 'HTTP 502 Bad Gateway'],
    [503, 'HTTP 503 Service Unavailable'],
    [504, 'HTTP 504 Gateway Timeout'],
    [599, 'HTTP 599'],
  ])('treats %i as transient (%s)', (status, reason) => {
    expect(classify(response(status), NOW)).toEqual({ kind: 'transient', reason });
  });

  it.each([
    [401, 'HTTP 401 Unauthorized'],
    [403, 'HTTP 403 Forbidden'],
  ])('treats %i as a refusal of the caller (%s)', (status, reason) => {
    expect(classify(response(status), NOW)).toEqual({ kind: 'caller-rejected', reason });
  });

  it.each([
    [400, 'HTTP 400 Bad Request'],
    [402, 'HTTP 402 Payment Required'],
    [404, 'HTTP 404 Not Found'],
    [409, 'HTTP 409 Conflict'],
    [413, 'HTTP 413 Content Too Large'],
    [422, 'HTTP 422 Unprocessable Content'],
    [499, 'HTTP 499'],
  ])('treats %i as a client error (%s)', (status, reason) => {
    expect(classify(response(status), NOW)).toEqual({ kind: 'client-error', reason });
  });

  it.each([100, 101, 199, 300, 301, 302, 304, 399, 0, 600, 200.5])(
    'treats unexpected status %p as permanent',
    (status) => {
      expect(classify(response(status), NOW)).toEqual({ kind: 'permanent', reason: `unexpected status ${status}` });
    },
  );

  it('treats a network error as transient and names it', () => {
    expect(classify({ kind: 'network-error', message: 'ECONNRESET' }, NOW)).toEqual({
      kind: 'transient',
      reason: 'network error: ECONNRESET',
    });
  });

  it('keeps a network error reason short', () => {
    const c = classify({ kind: 'network-error', message: 'x'.repeat(1000) }, NOW);
    expect(c.kind).toBe('transient');
    expect(c.kind !== 'success' && c.reason.length).toBeLessThanOrEqual(220);
  });

  it('says "network error" when the message is empty', () => {
    expect(classify({ kind: 'network-error', message: '  ' }, NOW)).toEqual({
      kind: 'transient',
      reason: 'network error',
    });
  });

  it('treats a timeout as transient and names its length', () => {
    expect(classify({ kind: 'timeout', afterMs: 10_000 }, NOW)).toEqual({
      kind: 'transient',
      reason: 'timeout after 10000 ms',
    });
  });

  it('carries Retry-After on a 429 and a 503', () => {
    expect(classify(response(429, { 'retry-after': '2' }), NOW)).toEqual({
      kind: 'rate-limited',
      reason: 'HTTP 429 Too Many Requests',
      retryAfterMs: 2000,
    });
    expect(classify(response(503, { 'retry-after': '30' }), NOW)).toEqual({
      kind: 'transient',
      reason: 'HTTP 503 Service Unavailable',
      retryAfterMs: 30_000,
    });
  });

  it('leaves out retryAfterMs when no header gives one', () => {
    expect(classify(response(429, { 'retry-after': 'soon' }), NOW)).not.toHaveProperty('retryAfterMs');
  });

  it('ignores Retry-After on permanent and successful responses', () => {
    expect(classify(response(400, { 'retry-after': '5' }), NOW)).toEqual({
      kind: 'client-error',
      reason: 'HTTP 400 Bad Request',
    });
    expect(classify(response(401, { 'retry-after': '5' }), NOW)).toEqual({
      kind: 'caller-rejected',
      reason: 'HTTP 401 Unauthorized',
    });
    expect(classify(response(200, { 'retry-after': '5' }), NOW)).toEqual({ kind: 'success' });
  });
});

describe('parseRetryAfterMs', () => {
  const parse = (headers: Record<string, string>) => parseRetryAfterMs(headers, NOW);

  it('returns undefined without any header', () => {
    expect(parse({})).toBeUndefined();
  });

  describe('retry-after as delta-seconds', () => {
    it.each([
      ['0', 0],
      ['1', 1000],
      ['120', 120_000],
      ['1.5', 1500],
      ['1.1', 1100],
      ['0.0015', 2],
      ['.5', 500],
      [' 3 ', 3000],
    ])('reads %p as %i ms', (value, ms) => {
      expect(parse({ 'retry-after': value })).toBe(ms);
    });
  });

  describe('retry-after as an HTTP-date', () => {
    it('reads a future IMF-fixdate relative to now', () => {
      expect(parse({ 'retry-after': 'Mon, 15 Jan 2024 12:00:30 GMT' })).toBe(30_000);
    });

    it('gives 0 for a date in the past', () => {
      expect(parse({ 'retry-after': 'Mon, 15 Jan 2024 11:59:00 GMT' })).toBe(0);
      expect(parse({ 'retry-after': 'Sun, 06 Nov 1994 08:49:37 GMT' })).toBe(0);
    });

    it('reads the obsolete RFC 850 and asctime forms', () => {
      expect(parse({ 'retry-after': 'Monday, 15-Jan-24 12:01:00 GMT' })).toBe(60_000);
      expect(parse({ 'retry-after': 'Mon Jan 15 12:00:10 2024' })).toBe(10_000);
      expect(parse({ 'retry-after': 'Mon Jan  1 00:00:00 2024' })).toBe(0);
    });

    it('reads an RFC 850 year more than 50 years ahead as the past century', () => {
      expect(parse({ 'retry-after': 'Sunday, 06-Nov-94 08:49:37 GMT' })).toBe(0);
    });

    it.each([
      'Mon, 31 Feb 2024 12:00:00 GMT',
      'Mon, 15 Jan 2024 25:00:00 GMT',
      'Mon, 15 Jan 2024 12:00:00 PST',
      '2024-01-15T12:00:30Z',
    ])('ignores the malformed date %p', (value) => {
      expect(parse({ 'retry-after': value })).toBeUndefined();
    });
  });

  describe('retry-after-ms', () => {
    it('reads milliseconds, rounded up', () => {
      expect(parse({ 'retry-after-ms': '250' })).toBe(250);
      expect(parse({ 'retry-after-ms': '20.4' })).toBe(21);
    });

    it('wins over retry-after and x-ratelimit-reset', () => {
      expect(parse({ 'retry-after-ms': '250', 'retry-after': '1', 'x-ratelimit-reset': '9' })).toBe(250);
    });

    it('falls through to retry-after when it is garbage', () => {
      expect(parse({ 'retry-after-ms': 'abc', 'retry-after': '1' })).toBe(1000);
    });
  });

  describe('x-ratelimit-reset', () => {
    it('reads a small number as delta seconds', () => {
      expect(parse({ 'x-ratelimit-reset': '7' })).toBe(7000);
      expect(parse({ 'x-ratelimit-reset': '0.25' })).toBe(250);
    });

    it('reads a number above 1e9 as epoch seconds', () => {
      expect(parse({ 'x-ratelimit-reset': String(NOW / 1000 + 42) })).toBe(42_000);
    });

    it('gives 0 for an epoch in the past', () => {
      expect(parse({ 'x-ratelimit-reset': String(NOW / 1000 - 42) })).toBe(0);
    });

    it('comes after retry-after', () => {
      expect(parse({ 'retry-after': '1', 'x-ratelimit-reset': '7' })).toBe(1000);
      expect(parse({ 'retry-after': 'later', 'x-ratelimit-reset': '7' })).toBe(7000);
    });
  });

  describe('garbage', () => {
    it.each(['', ' ', '-1', '-0.5', 'abc', 'NaN', 'Infinity', '1e3', '0x10', '+5', '1,5', '5s', '9'.repeat(400)])(
      'ignores %p in every header',
      (value) => {
        expect(parse({ 'retry-after-ms': value, 'retry-after': value, 'x-ratelimit-reset': value })).toBeUndefined();
      },
    );
  });

  it('clamps every form to 24 hours', () => {
    expect(MAX_RETRY_AFTER_MS).toBe(86_400_000);
    expect(parse({ 'retry-after': '999999' })).toBe(MAX_RETRY_AFTER_MS);
    expect(parse({ 'retry-after-ms': '1' + '0'.repeat(300) })).toBe(MAX_RETRY_AFTER_MS);
    expect(parse({ 'retry-after': 'Fri, 01 Jan 2100 00:00:00 GMT' })).toBe(MAX_RETRY_AFTER_MS);
    expect(parse({ 'x-ratelimit-reset': String(NOW / 1000 + 2 * 86_400) })).toBe(MAX_RETRY_AFTER_MS);
  });
});
