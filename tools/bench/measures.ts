import { handedBack } from '../../lib/domain/quota/handBack';
import type { Settlement } from '../../lib/domain/quota/ledger';
import { addCosts, REQUESTS, tierLabel, unitsFor, type Tier } from '../../lib/domain/quota/tiers';
import { optimalSeconds } from '../simulation/optimal';
import { outageTimes } from '../simulation/scenario';
import type { VirtualApiCall } from '../simulation/virtualApi';
import { usedUnits } from './jobSet';
import type { BenchScenario } from './types';

/** The calls a second that `tiers` allow at their steadiest: the least of their steady rates. */
export function tiersPerSecond(tiers: readonly Tier[]): number {
  return Math.min(...tiers.flatMap((tier) => tier.steadyRate() ?? []).map((rate) => (rate.units * 1000) / rate.perMs));
}

/** A fixed start for {@link optimalSecondsOf}: its scenarios have no calendar tier, so any instant gives the same. */
const OPTIMAL_START = Date.UTC(2026, 0, 5);

/**
 * The best duration the quota allows for the scenario's first `jobs` jobs, in seconds: the tightest tier's time for
 * what their calls use (one request each, and an LLM's drawn usage) at its steady rate, plus the outage.
 */
export function idealSeconds(scenario: BenchScenario, jobs: number = scenario.jobs): number {
  const used = usedUnits(scenario).slice(0, jobs);
  const quotaSeconds = Math.max(
    0,
    ...scenario.quotas.flatMap((tier) => {
      const rate = tier.steadyRate();
      return rate === undefined
        ? []
        : [(used.reduce((sum, costs) => sum + unitsFor(tier, costs), 0) * rate.perMs) / rate.units / 1000];
    }),
  );
  return round3(quotaSeconds + (scenario.outage?.forSeconds ?? 0));
}

/** The physical limit of the scenario: one call per job, each as soon as every tier allows what it uses and the API is up. */
export function optimalSecondsOf(scenario: BenchScenario): number {
  const downTimes = outageTimes(scenario.outage === undefined ? [] : [scenario.outage], OPTIMAL_START);
  return optimalSeconds(scenario.quotas, usedUnits(scenario), { start: OPTIMAL_START, downTimes });
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

/** The step between the window starts {@link tierUtilization} averages over. */
const UTILIZATION_STEP_MS = 100;

/**
 * How much of each sliding tier a run used while it had a backlog, by tier label (`60000 output_tokens/minute`).
 *
 * The backlog lasts from the first job call's arrival (T0) to the last accepted call's (T1). A window of the tier
 * holds the units of the accepted calls that arrived in it, as the API finally counted them (an LLM's output once
 * answered, see `VirtualApiCall.usage`). The figure is the mean, over the windows `[s, s + window)` that lie within
 * the backlog (every `s` from T0 to T1 - window, 100 ms apart), of their units over the tier's limit: 1 when every
 * such window was full. When the backlog is shorter than a window, it is the units of all of it over the limit (a
 * strategy can use no more than one limit in one window). Calendar tiers are left out; with no accepted call, 0.
 */
export function tierUtilization(calls: readonly VirtualApiCall[], tiers: readonly Tier[]): Record<string, number> {
  const accepted = calls.filter((call) => call.usage !== undefined).sort((a, b) => a.at - b.at);
  const first = Math.min(...calls.map((call) => call.at));
  const last = accepted[accepted.length - 1]?.at;
  const out: Record<string, number> = {};
  for (const tier of tiers) {
    const windowMs = tier.steadyRate()?.perMs;
    if (windowMs === undefined) continue;
    const units = accepted.map((call) => unitsFor(tier, call.usage ?? {}));
    if (last === undefined) {
      out[tierLabel(tier)] = 0;
    } else if (last - first < windowMs) {
      out[tierLabel(tier)] = round3(units.reduce((sum, n) => sum + n, 0) / tier.limit);
    } else {
      let [sum, enter, leave, windows, total] = [0, 0, 0, 0, 0];
      for (let s = first; s <= last - windowMs; s += UTILIZATION_STEP_MS) {
        for (; enter < accepted.length && (accepted[enter]?.at ?? s) < s + windowMs; enter++) sum += units[enter] ?? 0;
        for (; leave < enter && (accepted[leave]?.at ?? s) < s; leave++) sum -= units[leave] ?? 0;
        total += sum / tier.limit;
        windows++;
      }
      out[tierLabel(tier)] = round3(total / windows);
    }
  }
  return out;
}

/**
 * Per named unit of `units` (those the tiers count, see `namedUnits`), the units `settlements` handed back (reserved
 * and not used, see `handedBack`) over the units they had reserved. A settlement whose `id` came before is left out,
 * as the orchestrator folds one `id` once.
 */
export function handedBackShare(settlements: readonly Settlement[], units: readonly string[]): Record<string, number> {
  const seen = new Set<string>();
  const reserved: Record<string, number> = {};
  const back: Record<string, number> = {};
  for (const settlement of settlements) {
    if (settlement.id !== undefined) {
      if (seen.has(settlement.id)) continue;
      seen.add(settlement.id);
    }
    addCosts(reserved, settlement.reservation.costs);
    addCosts(back, handedBack(settlement));
  }
  return Object.fromEntries(
    units.map((unit) => [unit, (reserved[unit] ?? 0) === 0 ? 0 : round3((back[unit] ?? 0) / (reserved[unit] ?? 1))]),
  );
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * The time the API's real limits (see `BenchScenario.allowed`) need for one call per job, in seconds: segment by
 * segment of what it allows, the tightest sliding tier of requests at its steady rate. Without `allowed`, the
 * configured quotas' (see {@link idealSeconds}).
 */
export function allowedSeconds(scenario: BenchScenario, jobs: number = scenario.jobs): number {
  const { allowed } = scenario;
  if (allowed === undefined) return idealSeconds(scenario, jobs);
  const rateOf = (limits: readonly number[] | undefined): number =>
    Math.min(
      ...scenario.quotas.flatMap((tier, i) => {
        const rate = tier.steadyRate();
        return rate === undefined || tier.unit !== REQUESTS ? [] : [((limits?.[i] ?? tier.limit) * 1000) / rate.perMs];
      }),
    );
  const segments = [{ atSeconds: 0, limits: undefined as readonly number[] | undefined }, ...allowed.changes];
  let left = jobs;
  for (const [k, segment] of segments.entries()) {
    const end = segments[k + 1]?.atSeconds ?? Number.POSITIVE_INFINITY;
    const rate = rateOf(segment.limits);
    if (rate * (end - segment.atSeconds) >= left) return round3(segment.atSeconds + left / rate);
    left -= rate * (end - segment.atSeconds);
  }
  return Number.POSITIVE_INFINITY; // unreachable: the last segment never ends
}

/**
 * The share of what the API really allowed that a run of `durationSeconds` used, having ended `jobs` jobs:
 * {@link allowedSeconds} over it.
 */
export function allowedShareOf(scenario: BenchScenario, durationSeconds: number, jobs: number = scenario.jobs): number {
  return durationSeconds <= 0 ? 0 : round3(allowedSeconds(scenario, jobs) / durationSeconds);
}
