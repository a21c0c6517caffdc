import { HOT_LANE_CALLS_PER_SECOND, type HotLaneLoad } from '../local/hotLaneReplay';
import type { Template } from '../local/template';
import { runBaseline } from './baselines';
import type { ChartPanel } from './chart';
import {
  costInputForResult,
  costPerMillionJobs,
  ORCHESTRATOR_MEMORY_MB,
  WORKER_MEMORY_MB,
  type CostLine,
} from './cost';
import { tiersPerSecond } from './measures';
import { runOrchestratorStrategy, type OrchestratorResult } from './orchestratorStrategy';
import type { SimulatedCeiling } from './simulatedCeiling';
import { STRATEGIES, type BenchScenario, type StrategyResult } from './types';

/** A baseline that has not finished by then reports what it did so far (a retry storm could otherwise run on). */
const BASELINE_TIME_LIMIT_MS = 300_000;

/**
 * Every strategy on one scenario, one after the other so that none competes with another for the machine.
 * @param onStart told the name of each strategy as it starts (progress for people).
 */
export async function compareStrategies(
  scenario: BenchScenario,
  template: Template,
  onStart: (name: string) => void = () => undefined,
): Promise<StrategyResult[]> {
  const results: StrategyResult[] = [];
  for (const name of STRATEGIES) {
    onStart(name);
    results.push(
      name === 'orchestrator'
        ? await runOrchestratorStrategy(scenario, { template })
        : await runBaseline(name, scenario, { timeLimitMs: BASELINE_TIME_LIMIT_MS }),
    );
  }
  return results;
}

/** A strategy's cost per million jobs, from its counts. */
export function costLine(result: StrategyResult): CostLine {
  if (result.unavailable !== undefined) return { name: result.name, unavailable: result.unavailable };
  if (result.name !== 'orchestrator')
    return { name: result.name, cost: costPerMillionJobs(costInputForResult(result)) };
  // The orchestrator's busy time counts its own function's time with the workers'; price each at its memory size.
  const { orchestratorSecondsPerJob } = result as OrchestratorResult;
  const workers = { ...result, workerBusySecondsPerJob: result.workerBusySecondsPerJob - orchestratorSecondsPerJob };
  return {
    name: result.name,
    cost: costPerMillionJobs(
      costInputForResult(workers, { orchestratorSecondsPerJob, orchestratorMemoryMb: ORCHESTRATOR_MEMORY_MB }),
    ),
  };
}

/**
 * What the orchestrator adds to the API's own price per million jobs: its whole cost but the workers' time waiting on
 * the API's answers, which any strategy pays.
 */
export function overheadPer1MJobs(result: OrchestratorResult): number {
  const total = costLine(result).cost?.total ?? Number.NaN;
  return (
    total -
    costPerMillionJobs({
      invocationsPerJob: 0,
      workerBusySecondsPerJob: result.apiCallSecondsPerJob,
      memoryMb: WORKER_MEMORY_MB,
    }).lambdaCompute
  );
}

/** The figures of a result for the JSON line: everything but the per-second series, with its price per million jobs. */
export function figures(result: StrategyResult): Record<string, unknown> {
  const counts = Object.fromEntries(Object.entries(result).filter(([key]) => key !== 'callsPerSecond'));
  const round = (usd: number): number => Math.round(usd * 1000) / 1000;
  const costPer1MJobsUsd = round(costLine(result).cost?.total ?? 0);
  return result.name === 'orchestrator' && result.unavailable === undefined
    ? { ...counts, costPer1MJobsUsd, overheadPer1MJobsUsd: round(overheadPer1MJobs(result as OrchestratorResult)) }
    : { ...counts, costPer1MJobsUsd };
}

/** The growth runs as a table: duration, dispatch rate, cost per job and memory per size. */
export function growthTable(results: readonly OrchestratorResult[], scenarios: readonly BenchScenario[]): string {
  const lines = [
    'growth (orchestrator alone):',
    '  jobs      duration s  dispatches/s  cost per 1M jobs  peak heap MB',
  ];
  results.forEach((r, i) => {
    const cost = costLine(r).cost?.total ?? Number.NaN;
    lines.push(
      `  ${String(scenarios[i]?.jobs).padEnd(8)}  ${r.durationSeconds.toFixed(1).padStart(10)}  ${r.dispatchesPerSecond.toFixed(1).padStart(12)}  ${`$${cost.toFixed(2)}`.padStart(16)}  ${r.peakHeapMb.toFixed(0).padStart(12)}`,
    );
  });
  return lines.join('\n');
}

