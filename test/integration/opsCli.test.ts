import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../lib/adapters/systemClock';
import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';
import type { LaneControlResult } from '../../lib/services/operator/laneControl';
import type { LimitsResult } from '../../lib/services/operator/limitOverrides';
import { startApiServer, type ApiServer } from '../../tools/local/apiServer';
import { runLocal, type LocalRunResult } from '../../tools/local/localRun';
import { packagedTemplate } from '../../tools/local/packageService';
import { writeStackFile, type LocalStackInfo } from '../../tools/local/stackFile';
import { pause, waitFor } from '../../tools/local/waitFor';
import type { DeadLetter } from '../../tools/ops/deadLetters';
import type { JobStatus } from '../../tools/ops/jobStatus';
import type { OpsStatus } from '../../tools/ops/laneOps';
import type { RedriveResult } from '../../tools/ops/redrive';
import { parseScenario } from '../../tools/simulation/scenario';
import { VirtualApi } from '../../tools/simulation/virtualApi';
import { jobFieldsOf } from '../../tools/simulation/jobs';
import { testEmulators } from '../helpers/awsClients';
import { jsonOf, ops } from '../tools/ops/opsIo';

/** The job the API refuses (400) until the test fixes it. */
const BROKEN = 'ops-13';
const JOBS = 50;

/**
 * The quota referee, behind a switch: while `broken`, a call for {@link BROKEN} is answered 400 (as an API refuses a
 * job it cannot do) without reaching the referee.
 */
class SwitchedApi implements ApiCaller {
  broken = true;
  constructor(readonly referee: VirtualApi) {}

  call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    if (this.broken && jobFieldsOf(body).id === BROKEN)
      return Promise.resolve({ kind: 'response', status: 400, headers: {}, body: 'no such recipient' });
    return this.referee.call(body, context);
  }

  probe(): Promise<ApiResult> {
    return this.referee.probe();
  }
}

