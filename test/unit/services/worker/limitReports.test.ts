import { LimitReportMemory } from '../../../../lib/services/worker/limitReportMemory';
import { reportLimits } from '../../../../lib/services/worker/limitReports';
import { processJob } from '../../../../lib/services/worker/processJob';
import {
  LANE,
  START,
  httpStatus,
  receiveJobEvent,
  sendJob,
  testConfig,
  workerHarness,
} from '../../../helpers/serviceFixtures';

/** 10 requests a second and 100 a minute, with OpenAI's headers. */
const config = testConfig({
  quotas: [
    { limit: 10, per: 'second' },
    { limit: 100, per: 'minute' },
  ],
  limits: { headers: 'openai' },
});

const limited = (limit: number, remaining: number) =>
  httpStatus(200, {
    'x-ratelimit-limit-requests': String(limit),
    'x-ratelimit-remaining-requests': String(remaining),
    'x-ratelimit-reset-requests': '30s',
  });

describe('reportLimits', () => {
  it("records the answer's limit headers as the family's latest reading, read at the answer", async () => {
    const h = workerHarness(config);

    await reportLimits(limited(80, 79), { kind: 'success' }, START + 5, LANE, h.deps);

    await expect(h.stores.limits.loadObservations(LANE)).resolves.toEqual({
      readings: [{ family: 'requests', limit: 80, remaining: 79, resetAt: START + 30_005, at: START + 5 }],
    });
  });

  it('records through a job: the headers of its call, beside its ending', async () => {
    const h = workerHarness(config);
    await sendJob(h.queues, 'main', { id: 'a' });
    h.api.answers.push(limited(80, 79));

    await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), h.deps)).resolves.toBe('succeeded');

    const { readings } = await h.stores.limits.loadObservations(LANE);
    expect(readings).toEqual([expect.objectContaining({ family: 'requests', limit: 80, remaining: 79 })]);
  });

  it('records only news to the container: a new limit, a remaining that turns low, a low one a second later', async () => {
    const h = workerHarness(config);
    const deps = { ...h.deps, limitReports: new LimitReportMemory() };
    const report = (limit: number, remaining: number, at: number) =>
      reportLimits(limited(limit, remaining), { kind: 'success' }, at, LANE, deps);

    await report(100, 99, START); // first: news
    await report(100, 90, START + 100); // same limit, not low: nothing
    await report(100, 40, START + 200); // turns low: news
    await report(100, 30, START + 300); // low again within a second: nothing
    await report(100, 20, START + 1_200); // low, a second on: news
    await report(70, 69, START + 1_300); // a new limit: news

    expect(h.stores.stats.writes).toBe(4);
    const { readings } = await h.stores.limits.loadObservations(LANE);
    expect(readings).toEqual([expect.objectContaining({ limit: 70, remaining: 69, at: START + 1_300 })]);
  });

  it('records a 429 that no header explains, and not one whose headers say nothing remains', async () => {
    const h = workerHarness(config);
    const rateLimited = { kind: 'rate-limited' as const, reason: 'HTTP 429', retryAfterMs: 1_000 };

    await reportLimits(httpStatus(429), rateLimited, START, LANE, h.deps);
    await reportLimits(limited(100, 0), rateLimited, START + 10, LANE, h.deps);

    await expect(h.stores.limits.loadObservations(LANE)).resolves.toEqual({
      readings: [expect.objectContaining({ remaining: 0, at: START + 10 })],
      rateLimitedAt: START,
    });
  });

  it('reads nothing when the lane learns nothing', async () => {
    const h = workerHarness(testConfig({ limits: { headers: 'openai', learn: 'off' } }));

    await reportLimits(limited(80, 0), { kind: 'rate-limited', reason: 'HTTP 429' }, START, LANE, h.deps);

    await expect(h.stores.limits.loadObservations(LANE)).resolves.toEqual({ readings: [] });
  });

  it('never throws when the store fails: the job goes on as it would', async () => {
    const h = workerHarness(config);
    const failing = {
      ...h.deps,
      stores: {
        ...h.deps.stores,
        limits: {
          recordReading: () => Promise.reject(new Error('DynamoDB is down')),
          recordRateLimited: () => Promise.reject(new Error('DynamoDB is down')),
        },
      },
    };

    await expect(
      reportLimits(limited(80, 0), { kind: 'rate-limited', reason: 'HTTP 429' }, START, LANE, failing),
    ).resolves.toBeUndefined();
  });

  it('ignores what is not an answer', async () => {
    const h = workerHarness(config);

    await reportLimits(
      { kind: 'timeout', afterMs: 1_000 },
      { kind: 'transient', reason: 'timeout' },
      START,
      LANE,
      h.deps,
    );

    expect(h.stores.stats.writes).toBe(0);
  });
});
