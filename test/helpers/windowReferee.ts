import { unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';

/** One call as the API saw it: when it arrived and what it took of each named unit. */
export interface Call {
  readonly at: number;
  readonly costs: Costs;
}

/**
 * The most units any window of `tier` ever held, counted straight from the call log, independently of the ledger:
 * sliding windows `(T − W, T]` ending at every call, or calendar windows in `timeZone`. The window ending at a call
 * holds every call so far that still counts then (see `TierWindows.countsUntil`).
 */
export function maxWindowUsage(calls: readonly Call[], tier: Tier, timeZone = 'UTC'): number {
  const sorted = [...calls].sort((a, b) => a.at - b.at);
  // Calls in time order stop counting in that order, so the calls still counting are always a run ending at `call`.
  const until = sorted.map((call) => tier.countsUntil(call.at, timeZone));
  let max = 0;
  let start = 0;
  let sum = 0;
  for (const call of sorted) {
    sum += unitsFor(tier, call.costs);
    while ((until[start] ?? Infinity) <= call.at) sum -= unitsFor(tier, sorted[start++]!.costs);
    max = Math.max(max, sum);
  }
  return max;
}

/** Tiers whose limit the call log exceeds in some window (empty when every tier held). */
export function violatedTiers(calls: readonly Call[], tiers: readonly Tier[], timeZone = 'UTC'): Tier[] {
  return tiers.filter((tier) => maxWindowUsage(calls, tier, timeZone) > tier.limit);
}
