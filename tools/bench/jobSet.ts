import type { Costs } from '../../lib/domain/quota/tiers';
import { buildJobs, type JobSpec } from '../simulation/jobs';
import { seededRandom } from '../simulation/random';
import { parseScenario, type Scenario } from '../simulation/scenario';
import { REALISTIC_START_DELAYS } from '../simulation/startDelays';
import { jobUsage } from '../simulation/llmAnswers';
import type { BenchScenario } from './types';

/** The usage preset of the LLM scenario's lane: the simulated LLM answers as Anthropic's Messages API does. */
const LLM_USAGE_PRESET = 'anthropic';

/**
 * The bench scenario as a local run's scenario: its quotas, jobs, API and start delays (no second deliveries, as
 * the baselines see none); for an LLM scenario also its `maxInFlight` and the `anthropic` usage preset; for an API
 * that allows less than the quotas say, what it allows and announces, and the lane learning from its headers
 * (`limits.learn: enforce`).
 */
export function simulationScenario(bench: BenchScenario): Scenario {
  return parseScenario({
    name: bench.name,
    quotas: bench.quotas,
    ...(bench.maxInFlight === undefined ? {} : { maxInFlight: bench.maxInFlight }),
    ...(bench.llm === undefined ? {} : { usagePreset: LLM_USAGE_PRESET }),
    ...(bench.allowed === undefined ? {} : { limits: { headers: bench.allowed.headers, learn: 'enforce' } }),
    jobs: { count: bench.jobs, ...(bench.llm === undefined ? {} : { llm: bench.llm.jobs }) },
    api: {
      latencyMs: bench.latencyMs,
      outages: bench.outage === undefined ? [] : [bench.outage],
      ...(bench.llm === undefined ? {} : { llm: bench.llm.api, concurrency: bench.llm.concurrency }),
      ...(bench.allowed === undefined ? {} : { allowed: bench.allowed }),
    },
    startDelays: bench.startDelays ?? REALISTIC_START_DELAYS,
    duplicateDeliveries: { share: 0 },
    maxSeconds: 600,
  });
}

/** The scenario's job set, the same for every strategy: the one a local run of {@link simulationScenario} queues. */
export function benchJobs(bench: BenchScenario): JobSpec[] {
  const scenario = simulationScenario(bench);
  return buildJobs(scenario, seededRandom(scenario.seed));
}

/** What each job's call uses once the API has answered it: its estimate, or an LLM's drawn usage. */
export function usedUnits(bench: BenchScenario): Costs[] {
  return benchJobs(bench).map((job) => jobUsage(job, bench.llm?.api));
}
