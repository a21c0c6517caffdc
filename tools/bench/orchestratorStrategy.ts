import { runLocal, type LocalRunResult } from '../local/localRun';
import { countRequests, dynamodbUnits, isLaneItem, itemLoad, type ItemLoad } from '../local/requestMeter';
import type { Template } from '../local/template';
import type { ServiceConfig } from '../../lib/config';
import { namedUnits } from '../../lib/domain/quota/tiers';
import { simulationScenario } from './jobSet';
import { peakCallsInFlight } from '../simulation/callsInFlight';
import {
  allowedShareOf,
  callsPerSecond,
  handedBackShare,
  optimalSecondsOf,
  recoverySeconds,
  tierUtilization,
} from './measures';
import type { BenchScenario, StrategyResult } from './types';

/** The orchestrator's result with what only it has: its AWS requests, where its time went, and its memory. */
export interface OrchestratorResult extends StrategyResult {
  /** Job calls that reached the API while the circuit was open (the calls that opened it excluded). */
  readonly callsWhileOpen: number;
  /** Seconds the orchestrator function ran (billed), per job. */
  readonly orchestratorSecondsPerJob: number;
  /** Seconds the workers spent waiting on the API's answers, per job: the part of their time that is the API's. */
  readonly apiCallSecondsPerJob: number;
  /** AWS requests per job to DynamoDB, whatever their units. */
  readonly dynamodbRequestsPerJob: number;
  /**
   * Where the orchestrator's run time went: its waits on each kind of AWS request, summed (requests made at once, a
   * refill's receives, overlap, so the sum can exceed the run).
   */
  readonly orchestratorTime: Readonly<Record<string, number>>;
  /** Jobs dispatched in the run's busiest whole second, as their calls reached the API: the sustained peak. */
  readonly dispatchesPerSecond: number;
  /** The lane item's load from both functions: against DynamoDB's 400 KB item and 1,000 write units a second per partition. */
  readonly laneItem: ItemLoad;
  /** The busiest items' load from both functions, whichever items they are (see `ItemLoad`). */
  readonly hotItems: ItemLoad;
  readonly peakHeapMb: number;
}

/** Options of {@link runOrchestratorStrategy}. */
export interface OrchestratorStrategyOptions {
  /** The packaged template (`osls package`). */
  readonly template: Template;
}

/**
 * Runs the scenario through this project end to end on the local stack (emulated SQS and DynamoDB, the real
 * handlers, the Lambda invoke path), with `serverless.yml`'s settings but the scenario's quotas.
 */
export async function runOrchestratorStrategy(
  bench: BenchScenario,
  options: OrchestratorStrategyOptions,
): Promise<OrchestratorResult> {
  // The same jobs and start delays as the baselines' workers, and like them no second deliveries.
  const scenario = simulationScenario(bench);
  const run = await runLocal({
    scenario,
    overrides: settingsOverrides(bench),
    template: options.template,
    ...(bench.awsLatency === undefined ? {} : { awsLatency: bench.awsLatency }),
  });
  return toResult(bench, run);
}

/**
 * The settings a bench scenario gives over serverless.yml's: its quotas, an LLM's `maxInFlight` and usage preset, and
 * the `limits` of a lane whose API allows less than its quotas.
 */
export function settingsOverrides(bench: BenchScenario): (keyof ServiceConfig)[] {
  return [
    'quotas',
    ...(bench.llm === undefined ? [] : (['maxInFlight', 'usagePreset'] as const)),
    ...(bench.allowed === undefined ? [] : (['limits'] as const)),
  ];
}

function requestsTo(run: LocalRunResult, service: string): number {
  return countRequests(run.orchestrator.requests, service) + countRequests(run.worker.requests, service);
}

/** The DynamoDB capacity units both functions consumed. */
function unitsOf(run: LocalRunResult): { readonly read: number; readonly write: number } {
  const [orchestrator, worker] = [dynamodbUnits(run.orchestrator.requests), dynamodbUnits(run.worker.requests)];
  return { read: orchestrator.read + worker.read, write: orchestrator.write + worker.write };
}

