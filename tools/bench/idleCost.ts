import { systemClock } from '../../lib/adapters/systemClock';
import { fireSchedule, hostService } from '../local/localRun';
import { countRequests, dynamodbUnits } from '../local/requestMeter';
import type { Template } from '../local/template';
import { waitFor } from '../local/waitFor';
import { parseScenario } from '../simulation/scenario';
import { costPerMillionJobs, ORCHESTRATOR_MEMORY_MB } from './cost';

/** Hours in a month, as AWS's pricing calculator counts them. */
const HOURS_PER_MONTH = 730;

/** What one scheduled run of an idle lane asked of AWS, on average over the stretch measured. */
export interface IdleRun {
  /** The orchestrator's billed time. */
  readonly billedSeconds: number;
  readonly dynamodbReadUnits: number;
  readonly dynamodbWriteUnits: number;
  readonly sqsRequests: number;
}

/** An idle stretch: what each run cost, and what a month of them costs at the schedule's rate. */
export interface IdleResult {
  readonly runs: number;
  readonly perRun: IdleRun;
  /** Runs a month at the packaged schedule (one a minute: 43,800). */
  readonly runsPerMonth: number;
  readonly idleCostPerMonthUsd: number;
}

/** What a month of idle runs costs: each run's Lambda request and billed time, its DynamoDB units and SQS requests. */
export function idleCostPerMonth(perRun: IdleRun, runsPerMonth: number): number {
  const { total } = costPerMillionJobs({
    invocationsPerJob: 0,
    workerBusySecondsPerJob: 0,
    memoryMb: 0,
    orchestratorInvocationsPerJob: 1,
    orchestratorSecondsPerJob: perRun.billedSeconds,
    orchestratorMemoryMb: ORCHESTRATOR_MEMORY_MB,
    dynamodbReadsPerJob: perRun.dynamodbReadUnits,
    dynamodbWritesPerJob: perRun.dynamodbWriteUnits,
    sqsRequestsPerJob: perRun.sqsRequests,
  });
  return (total / 1e6) * runsPerMonth;
}

/**
 * Fires the packaged schedule `runs` times over empty queues on the local stack, each tick once the run before has
 * ended on its own (as an idle run does, after `orchestrator.idleStopMs`), and measures what the runs asked of AWS
 * and how long they billed, with `serverless.yml`'s settings.
 */
export async function measureIdle(template: Template, runs: number): Promise<IdleResult> {
  const scenario = parseScenario({ name: 'idle', quotas: [{ limit: 1, per: 'second' }], jobs: { count: 1 } });
  const service = await hostService({ scenario, overrides: [], template }, []);
  const { harness, functions, scheduler, meters } = service;
  const { orchestrator, schedule } = functions;
  for (let run = 1; run <= runs; run++) {
    await fireSchedule(scheduler, schedule.functionName, systemClock.now());
    await waitFor(
      () => harness.stats(orchestrator.name).invocations >= run && harness.stats(orchestrator.name).running === 0,
      { timeoutMs: orchestrator.timeoutMs + 10_000, intervalMs: 20, what: `idle run ${run} to end` },
    );
  }
  const billedMs = harness.stats(orchestrator.name).billedMs;
  service.stop(systemClock.now());
  await harness.close({ idleWithinMs: 10_000 });
  scheduler.destroy();
  const requests = meters.orchestrator.snapshot();
  const units = dynamodbUnits(requests);
  const perRun: IdleRun = {
    billedSeconds: billedMs / 1000 / runs,
    dynamodbReadUnits: units.read / runs,
    dynamodbWriteUnits: units.write / runs,
    sqsRequests: countRequests(requests, 'sqs') / runs,
  };
  const runsPerMonth = Math.round((HOURS_PER_MONTH * 3_600_000) / schedule.periodMs);
  return { runs, perRun, runsPerMonth, idleCostPerMonthUsd: idleCostPerMonth(perRun, runsPerMonth) };
}

/** The idle cost of deployments of several lanes, and what each lane past the first adds. */
export interface LanesIdleResult {
  /** By number of lanes (2 and 3): each run over every lane's empty queues. */
  readonly byLanes: Readonly<Record<number, IdleResult>>;
  /** What the third lane added to the second's month: one more idle lane. */
  readonly extraLanePerMonthUsd: number;
}

/**
 * Measures {@link measureIdle} on serverless.yml packaged in the lanes form with 2, then 3, lanes of its own settings
 * (`default` and `extra-1`, `extra-2`), all idle: each run asks each lane's queues whether they hold work and takes
 * no lease for a lane with none.
 * @param packageLanes packages serverless.yml with `custom.quotaOrchestrator` turned into lanes by the edit given
 */
export async function measureIdleLanes(
  packageLanes: (edit: (config: Record<string, unknown>) => void) => Promise<Template>,
  runs: number,
): Promise<LanesIdleResult> {
  const byLanes: Record<number, IdleResult> = {};
  for (const count of [2, 3]) {
    const template = await packageLanes((config) => {
      const custom = config.custom as Record<string, Record<string, unknown>>;
      const { timeZone, orchestrator, ...own } = custom.quotaOrchestrator ?? {};
      delete own.lane;
      const names = ['default', ...Array.from({ length: count - 1 }, (_, i) => `extra-${i + 1}`)];
      custom.quotaOrchestrator = { timeZone, orchestrator, lanes: Object.fromEntries(names.map((n) => [n, own])) };
    });
    byLanes[count] = await measureIdle(template, runs);
  }
  const cost = (count: number) => byLanes[count]?.idleCostPerMonthUsd ?? Number.NaN;
  return { byLanes, extraLanePerMonthUsd: cost(3) - cost(2) };
}
