import { runLocal } from '../local/localRun';
import type { Template } from '../local/template';
import { buildJobs } from '../simulation/jobs';
import { seededRandom } from '../simulation/random';
import { parseScenario, type Scenario } from '../simulation/scenario';
import { tiersPerSecond } from './measures';
import { classWaits, lowestBulkShare, type ClassWaits } from './priorityMeasures';
import type { BenchSize } from './scenarios';
import { formatFixedWidth } from './table';

/** Over how long a span the bench takes the share of the calls that went to bulk jobs (see `lowestBulkShare`). */
const SHARE_WINDOW_SECONDS = 10;

/** What the priorities scenario measured (see {@link runPriorities}). */
export interface PrioritiesResult {
  readonly name: string;
  /** The lane's `priorities.bulkShare`: the least share of the dispatches bulk gets while it has jobs waiting. */
  readonly bulkShare: number;
  readonly durationSeconds: number;
  readonly apiCalls: number;
  readonly rejectedByApi: number;
  readonly lost: number;
  /** Each class's waits, against plain arrival order at the quota's rate. */
  readonly classes: readonly ClassWaits[];
  /** The lowest share of the calls of any 10 s that went to bulk jobs while some waited: the bound, measured. */
  readonly lowestBulkShare: number | undefined;
}

/**
 * The priorities scenario: on 20 calls a second, a backlog of bulk jobs from the start, and main jobs arriving at 15
 * a second (within the main class's 90 %) and then at 30 (more than the whole quota, so the bound binds). Full: 600
 * of each, main arriving for 20 s and then 10 s; quick: 150 of each, for 5 s and then 2.5 s.
 */
export function prioritiesScenario(size: BenchSize): Scenario {
  const each = size === 'full' ? 600 : 150;
  const phase = size === 'full' ? 20 : 5;
  return parseScenario({
    name: 'priorities',
    seed: 13,
    quotas: [{ limit: 20, per: 'second' }],
    priorities: { bulkShare: 0.1 },
    jobs: {
      count: 2 * each,
      bulk: each,
      arrivals: [
        { perSecond: 15, forSeconds: phase },
        { perSecond: 30, forSeconds: phase / 2 },
      ],
    },
    api: { latencyMs: 50 },
    maxSeconds: 600,
  });
}

/**
 * Runs the priorities scenario on the local stack (as the orchestrator strategy runs, with AWS's timing: late starts
 * and second deliveries) and measures each class.
 */
export async function runPriorities(size: BenchSize, template: Template): Promise<PrioritiesResult> {
  const scenario = prioritiesScenario(size);
  const run = await runLocal({ scenario, overrides: ['quotas', 'priorities'], template });
  const jobs = buildJobs(scenario, seededRandom(scenario.seed));
  return {
    name: scenario.name,
    bulkShare: scenario.config.priorities.bulkShare,
    durationSeconds: run.report.durationSeconds,
    apiCalls: run.report.apiCalls,
    rejectedByApi: run.report.rejectedByApi,
    lost: run.report.lost,
    classes: classWaits(jobs, run.calls, run.start, tiersPerSecond(scenario.config.quotas)),
    lowestBulkShare: lowestBulkShare(jobs, run.calls, run.start, SHARE_WINDOW_SECONDS),
  };
}

/** The priorities scenario as a table: each class's waits against arrival order, and bulk's lowest share. */
export function prioritiesTable(result: PrioritiesResult, size: BenchSize): string {
  const s = (seconds: number) => `${seconds.toFixed(1)} s`;
  const shape = prioritiesScenario(size);
  const phases = (shape.jobs.arrivals ?? []).map((p) => `${p.perSecond}/s for ${p.forSeconds} s`).join(', then ');
  return [
    `${result.name} (${shape.jobs.count} jobs on ${shape.config.quotas.map((t) => `${t.limit}/${t.per}`).join(', ')}: ${shape.jobs.bulk} bulk jobs in the backlog from the start, main jobs arriving at ${phases}; bulkShare ${result.bulkShare}; ${result.durationSeconds.toFixed(1)} s, ${result.apiCalls} calls, ${result.rejectedByApi} refused, ${result.lost} lost)`,
    formatFixedWidth(
      [
        { header: 'class', align: 'left' },
        { header: 'jobs', align: 'right' },
        { header: 'median wait', align: 'right' },
        { header: 'p99 wait', align: 'right' },
        { header: 'arrival order: median', align: 'right' },
        { header: 'p99', align: 'right' },
      ],
      result.classes.map((c) => ({
        cells: [
          c.class,
          String(c.jobs),
          s(c.medianSeconds),
          s(c.p99Seconds),
          s(c.arrivalOrderMedianSeconds),
          s(c.arrivalOrderP99Seconds),
        ],
      })),
    ),
    `bulk's lowest share of the calls in any ${SHARE_WINDOW_SECONDS} s while it had jobs waiting: ${result.lowestBulkShare?.toFixed(3) ?? 'n/a'} (the bound: bulkShare ${result.bulkShare})`,
  ].join('\n');
}
