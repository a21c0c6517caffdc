import { boundedResultJson, requestsOf, utf8Bytes } from '../../../../lib/adapters/results/resultJson';
import type { JobResult } from '../../../../lib/ports/ResultHandler';

const RESULT: JobResult = {
  lane: 'default',
  queue: 'main',
  messageId: 'm-1',
  dispatchId: 'd-1',
  idempotencyKey: 'k-1',
  attempt: 1,
  at: 1_767_571_200_000,
  status: 200,
  headers: { 'content-type': 'text/plain' },
  body: 'hello',
  bodyTruncated: false,
};

describe('boundedResultJson', () => {
  it('is the JSON of the whole result when it fits', () => {
    expect(JSON.parse(boundedResultJson(RESULT, 10_000))).toEqual(RESULT);
  });

  it('cuts the body to fit, marking it truncated, and fills the bound exactly when it can', () => {
    const result = { ...RESULT, body: 'x'.repeat(5_000) };
    const text = boundedResultJson(result, 2_000);
    const parsed = JSON.parse(text) as JobResult;
    expect(utf8Bytes(text)).toBe(2_000);
    expect(parsed.bodyTruncated).toBe(true);
    expect(result.body.startsWith(parsed.body)).toBe(true);
    expect({ ...parsed, body: '' }).toEqual({ ...RESULT, body: '', bodyTruncated: true });
  });

  it('counts escapes and multi-byte characters, and never splits a surrogate pair', () => {
    const result = { ...RESULT, body: `"\n${'😀'.repeat(1_000)}` };
    for (const max of [700, 701, 702, 703]) {
      const text = boundedResultJson(result, max);
      expect(utf8Bytes(text)).toBeLessThanOrEqual(max);
      const { body } = JSON.parse(text) as JobResult;
      expect(result.body.startsWith(body)).toBe(true);
      expect(body).not.toMatch(/[\ud800-\udbff]$/);
    }
  });

  it('escapes U+FFFE and U+FFFF, which SQS refuses in a message', () => {
    const text = boundedResultJson({ ...RESULT, body: 'a\ufffeb\uffff' }, 10_000);
    expect(text).not.toMatch(/[\ufffe\uffff]/);
    expect((JSON.parse(text) as JobResult).body).toBe('a\ufffeb\uffff');
  });
});

describe('requestsOf', () => {
  it('cuts at the entry count and at the byte total, and sends an oversized item alone', () => {
    const sizes = [1, 1, 1, 1, 1, 6, 5, 20, 1];
    expect(requestsOf(sizes, (n) => n, 3, 10)).toEqual([[1, 1, 1], [1, 1, 6], [5], [20], [1]]);
  });
});
