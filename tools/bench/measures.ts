import { optimalSeconds } from '../simulation/optimal';
import { outageTimes } from '../simulation/scenario';
import type { VirtualApiCall } from '../simulation/virtualApi';
import type { BenchScenario } from './types';

/** A fixed start for {@link optimalSecondsOf}: its scenarios have no calendar tier, so any instant gives the same. */
const OPTIMAL_START = Date.UTC(2026, 0, 5);

/**
 * The best duration the quota allows, in seconds: the tightest tier's time for one call per job at its steady rate
 * (`jobs * window / limit`), plus the outage.
 */
export function idealSeconds(scenario: BenchScenario): number {
  const quotaSeconds = Math.max(
    0,
    ...scenario.quotas.flatMap((tier) => tier.steadyRate() ?? []).map((rate) => (scenario.jobs * rate.perMs) / rate.units / 1000),
  );
  return round3(quotaSeconds + (scenario.outage?.forSeconds ?? 0));
}

/** The physical limit of the scenario: one call per job, each as soon as every tier allows it and the API is up. */
export function optimalSecondsOf(scenario: BenchScenario): number {
  const downTimes = outageTimes(scenario.outage === undefined ? [] : [scenario.outage], OPTIMAL_START);
  return optimalSeconds(scenario.quotas, Array.from({ length: scenario.jobs }, () => 1), { start: OPTIMAL_START, downTimes });
}

/** Job calls that reached the API in each whole second from `start`: `result[i]` counts arrivals in `[i, i + 1)` s. */
export function callsPerSecond(calls: readonly VirtualApiCall[], start: number): number[] {
  const counts: number[] = [];
  for (const call of calls) {
    const second = Math.max(0, Math.floor((call.at - start) / 1000));
    counts[second] = (counts[second] ?? 0) + 1;
  }
  return Array.from(counts, (n) => n ?? 0);
}

/** Seconds from `outageEnd` to the first job call answered 200 that arrived at or after it (3 decimals); `-1` if none. */
export function recoverySeconds(calls: readonly VirtualApiCall[], outageEnd: number): number {
  const first = calls.find((call) => call.status === 200 && call.at >= outageEnd);
  return first === undefined ? -1 : Math.round(first.at - outageEnd) / 1000;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