describe('the operator CLI against the local stack (npm start -- --keep)', () => {
  const scenario = parseScenario({
    name: 'ops',
    seed: 13,
    quotas: [
      { limit: 5, per: 'second' },
      { limit: 1000, per: 'day' },
    ],
    jobs: { count: 1 },
    pacing: { rampSeconds: 1 },
    // The kept stack is fed after its first run has reported: that run goes on rather than end for want of work.
    orchestrator: { idleStopMs: 900_000 },
    maxSeconds: 60,
  });
  const referee = new VirtualApi({ clock: systemClock, tiers: scenario.config.quotas, latencyMs: 10 });
  const api = new SwitchedApi(referee);
  let server: ApiServer;
  let stop: () => void = () => undefined;
  let run: Promise<LocalRunResult>;
  let local: string[];
  const dir = mkdtempSync(join(tmpdir(), 'ops-cli-'));

  /** `ops` on the kept stack. */
  const onStack = (...argv: string[]) => ops([...argv, ...local]);
  let lastStatus: OpsStatus | undefined;
  const status = async () => (lastStatus = jsonOf<OpsStatus>(await onStack('status', '--json')));
  /** Waits for `check`; on a timeout, says what the last status and the API showed. */
  const until = <T>(check: () => T | false | Promise<T | false>, what: string, timeoutMs: number): Promise<T> =>
    waitFor(check, { timeoutMs, what }).catch((error: unknown) => {
      const succeeded = referee.succeededIds().filter((id) => id.startsWith('ops-')).length;
      throw new Error(
        `${(error as Error).message}\n${succeeded} ops jobs succeeded; last status: ${JSON.stringify(lastStatus)}`,
        { cause: error },
      );
    });
  const calls = (id?: string) => referee.callLog.filter((c) => id === undefined || c.id === id);

  beforeAll(async () => {
    server = await startApiServer(api);
    const template = await packagedTemplate();
    const kept = new Promise<LocalStackInfo>((resolve, reject) => {
      run = runLocal({
        scenario,
        overrides: ['quotas', 'pacing', 'orchestrator'],
        template,
        emulators: testEmulators(),
        externalApi: server,
        keep: { onKept: (stack) => resolve(stack), until: new Promise<void>((resolve) => (stop = resolve)) },
      });
      run.catch(reject);
    });
    const file = writeStackFile(join(dir, 'local-stack.json'), await kept);
    local = ['--local', file];
  }, 120_000);

  afterAll(async () => {
    stop();
    await run;
    await server.close();
  }, 60_000);

  it('enqueues, pauses and resumes dispatch, redrives a dead letter that then succeeds, and reports the tiers', async () => {
    // enqueue: 50 jobs, and a line that is not a job, reported by its number.
    const lines = Array.from({ length: JOBS }, (_, i) =>
      JSON.stringify({ body: { id: `ops-${i + 1}` }, idempotencyKey: `ops-${i + 1}` }),
    );
    const jobs = join(dir, 'jobs.ndjson');
    writeFileSync(jobs, [...lines.slice(0, 20), '{"body": ', ...lines.slice(20)].join('\n'));
    const enqueued = await onStack('enqueue', jobs, '--json');
    expect(enqueued.code).toBe(1);
    expect(jsonOf(enqueued)).toEqual({
      queue: 'main',
      sent: JOBS,
      failed: [{ line: 21, reason: expect.stringMatching(/^not JSON/) }],
    });

    // pause: once the jobs already dispatched have ended, the API sees no call while the lane is paused.
    await until(() => calls().length >= 10, 'dispatch to start', 15_000);
    const paused = await onStack('pause', '--by', 'test-operator', '--json');
    expect(jsonOf<LaneControlResult>(paused)).toMatchObject({
      action: 'pause',
      changed: true,
      paused: { by: 'test-operator' },
    });
    await until(
      async () => {
        const { queues } = await status();
        return queues.main.inFlight + queues.requeue.inFlight + queues.fifo.inFlight === 0;
      },
      'the jobs dispatched before the pause to end',
      10_000,
    );
    const callsWhenQuiet = calls().length;
    await pause(3_000);
    expect(calls().length).toBe(callsWhenQuiet);
    const whilePaused = await status();
    expect(whilePaused.paused).toMatchObject({ by: 'test-operator' });
    expect(whilePaused.queues.main.visible).toBeGreaterThan(0);

    // job: a job sent while the lane is paused is queued, and says what holds it back.
    const held = join(dir, 'held.ndjson');
    writeFileSync(held, JSON.stringify({ body: { id: 'held-1' }, idempotencyKey: 'held-1' }));
    expect((await onStack('enqueue', held, '--json')).code).toBe(0);
    expect(jsonOf<JobStatus>(await onStack('job', 'held-1', '--json'))).toMatchObject({
      state: 'queued',
      key: 'held-1',
      record: { state: 'none' },
      waiting: { reasons: expect.arrayContaining(['paused by test-operator']), perSecond: 5 },
    });
    expect((await onStack('job', 'held-1')).stdout).toContain('The lane is held: paused by test-operator');

    // resume: every job ends; the broken one is dead-lettered with its reason. From the main queue, or from the requeue
    // queue when its dispatch was held back by the pause (returned unconsumed, as a copy in the requeue queue).
    expect(jsonOf<LaneControlResult>(await onStack('resume', '--by', 'test-operator', '--json'))).toMatchObject({
      action: 'resume',
      changed: true,
      paused: null,
    });
    const deadLettered = (queues: OpsStatus['queues']) => queues['main-dlq'].visible + queues['requeue-dlq'].visible;
    await until(
      async () =>
        deadLettered((await status()).queues) === 1 &&
        referee.succeededIds().filter((id) => id.startsWith('ops-')).length === JOBS - 1,
      'every job but the broken one to succeed, and the broken one to be dead-lettered',
      30_000,
    );
    // job: a job that succeeded says when, by which dispatch, and where its result went (this stack sets no result
    // destination: it was dropped).
    expect(jsonOf<JobStatus>(await onStack('job', 'ops-1', '--json'))).toMatchObject({
      state: 'succeeded',
      record: { state: 'succeeded', dispatchId: expect.any(String), result: 'none' },
    });
    expect((await onStack('job', 'ops-1')).stdout).toContain('result: dropped (the lane has no result destination)');
    const [letter, ...others] = jsonOf<DeadLetter[]>(await onStack('dlq', 'list', '--json'));
    expect(others).toEqual([]);
    expect(letter).toMatchObject({ attempt: 1, body: `{"id":"${BROKEN}"}`, reason: expect.stringContaining('400') });
    expect([`${letter?.dlq} ← ${letter?.source}`]).toEqual([
      expect.stringMatching(/^(main-dlq ← main|requeue-dlq ← requeue)$/),
    ]);
    expect((await onStack('dlq', 'list')).stdout).toContain(letter?.reason ?? 'no reason');

    // job: the broken job is dead-lettered, with its reason, whether asked by its key or by its letter's message id.
    const byKey = jsonOf<JobStatus>(await onStack('job', BROKEN, '--json'));
    expect(byKey).toMatchObject({
      state: 'dead-lettered',
      key: BROKEN,
      record: { state: 'dead-lettered', attemptsSpent: 1 },
      deadLetter: { messageId: letter?.messageId, queue: letter?.dlq, reason: letter?.reason },
    });
    expect(jsonOf<JobStatus>(await onStack('job', letter?.messageId ?? '', '--json'))).toMatchObject({
      state: 'dead-lettered',
      key: BROKEN,
      deadLetter: { messageId: letter?.messageId },
    });

    // redrive, once the API is fixed: the job comes back with its key reopened, and succeeds.
    api.broken = false;
    const redriven = jsonOf<{ results: RedriveResult[]; missing: string[] }>(await onStack('dlq', 'redrive', '--json'));
    expect(redriven).toEqual({
      results: [
        expect.objectContaining({
          messageId: letter?.messageId,
          to: letter?.source,
          idempotencyKey: BROKEN,
          keyWas: 'dead-lettered',
          outcome: 'redriven',
        }),
      ],
      missing: [],
    });
    await until(() => calls(BROKEN).some((c) => c.status === 200), 'the redriven job to succeed', 15_000);
    const succeeded = await until(
      async () => {
        const job = jsonOf<JobStatus>(await onStack('job', BROKEN, '--json'));
        return job.state === 'succeeded' && job;
      },
      'the redriven job to be recorded as succeeded',
      10_000,
    );
    expect(succeeded).toMatchObject({ record: { state: 'succeeded', at: expect.any(Number) } });
    expect(succeeded.waiting).toBeUndefined();

    // status --json: each tier's usage against its limit; nothing is left in the queues.
    const final = await until(
      async () => {
        const s = await status();
        return (
          (s.tiers[1]?.used ?? 0) >= JOBS + 2 &&
          s.queues.main.visible +
            s.queues.main.inFlight +
            s.queues.requeue.visible +
            s.queues.requeue.inFlight +
            deadLettered(s.queues) ===
            0 &&
          s
        );
      },
      'the ledger to count every call',
      10_000,
    );
    expect(final.tiers).toEqual([
      expect.objectContaining({ tier: '5/second', per: 'second', limit: 5 }),
      expect.objectContaining({
        tier: '1000/day',
        per: 'day',
        limit: 1000,
        used: expect.any(Number),
        resetsAt: expect.any(Number),
      }),
    ]);
    expect(final.circuit.status).toBe('closed');
    expect(referee.report().rejectedByApi).toBe(0);
  }, 90_000);

  it('overrides a tier without a deploy: the run paces at the lower limit from its next save, until a reset', async () => {
    const refused = await onStack('limits', 'set', 'hour=5', '--json');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'no tier hour:requests is configured; the tiers are second:requests, day:requests',
    );

    const set = jsonOf<LimitsResult>(await onStack('limits', 'set', 'second=2', '--by', 'test-operator', '--json'));
    expect(set).toMatchObject({
      kind: 'lane',
      action: 'set',
      changed: true,
      override: { by: 'test-operator', tiers: [{ tier: 'second:requests', configured: 5, limit: 2 }] },
    });
    const overridden = await status();
    expect(overridden.override).toEqual(set.override);
    expect(overridden.tiers[0]).toMatchObject({ tier: '2/second', limit: 2 });
    expect((await onStack('status')).stdout).toContain('limits overridden by test-operator');

    // The run's saves come every 2 s: after one, its pace is 2 calls a second.
    await pause(2_500);
    const from = calls().length;
    const lines = Array.from({ length: 12 }, (_, i) => JSON.stringify({ body: { id: `slow-${i + 1}` } }));
    const jobs = join(dir, 'slow.ndjson');
    writeFileSync(jobs, lines.join('\n'));
    expect((await onStack('enqueue', jobs, '--json')).code).toBe(0);
    await until(
      () => referee.succeededIds().filter((id) => id.startsWith('slow-')).length === 12,
      'the jobs sent under the override to succeed',
      30_000,
    );
    const arrivals = calls()
      .slice(from)
      .map((c) => c.at);
    const busiestSecond = Math.max(...arrivals.map((at) => arrivals.filter((t) => t > at - 1_000 && t <= at).length));
    expect(busiestSecond).toBe(2);

    const reset = jsonOf<LimitsResult>(await onStack('limits', 'reset', '--by', 'test-operator', '--json'));
    expect(reset).toMatchObject({ action: 'reset', changed: true, override: null });
    expect((await status()).tiers[0]).toMatchObject({ tier: '5/second', limit: 5 });
    expect(jsonOf<LimitsResult>(await onStack('limits', 'reset', '--json'))).toMatchObject({ changed: false });
  }, 60_000);
});
