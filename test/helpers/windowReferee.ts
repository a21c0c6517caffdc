import { calendarWindow } from '../../lib/domain/quota/calendar';
import { isSliding, slidingWindowMs, unitsFor, type Tier } from '../../lib/domain/quota/tiers';

/** One call as the API saw it: when it arrived and what it cost. */
export interface Call {
  readonly at: number;
  readonly cost: number;
}

/**
 * The most units any window of `tier` ever held, counted straight from the call log, independently of the
 * ledger: sliding windows `(T − W, T]` ending at every call, or calendar windows in `timeZone`.
 */
export function maxWindowUsage(calls: readonly Call[], tier: Tier, timeZone = 'UTC'): number {
  const sorted = [...calls].sort((a, b) => a.at - b.at);
  let max = 0;
  if (isSliding(tier.per)) {
    const w = slidingWindowMs(tier.per);
    let start = 0;
    let sum = 0;
    for (const call of sorted) {
      sum += unitsFor(tier, call.cost);
      while ((sorted[start]?.at ?? Infinity) <= call.at - w) sum -= unitsFor(tier, sorted[start++]!.cost);
      max = Math.max(max, sum);
    }
    return max;
  }
  const perWindow = new Map<string, number>();
  for (const call of sorted) {
    const key = calendarWindow(call.at, tier.per as 'day' | 'month', timeZone).key;
    const sum = (perWindow.get(key) ?? 0) + unitsFor(tier, call.cost);
    perWindow.set(key, sum);
    max = Math.max(max, sum);
  }
  return max;
}

/** Tiers whose limit the call log exceeds in some window (empty when every tier held). */
export function violatedTiers(calls: readonly Call[], tiers: readonly Tier[], timeZone = 'UTC'): Tier[] {
  return tiers.filter((tier) => maxWindowUsage(calls, tier, timeZone) > tier.limit);
}
