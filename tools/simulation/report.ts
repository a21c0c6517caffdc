import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import { unitsFor } from '../../lib/domain/quota/tiers';
import { jobIdOf, type JobSpec } from './jobs';
import { optimalSeconds } from './optimal';
import { outageTimes, type Scenario } from './scenario';
import { type VirtualApiReport } from './virtualApi';
import { jobUsage } from './llmAnswers';

/** The report of a local run: the local run's report contract (docs/local-run.md), field for field. */
export interface Report {
  readonly jobs: number;
  readonly succeeded: number;
  readonly deadLettered: number;
  /** Jobs that are nowhere when the run ended: neither succeeded, nor dead-lettered, nor in a source queue. */
  readonly lost: number;
  /**
   * Jobs neither succeeded nor dead-lettered when the run's time ran out, but still in a source queue (waiting,
   * delayed, or received and not deleted): work that could not go yet, such as an hour tier's next window.
   */
  readonly stillQueued: number;
  /** Successful API calls beyond the first per job. */
  readonly duplicates: number;
  /** Job calls that reached the API (health probes excluded). */
  readonly apiCalls: number;
  /** Job calls the API refused with 429 for exceeding its quota. */
  readonly rejectedByApi: number;
  /** `idealSeconds / durationSeconds`: how much of the quota the run used while it had work. */
  readonly utilization: number;
  /** Worker starts (jobs and health checks) per job. */
  readonly invocationsPerJob: number;
  readonly circuitOpened: number;
  readonly circuitClosed: number;
  readonly fifoOrderViolations: number;
  /** From the start until every job had ended. */
  readonly durationSeconds: number;
  /** The tightest tier's time for all job calls at its full rate, plus the time the API was down. */
  readonly idealSeconds: number;
  /**
   * The physical optimum: the time to the last job call when each goes as soon as every tier allows it and the API
   * is up (see {@link optimalSeconds}). Shorter than `idealSeconds` where a longer tier's window can be spent early.
   */
  readonly optimalSeconds: number;
  /** From the start until the last job call arrived at the API (0 without a call). */
  readonly lastCallSeconds: number;
  /**
   * The share of the physical optimum: `optimalSeconds / lastCallSeconds`, at most 1 (1 when neither took any time):
   * how close the run came to sending every call as soon as every tier allowed it.
   */
  readonly optimumShare: number;
}

/** A circuit status as written to the store, for timelines. */
export interface CircuitChange {
  readonly at: number;
  readonly status: CircuitJSON['state']['status'];
}

/** The report for a person: five lines, led by the share of the physical optimum. */
export function formatReport(report: Report): string {
  return [
    `share of the physical optimum: ${(report.optimumShare * 100).toFixed(1)} % (last call at ${report.lastCallSeconds} s; every tier allowed it at ${report.optimalSeconds} s)`,
    `jobs ${report.jobs}: ${report.succeeded} succeeded, ${report.deadLettered} dead-lettered, ${report.stillQueued} still queued, ${report.lost} lost, ${report.duplicates} duplicates`,
    `API: ${report.apiCalls} calls, ${report.rejectedByApi} rejected by its quota, ${report.fifoOrderViolations} FIFO order violations`,
    `circuit: opened ${report.circuitOpened}x, closed ${report.circuitClosed}x; ${report.invocationsPerJob} worker invocations per job`,
    `time: ${report.durationSeconds} s, ideal ${report.idealSeconds} s, optimal ${report.optimalSeconds} s, utilization ${(report.utilization * 100).toFixed(1)} %`,
  ].join('\n');
}

/** What a run observed, from which {@link buildReport} derives the report. */
export interface RunObservations {
  readonly scenario: Scenario;
  readonly jobs: readonly JobSpec[];
  /** The API's own counters. */
  readonly api: VirtualApiReport;
  /** Job ids the API answered 200 at least once. */
  readonly succeededIds: ReadonlySet<string>;
  /** Bodies of the messages found in the dead-letter queues at the end. */
  readonly deadLetterBodies: readonly string[];
  /**
   * Bodies of the messages the source queues still held at the end, waiting, delayed or in flight (a job requeued
   * has one copy or more), taken before the succeeded jobs and the dead letters, so that a job on its way out of a
   * queue is seen in one or the other.
   */
  readonly queuedBodies: readonly string[];
  /** Circuit statuses in the order they were written, starting with the closed circuit every lane begins with. */
  readonly circuitChanges: readonly CircuitChange[];
  /** Worker starts, jobs and health checks together. */
  readonly invocations: number;
  /** The instant the run started. */
  readonly start: number;
  /** From the start until every job had ended (or the run gave up). */
  readonly durationMs: number;
  /** When the last job call arrived at the API. @default none: no call did */
  readonly lastCallAt?: number;
}