/** Where a run's time went, one line per kind, largest first, with its share of the run's `total` seconds. */
function timeShares(time: Readonly<Record<string, number>>, total: number): string[] {
  return Object.entries(time)
    .sort(([, a], [, b]) => b - a)
    .map(
      ([key, seconds]) =>
        `    ${key.padEnd(36)} ${seconds.toFixed(2).padStart(7)} s  ${((seconds / total) * 100).toFixed(0).padStart(3)} %`,
    );
}

/**
 * The ceiling runs, on the local stack and in the simulation: the dispatches one orchestrator sustains, and where its
 * time went: its waits on each kind of request (in the simulation, their AWS latency), as a share of its run time.
 * Requests made at once (a refill's receives) overlap, so the shares can add up to more than the run.
 */
export function ceilingLines(result: OrchestratorResult, simulated: SimulatedCeiling, scenario: BenchScenario): string {
  const latency =
    scenario.awsLatency === undefined
      ? 'no added latency'
      : `Invoke ${scenario.awsLatency.lambdaMs} ms, DynamoDB ${scenario.awsLatency.dynamodbMs} ms, SQS ${scenario.awsLatency.sqsMs} ms added to each request`;
  const quota = `${scenario.quotas[0]?.limit}/${scenario.quotas[0]?.per}`;
  return [
    `ceiling (${latency}):`,
    `  local stack, ${scenario.jobs} jobs against ${quota}: ${result.dispatchesPerSecond} dispatches in the busiest second; the orchestrator's waits, of its ${(result.orchestratorSecondsPerJob * scenario.jobs).toFixed(1)} s run (requests made at once overlap):`,
    ...timeShares(result.orchestratorTime, result.orchestratorSecondsPerJob * scenario.jobs),
    `  its lane item (lease, ledger, pending settlements): largest write ${result.laneItem.largestWriteKb} KB, at most ${result.laneItem.peakWriteUnitsPerSecond} write units in a second (DynamoDB's limits: 400 KB, 1,000 a second per partition)`,
    `  simulation, ${simulated.jobs} jobs: ${simulated.dispatchesPerSecond} dispatches in the busiest second; its requests' latency, of its ${simulated.durationSeconds.toFixed(1)} s:`,
    ...timeShares(simulated.orchestratorTime, simulated.durationSeconds),
  ].join('\n');
}

/**
 * The hot-lane run: the busiest item's load at the dispatch rate the local stack reached, and at 1,000 calls a second
 * in the replay of its items (`replay`), against the state layout's target (under 64 KB and 500 write units a second
 * on any one item) and DynamoDB's limits (400 KB per item, 1,000 write units a second per partition).
 */
export function hotLaneLines(result: OrchestratorResult, scenario: BenchScenario, replay: HotLaneLoad): string {
  const { hotItems } = result;
  return [
    `hot-lane (${scenario.jobs} jobs against ${tiersPerSecond(scenario.quotas)} calls/s, maxInFlight ${scenario.maxInFlight}, usage reported): ${result.dispatchesPerSecond} dispatches in the busiest second, ${result.peakCallsInFlight ?? 0} calls in flight at most`,
    `  end to end on the local stack: largest item written ${hotItems.largestWriteKb} KB (${hotItems.largestItem || 'none'}); peak write units in one second on one item ${hotItems.peakWriteUnitsPerSecond} WU/s (${hotItems.peakItem || 'none'})`,
    `  replayed at ${HOT_LANE_CALLS_PER_SECOND} calls/s for ${replay.seconds} s on the DynamoDB adapters: largest item written ${replay.largestKb} KB (${replay.largestItem}); peak ${replay.peakUnitsPerSecond} WU/s on one item (${replay.peakItem}); ${replay.starved} calls without a free slot`,
    `  target: under 64 KB and 500 WU/s per item (DynamoDB's limits: 400 KB, 1,000 WU/s per partition)`,
  ].join('\n');
}

/** One chart panel: a scenario's calls per second per strategy, against the quota line. */
export function chartPanel(scenario: BenchScenario, results: readonly StrategyResult[]): ChartPanel {
  return {
    title: `${scenario.name} (${scenario.jobs} jobs, ${scenario.quotas.map((t) => `${t.limit}/${t.per}`).join(' + ')})`,
    quotaPerSecond: tiersPerSecond(scenario.quotas),
    ...(scenario.outage === undefined ? {} : { outage: scenario.outage }),
    series: results.map((r) => ({
      name: r.name,
      callsPerSecond: r.callsPerSecond,
      ...(r.unavailable === undefined ? {} : { unavailable: r.unavailable }),
    })),
  };
}
