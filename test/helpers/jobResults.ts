import type { JobResult } from '../../lib/ports/ResultHandler';

/** The result of job `n` (ids `m-n`, `d-n`, `k-n`; a 200 with body `body n`), with `extra` over it. */
export function jobResult(n: number, extra: Partial<JobResult> = {}): JobResult {
  return {
    lane: 'default',
    queue: 'main',
    messageId: `m-${n}`,
    dispatchId: `d-${n}`,
    idempotencyKey: `k-${n}`,
    attempt: 1,
    at: 1_767_571_200_000 + n,
    status: 200,
    headers: {},
    body: `body ${n}`,
    bodyTruncated: false,
    ...extra,
  };
}