/**
 * The report from what a run observed. A job has ended when it succeeded or its body sits in a dead-letter queue; one
 * that has not is still queued when its body is in a source queue, else lost.
 */
export function buildReport(observed: RunObservations): Report {
  const { scenario, jobs, api, succeededIds, deadLetterBodies, circuitChanges: changes } = observed;
  const deadBodies = new Set(deadLetterBodies);
  const queuedBodies = new Set(observed.queuedBodies);
  const open = jobs.filter((job) => !deadBodies.has(job.body) && !succeededIds.has(jobIdOf(job.body) ?? ''));
  const stillQueued = open.filter((job) => queuedBodies.has(job.body)).length;
  const outageSeconds = scenario.api.outages.reduce((sum, o) => sum + o.forSeconds, 0);
  const durationSeconds = observed.durationMs / 1000;
  const idealSeconds = idealCallSeconds(scenario, jobs) + outageSeconds;
  const { quotas, timeZone } = scenario.config;
  const optimal = optimalSeconds(
    quotas,
    callable(jobs).map((job) => jobUsage(job, scenario.api.llm)),
    { start: observed.start, timeZone, downTimes: outageTimes(scenario.api.outages, observed.start) },
  );
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const lastCallSeconds =
    observed.lastCallAt === undefined ? 0 : Math.max(0, observed.lastCallAt - observed.start) / 1000;
  return {
    jobs: jobs.length,
    succeeded: succeededIds.size,
    deadLettered: deadLetterBodies.length,
    lost: open.length - stillQueued,
    stillQueued,
    duplicates: api.duplicates,
    apiCalls: api.apiCalls,
    rejectedByApi: api.rejectedByApi,
    utilization: round(durationSeconds === 0 ? 0 : idealSeconds / durationSeconds),
    invocationsPerJob: round(observed.invocations / jobs.length),
    circuitOpened: changes.filter((c, i) => c.status === 'open' && changes[i - 1]?.status !== 'half-open').length,
    circuitClosed: changes.filter((c, i) => i > 0 && c.status === 'closed').length,
    fifoOrderViolations: api.fifoOrderViolations,
    durationSeconds: round(durationSeconds),
    idealSeconds: round(idealSeconds),
    optimalSeconds: optimal,
    lastCallSeconds: round(lastCallSeconds),
    optimumShare: round(optimumShare(optimal, lastCallSeconds)),
  };
}

/** {@link RunObservations.lastCallAt} from the calls the API saw: when the last of them arrived, if any did. */
export function optionalLastCall(calls: readonly { readonly at: number }[]): { readonly lastCallAt?: number } {
  let last: number | undefined;
  for (const { at } of calls) last = last === undefined ? at : Math.max(last, at);
  return last === undefined ? {} : { lastCallAt: last };
}

/** `optimal / last`, at most 1; 1 when both are 0, 0 when only the optimum is. */
function optimumShare(optimal: number, last: number): number {
  if (last <= 0) return optimal <= 0 ? 1 : 0;
  return Math.min(1, optimal / last);
}

/** The well-formed jobs: those whose call reaches the API. */
function callable(jobs: readonly JobSpec[]): JobSpec[] {
  return jobs.filter((job) => jobIdOf(job.body) !== undefined);
}

/** Seconds the tightest tier needs for one call per well-formed job at its steady rate (a calendar tier has none). */
function idealCallSeconds(scenario: Scenario, jobs: readonly JobSpec[]): number {
  const perTier = scenario.config.quotas.flatMap((tier) => {
    const rate = tier.steadyRate();
    return rate === undefined
      ? []
      : [
          (callable(jobs).reduce((sum, job) => sum + unitsFor(tier, jobUsage(job, scenario.api.llm)), 0) * rate.perMs) /
            rate.units /
            1000,
        ];
  });
  return Math.max(0, ...perTier);
}
