import { runSimulation } from '../simulation/runSimulation';
import { parseScenario } from '../simulation/scenario';
import { NO_LATENCY, type AwsLatencyProfile } from '../simulation/awsLatency';
import { REALISTIC_START_DELAYS } from '../simulation/startDelays';
import { callsPerSecond } from './measures';
import type { BenchScenario } from './types';

/** The ceiling on virtual time: the same services on memory ports that answer as slowly as `awsLatency` says. */
export interface SimulatedCeiling {
  readonly jobs: number;
  /** Jobs dispatched in the busiest whole second, as their calls reached the API. */
  readonly dispatchesPerSecond: number;
  /** Where the orchestrator's time went: its requests to each port and the latency they cost, in seconds. */
  readonly orchestratorTime: Readonly<Record<string, number>>;
  readonly durationSeconds: number;
}

/** The latency of one request to a port named `service.method`. */
function latencyOf(request: string, profile: AwsLatencyProfile): number {
  const service = request.split('.')[0];
  return service === 'lambda' ? profile.lambdaMs : service === 'dynamodb' ? profile.dynamodbMs : profile.sqsMs;
}

/**
 * Runs `bench` with `jobs` jobs in the simulation, with its AWS latency profile and realistic worker starts, and
 * reports the dispatch rate one orchestrator sustains, and how much of its time each kind of request took.
 */
export async function simulatedCeiling(bench: BenchScenario, jobs: number): Promise<SimulatedCeiling> {
  const awsLatency = bench.awsLatency ?? NO_LATENCY;
  const scenario = parseScenario({
    name: bench.name,
    quotas: bench.quotas,
    jobs: { count: jobs },
    api: { latencyMs: bench.latencyMs },
    startDelays: bench.startDelays ?? REALISTIC_START_DELAYS,
    awsLatency,
    maxSeconds: 3_600,
  });
  const result = await runSimulation(scenario);
  const round = (n: number): number => Math.round(n * 1000) / 1000;
  const time = [...result.orchestratorRequests].map(
    ([request, count]) => [request, round((count * latencyOf(request, awsLatency)) / 1000)] as const,
  );
  return {
    jobs,
    dispatchesPerSecond: Math.max(0, ...callsPerSecond(result.api.callLog, result.start)),
    orchestratorTime: Object.fromEntries(time.filter(([, seconds]) => seconds > 0).sort(([, a], [, b]) => b - a)),
    durationSeconds: result.report.durationSeconds,
  };
}
