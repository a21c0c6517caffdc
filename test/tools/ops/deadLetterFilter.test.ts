import type { DeadLetter } from '../../../tools/ops/deadLetters';
import { filters, parseAge, passes, reasonClassOf } from '../../../tools/ops/deadLetterFilter';

const NOW = Date.UTC(2026, 10, 29, 12);
const HOUR = 3_600_000;

/** A dead letter of `reason` (none: SQS moved it), dead-lettered `hoursAgo` before {@link NOW}. */
function letter(reason: string | undefined, hoursAgo: number): DeadLetter {
  return {
    dlq: 'main-dlq',
    source: 'main',
    messageId: 'm-1',
    receiptHandle: 'h-1',
    body: '{}',
    attributes: {},
    ...(reason === undefined ? {} : { reason }),
    deadLetteredAt: NOW - hoursAgo * HOUR,
    receiveCount: 1,
  };
}

describe('reasonClassOf', () => {
  it.each([
    ['permanent: HTTP 400 Bad Request', 'permanent'],
    ['gave up after 5 attempts: HTTP 503', 'attempts-exhausted'],
    ['malformed: body is not JSON', 'malformed'],
    ['cost 900 exceeds the limit of tier 500/minute', 'over-quota'],
    ['something new', 'other'],
  ])("classes '%s' as %s, as the DeadLetters metric does", (reason, expected) => {
    expect(reasonClassOf({ reason })).toBe(expected);
  });

  it('classes a letter without a reason as max-receives: SQS moved it', () => {
    expect(reasonClassOf({})).toBe('max-receives');
  });
});

describe('passes', () => {
  it('passes every letter when the filter asks nothing', () => {
    expect(filters({})).toBe(false);
    expect(passes(letter(undefined, 0), {}, NOW)).toBe(true);
  });

  it('passes only letters of the reason classes asked for', () => {
    const filter = { reasons: ['permanent', 'max-receives'] as const };

    expect(filters(filter)).toBe(true);
    expect(passes(letter('permanent: HTTP 404', 1), filter, NOW)).toBe(true);
    expect(passes(letter(undefined, 1), filter, NOW)).toBe(true);
    expect(passes(letter('gave up after 3 attempts: timeout', 1), filter, NOW)).toBe(false);
  });

  it('passes a letter at least olderThan old, and one less than newerThan old', () => {
    expect(passes(letter('permanent: x', 2), { olderThanMs: 2 * HOUR }, NOW)).toBe(true);
    expect(passes(letter('permanent: x', 1.9), { olderThanMs: 2 * HOUR }, NOW)).toBe(false);
    expect(passes(letter('permanent: x', 1.9), { newerThanMs: 2 * HOUR }, NOW)).toBe(true);
    expect(passes(letter('permanent: x', 2), { newerThanMs: 2 * HOUR }, NOW)).toBe(false);
  });

  it('asks every field given: an age range of one reason class', () => {
    const filter = { reasons: ['permanent'] as const, olderThanMs: HOUR, newerThanMs: 3 * HOUR };

    expect(passes(letter('permanent: x', 2), filter, NOW)).toBe(true);
    expect(passes(letter('permanent: x', 4), filter, NOW)).toBe(false);
    expect(passes(letter('malformed: x', 2), filter, NOW)).toBe(false);
  });
});

describe('parseAge', () => {
  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['2h', 7_200_000],
    ['7d', 604_800_000],
    ['0s', 0],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseAge(text)).toBe(ms);
  });

  it.each(['', '2', 'h', '1.5h', '-1h', '2w', '2 h x'])("refuses '%s'", (text) => {
    expect(parseAge(text)).toBeUndefined();
  });
});
