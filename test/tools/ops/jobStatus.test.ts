import { formatJob } from '../../../tools/ops/jobCommand';
import { laneHold, type JobStatus } from '../../../tools/ops/jobStatus';
import { opsStatus, STATUS_AT } from '../../helpers/opsStatus';

const AT = STATUS_AT;
const MIDNIGHT = Date.UTC(2026, 10, 27);
const status = opsStatus;

describe('laneHold', () => {
  it('holds nothing back on a lane that dispatches, and times its backlog at the tightest pace', () => {
    // 12 visible in the main queue, 2 retries delayed: 14 jobs at 10 a second.
    expect(laneHold(status())).toEqual({ reasons: [], queued: 14, perSecond: 10, backlogSeconds: 2 });
  });

  it('names a pause, the circuit, a 429, a spent tier and pool, and when the last of them lifts', () => {
    const hold = laneHold(
      status({
        paused: { by: 'ana@ops', since: AT - 60_000 },
        circuit: {
          status: 'open',
          reason: '3 failures',
          nextCheckAt: AT + 5_000,
          rateLimitedUntil: AT + 20_000,
          recentTransitions: [],
        },
        tiers: [
          { tier: '10/second', per: 'second', unit: 'requests', limit: 10, used: 10, remaining: 0 },
          {
            tier: '1000/day',
            per: 'day',
            unit: 'requests',
            limit: 1_000,
            used: 1_000,
            remaining: 0,
            resetsAt: MIDNIGHT,
          },
        ],
        pools: [
          {
            pool: 'org',
            tiers: [{ tier: '50/minute', per: 'minute', unit: 'requests', limit: 50, used: 50, remaining: 0 }],
            lease: null,
            override: null,
          },
        ],
      }),
    );
    expect(hold.reasons).toEqual([
      'paused by ana@ops',
      'the circuit is open (3 failures)',
      'a 429 asked the lane to wait',
      'tier 10/second is spent (10 of 10)',
      'tier 1000/day is spent (1000 of 1000)',
      "pool 'org' tier 50/minute is spent (50 of 50)",
    ]);
    expect(hold.until).toBe(MIDNIGHT);
  });

  it('paces at a limit learnt and enforced, and says so', () => {
    const hold = laneHold(
      status({
        limits: {
          learn: 'enforce',
          learned: [{ tier: '10/second', configured: 10, limit: 4, source: 'header', since: AT - 1_000 }],
        },
      }),
    );
    expect(hold).toMatchObject({ perSecond: 4, backlogSeconds: 4 });
    expect(hold.reasons).toEqual(['tier 10/second paces at 4, learnt from the API (header)']);
  });

  it("names an operator's lowered limit, of the lane or of a pool, and paces the backlog at it", () => {
    const lowered = { tier: 'second:requests' as const, configured: 10, limit: 5 };
    const hold = laneHold(
      status({
        tiers: [{ tier: '5/second', per: 'second', unit: 'requests', limit: 5, used: 0, remaining: 5 }],
        override: { by: 'alice', at: AT - 1_000, tiers: [lowered] },
        pools: [
          {
            pool: 'org',
            tiers: [],
            lease: null,
            override: {
              by: 'bob',
              at: AT,
              tiers: [{ ...lowered, tier: 'minute:requests', configured: 600, limit: 900 }],
            },
          },
        ],
      }),
    );
    expect(hold).toMatchObject({ perSecond: 5, backlogSeconds: 3 });
    // The pool's override raises its tier: it holds nothing back.
    expect(hold.reasons).toEqual(["tier second:requests is held to 5 by alice's override (configured 10)"]);
  });
});

describe('formatJob', () => {
  const job = (overrides: Partial<JobStatus>): JobStatus => ({
    target: 'stage prod',
    lane: 'default',
    job: 'k-1',
    key: 'k-1',
    state: 'queued',
    record: { state: 'none' },
    at: AT,
    ...overrides,
  });

  it('says when a job succeeded', () => {
    expect(
      formatJob(job({ state: 'succeeded', record: { state: 'succeeded', at: AT - 90_000, dispatchId: 'd-9' } })),
    ).toBe(
      "Job 'k-1' on lane 'default' of stage prod, at 2026-11-26T09:40:00Z:\nsucceeded at 2026-11-26T09:38:30Z (90 s ago), dispatch d-9",
    );
  });

  it('says what a succeeded job used and where its result went', () => {
    const success = { state: 'succeeded' as const, at: AT - 90_000, dispatchId: 'd-9' };
    const handed = {
      ...success,
      usage: { input_tokens: 812, output_tokens: 96 },
      result: 'sqs arn:aws:sqs:us-east-1:123456789012:answers',
    };
    expect(
      formatJob(job({ state: 'succeeded', record: handed }))
        .split('\n')
        .slice(2),
    ).toEqual([
      'used: 1 request, 812 input_tokens, 96 output_tokens',
      'result: handed to sqs arn:aws:sqs:us-east-1:123456789012:answers (a result it did not take is logged as result-undelivered)',
    ]);
    expect(
      formatJob(job({ state: 'succeeded', record: { ...success, result: 'none' } }))
        .split('\n')
        .slice(2),
    ).toEqual(['used: 1 request', 'result: dropped (the lane has no result destination)']);
  });

  it('says where and why a job was dead-lettered, by the message id asked about', () => {
    const text = formatJob(
      job({
        job: 'm-77',
        state: 'dead-lettered',
        record: { state: 'dead-lettered', at: AT - 1_000, dispatchId: 'd-1', attemptsSpent: 3 },
        deadLetter: {
          queue: 'bulk-dlq',
          messageId: 'm-78',
          reason: 'attempts-exhausted: 503',
          deadLetteredAt: AT - 1_000,
        },
      }),
    );
    expect(text).toContain("Job 'm-77' (key 'k-1')");
    expect(text).toContain(
      'dead-lettered in bulk-dlq at 2026-11-26T09:39:59Z (1 s ago), message m-78; 3 attempt(s) spent',
    );
    expect(text).toContain('reason: attempts-exhausted: 503');
  });

  it('says what holds a queued job back, and how long the backlog takes', () => {
    const text = formatJob(job({ waiting: laneHold(status({ paused: { by: 'ana@ops', since: AT } })) }));
    expect(text).toContain('queued, or unknown');
    expect(text).toContain('The lane is held: paused by ana@ops.');
    expect(text).toContain('14 jobs queued, about 2 s at 10/s');
  });
});
