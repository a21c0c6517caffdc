import { goDurationMs, readLimitHeaders } from '../../../../lib/domain/limits/rateLimitHeaders';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);

describe('readLimitHeaders', () => {
  describe('openai', () => {
    it('reads the limit, remaining and reset of requests and tokens, the reset as a duration from now', () => {
      const readings = readLimitHeaders(
        'openai',
        {
          'x-ratelimit-limit-requests': '500',
          'x-ratelimit-remaining-requests': '499',
          'x-ratelimit-reset-requests': '120ms',
          'x-ratelimit-limit-tokens': '30000',
          'x-ratelimit-remaining-tokens': '29100',
          'x-ratelimit-reset-tokens': '1m48.5s',
        },
        NOW,
      );

      expect(readings).toEqual([
        { family: 'requests', limit: 500, remaining: 499, resetAt: NOW + 120 },
        { family: 'tokens', limit: 30_000, remaining: 29_100, resetAt: NOW + 108_500 },
      ]);
    });

    it('reads nothing from an answer without its headers, or from headers of another format', () => {
      expect(readLimitHeaders('openai', {}, NOW)).toEqual([]);
      expect(readLimitHeaders('openai', { 'anthropic-ratelimit-requests-limit': '50' }, NOW)).toEqual([]);
    });
  });

  describe('anthropic', () => {
    it('reads the four families, the reset as an RFC 3339 instant', () => {
      const readings = readLimitHeaders(
        'anthropic',
        {
          'anthropic-ratelimit-requests-limit': '50',
          'anthropic-ratelimit-requests-remaining': '49',
          'anthropic-ratelimit-requests-reset': '2026-11-29T12:00:01Z',
          'anthropic-ratelimit-input-tokens-limit': '40000',
          'anthropic-ratelimit-input-tokens-remaining': '39000',
          'anthropic-ratelimit-input-tokens-reset': '2026-11-29T12:00:02.500Z',
          'anthropic-ratelimit-output-tokens-limit': '8000',
        },
        NOW,
      );

      expect(readings).toEqual([
        { family: 'requests', limit: 50, remaining: 49, resetAt: NOW + 1_000 },
        { family: 'input-tokens', limit: 40_000, remaining: 39_000, resetAt: NOW + 2_500 },
        { family: 'output-tokens', limit: 8_000 },
      ]);
    });

    it('takes a reset in the past as now', () => {
      const [reading] = readLimitHeaders(
        'anthropic',
        { 'anthropic-ratelimit-tokens-remaining': '0', 'anthropic-ratelimit-tokens-reset': '2026-11-29T11:59:00Z' },
        NOW,
      );

      expect(reading).toEqual({ family: 'tokens', remaining: 0, resetAt: NOW });
    });
  });

  describe('ietf', () => {
    it('reads the older fields with the window of the policy', () => {
      const readings = readLimitHeaders(
        'ietf',
        {
          'ratelimit-limit': '100',
          'ratelimit-remaining': '7',
          'ratelimit-reset': '30',
          'ratelimit-policy': '100;w=60',
        },
        NOW,
      );

      expect(readings).toEqual([
        { family: 'requests', limit: 100, remaining: 7, resetAt: NOW + 30_000, windowMs: 60_000 },
      ]);
    });

    it('reads the structured fields, the policy the RateLimit item names', () => {
      const readings = readLimitHeaders(
        'ietf',
        { ratelimit: '"burst";r=3;t=1', 'ratelimit-policy': '"day";q=1000;w=86400, "burst";q=10;w=1' },
        NOW,
      );

      expect(readings).toEqual([
        { family: 'requests', limit: 10, remaining: 3, resetAt: NOW + 1_000, windowMs: 1_000 },
      ]);
    });

    it('does not read a structured policy that counts another quota unit', () => {
      expect(
        readLimitHeaders(
          'ietf',
          { ratelimit: '"b";r=3;t=1', 'ratelimit-policy': '"b";q=10;w=1;qu="content-bytes"' },
          NOW,
        ),
      ).toEqual([]);
    });
  });

  describe('what lies, vanishes or is malformed', () => {
    it.each([
      ['a negative limit', { 'x-ratelimit-limit-requests': '-5' }],
      ['a fractional limit', { 'x-ratelimit-limit-requests': '2.5' }],
      ['a zero limit', { 'x-ratelimit-limit-requests': '0' }],
      ['a limit in words', { 'x-ratelimit-limit-requests': 'lots' }],
      ['a limit beyond any tier', { 'x-ratelimit-limit-requests': '99999999999999' }],
      ['an empty value', { 'x-ratelimit-limit-requests': '' }],
      ['two values that differ', { 'x-ratelimit-limit-requests': '100, 50' }],
    ])('reads no limit from %s', (_, headers) => {
      expect(readLimitHeaders('openai', headers, NOW)).toEqual([]);
    });

    it('takes one value sent twice the same', () => {
      expect(readLimitHeaders('openai', { 'x-ratelimit-limit-requests': '100, 100' }, NOW)).toEqual([
        { family: 'requests', limit: 100 },
      ]);
    });

    it('drops a remaining above the limit, and keeps the limit', () => {
      expect(
        readLimitHeaders('openai', { 'x-ratelimit-limit-requests': '10', 'x-ratelimit-remaining-requests': '11' }, NOW),
      ).toEqual([{ family: 'requests', limit: 10 }]);
    });

    it('drops a reset that is malformed, negative or further off than a month', () => {
      const reset = (text: string) =>
        readLimitHeaders('openai', { 'x-ratelimit-remaining-tokens': '5', 'x-ratelimit-reset-tokens': text }, NOW);

      expect(reset('soon')).toEqual([{ family: 'tokens', remaining: 5 }]);
      expect(reset('-3s')).toEqual([{ family: 'tokens', remaining: 5 }]);
      expect(reset('800h')).toEqual([{ family: 'tokens', remaining: 5 }]);
      expect(reset('1h')).toEqual([{ family: 'tokens', remaining: 5, resetAt: NOW + 3_600_000 }]);
    });

    it('reads nothing with the format none', () => {
      expect(readLimitHeaders('none', { 'x-ratelimit-limit-requests': '10', 'ratelimit-limit': '5' }, NOW)).toEqual([]);
    });
  });
});

describe('goDurationMs', () => {
  it.each([
    ['6m0s', 360_000],
    ['1h2m3.5s', 3_723_500],
    ['20ms', 20],
    ['0s', 0],
    ['1.5us', 0.0015],
  ])('reads %s as %d ms', (text, ms) => {
    expect(goDurationMs(text)).toBeCloseTo(ms, 6);
  });

  it.each(['', '6', 'm', '1.s', '-1s', '1d'])("refuses '%s'", (text) => {
    expect(goDurationMs(text)).toBeUndefined();
  });
});
