import type { VirtualApiCall } from '../simulation/virtualApi';
import type { BenchScenario } from './types';

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
