import { buildReport, formatReport, type RunObservations } from '../../../tools/simulation/report';
import { parseScenario } from '../../../tools/simulation/scenario';
import type { JobSpec } from '../../../tools/simulation/jobs';

const START = Date.UTC(2026, 0, 5);
const scenario = parseScenario({ name: 'report', quotas: [{ limit: 10, per: 'second' }], jobs: { count: 4 } });
const job = (id: string): JobSpec => ({ queue: 'main', body: JSON.stringify({ id }), costs: { cost: 1 } });
const JOBS = ['a', 'b', 'c', 'd'].map(job);

/** What a run observed of `JOBS`: `a` succeeded, `b` dead-lettered, and the source queues held `queued`'s bodies. */
function observed(queued: readonly JobSpec[]): RunObservations {
  return {
    scenario,
    jobs: JOBS,
    api: { apiCalls: 2, rejectedByApi: 0, duplicates: 0, fifoOrderViolations: 0, probes: 0 },
    queuedBodies: queued.map((j) => j.body),
    succeededIds: new Set(['a']),
    deadLetterBodies: [JOBS[1]!.body],
    circuitChanges: [{ at: START, status: 'closed' }],
    invocations: 2,
    start: START,
    durationMs: 60_000,
  };
}

describe('buildReport', () => {
  it('counts a job still in a source queue when the run ended as still queued, and only a job that is nowhere as lost', () => {
    expect(buildReport(observed([JOBS[2]!]))).toMatchObject({
      jobs: 4,
      succeeded: 1,
      deadLettered: 1,
      stillQueued: 1,
      lost: 1,
    });
  });

  it('counts a job once however many copies of it the queues hold, and not at all once it has ended', () => {
    // A requeued job can sit in the queues twice (the copy sent, the original not yet deleted); a succeeded job's
    // message may wait for its delete.
    const report = buildReport(observed([JOBS[2]!, JOBS[2]!, JOBS[3]!, JOBS[0]!]));
    expect(report).toMatchObject({ stillQueued: 2, lost: 0 });
  });

  it('writes still-queued jobs apart from lost ones in the summary', () => {
    expect(formatReport(buildReport(observed([JOBS[2]!])))).toContain(
      'jobs 4: 1 succeeded, 1 dead-lettered, 1 still queued, 1 lost, 0 duplicates',
    );
  });

  it('leads the summary with the share of the physical optimum: when every tier allowed the last call, over when it came', () => {
    // On a 10/s tier the optimum sends the four jobs at once, at 0 s; on a 1/s tier at 0, 1, 2 and 3 s.
    const late = buildReport({ ...observed([]), lastCallAt: START + 2_000 });
    expect(late).toMatchObject({ optimalSeconds: 0, lastCallSeconds: 2, optimumShare: 0 });

    const tight = parseScenario({ name: 'tight', quotas: [{ limit: 1, per: 'second' }], jobs: { count: 4 } });
    const paced = buildReport({ ...observed([]), scenario: tight, lastCallAt: START + 4_000 });
    expect(paced).toMatchObject({ optimalSeconds: 3, lastCallSeconds: 4, optimumShare: 0.75 });
    expect(formatReport(paced).split('\n')[0]).toBe(
      'share of the physical optimum: 75.0 % (last call at 4 s; every tier allowed it at 3 s)',
    );
    expect(buildReport({ ...observed([]), scenario: tight, lastCallAt: START + 3_000 }).optimumShare).toBe(1);
    // No call at all: full marks only where the optimum sends none either.
    expect(buildReport(observed([])).optimumShare).toBe(1);
    expect(buildReport({ ...observed([]), scenario: tight }).optimumShare).toBe(0);
  });
});