function toResult(bench: BenchScenario, run: LocalRunResult): OrchestratorResult {
  const { report } = run;
  const jobs = bench.jobs;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  const billedSeconds = (run.orchestrator.billedMs + run.worker.billedMs) / 1000;
  const waited = Object.entries(run.orchestrator.requests).map(([key, tally]) => [key, tally.ms / 1000] as const);
  const units = unitsOf(run);
  const writes = [...run.orchestrator.itemWrites, ...run.worker.itemWrites];
  const outageEnd =
    bench.outage === undefined ? undefined : run.start + (bench.outage.atSeconds + bench.outage.forSeconds) * 1000;
  return {
    name: 'orchestrator',
    durationSeconds: report.durationSeconds,
    idealSeconds: report.idealSeconds,
    optimalSeconds: optimalSecondsOf(bench),
    apiCalls: report.apiCalls,
    rejectedByApi: report.rejectedByApi,
    callsPerJob: round(report.apiCalls / jobs),
    utilization: report.utilization,
    invocationsPerJob: report.invocationsPerJob,
    // The orchestrator function bills too: its time is counted with the workers'.
    workerBusySecondsPerJob: round(billedSeconds / jobs),
    ...(outageEnd === undefined ? {} : { recoverySeconds: recoverySeconds(run.calls, outageEnd) }),
    ...(bench.allowed === undefined ? {} : { allowedShare: allowedShareOf(bench, report.durationSeconds) }),
    ...(bench.llm === undefined
      ? {}
      : {
          peakCallsInFlight: peakCallsInFlight(run.calls),
          tierUtilization: tierUtilization(run.calls, bench.quotas),
          handedBackShare: handedBackShare(run.settlements, namedUnits(bench.quotas)),
        }),
    dynamodbReadUnitsPerJob: round(units.read / jobs),
    dynamodbWriteUnitsPerJob: round(units.write / jobs),
    dynamodbRequestsPerJob: round(requestsTo(run, 'dynamodb') / jobs),
    sqsRequestsPerJob: round(requestsTo(run, 'sqs') / jobs),
    callsPerSecond: callsPerSecond(run.calls, run.start),
    callsWhileOpen: callsWhileOpen(run, bench.latencyMs + IN_FLIGHT_GRACE_MS),
    orchestratorSecondsPerJob: round(run.orchestrator.billedMs / 1000 / jobs),
    apiCallSecondsPerJob: round(run.apiCallSeconds / jobs),
    orchestratorTime: Object.fromEntries(waited.map(([key, s]) => [key, round(s)])),
    dispatchesPerSecond: Math.max(0, ...callsPerSecond(run.calls, run.start)),
    laneItem: itemLoad(writes.filter(isLaneItem)),
    hotItems: itemLoad(writes),
    peakHeapMb: round(run.peakHeapBytes / 1e6),
  };
}

/** Beyond the API latency, how long a call dispatched just before the circuit opened may take to arrive. */
const IN_FLIGHT_GRACE_MS = 500;

/**
 * Job calls that arrived while the circuit was open or half-open (as polled every 100 ms), leaving out those already
 * on their way when it opened: a call counts if it arrived more than `graceMs` after the circuit was seen open.
 */
function callsWhileOpen(run: LocalRunResult, graceMs: number): number {
  const spans: { from: number; to: number }[] = [];
  run.circuitChanges.forEach((change, i) => {
    if (change.status === 'closed') return;
    const closed = run.circuitChanges.slice(i + 1).find((c) => c.status === 'closed');
    spans.push({ from: change.at + graceMs, to: closed?.at ?? Number.POSITIVE_INFINITY });
  });
  return run.calls.filter((call) => spans.some((span) => call.at > span.from && call.at < span.to)).length;
}
