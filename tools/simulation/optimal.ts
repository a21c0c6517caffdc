import { unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';

/** An interval in which the API answers no call: `[startMs, endMs)`, in ms since the epoch. */
export interface DownTime {
  readonly startMs: number;
  readonly endMs: number;
}

/** Where the optimum starts, and what else holds calls back. */
export interface OptimalRun {
  /** The instant the first call may go. */
  readonly start: number;
  /** The zone of day and month tiers. @default 'UTC' */
  readonly timeZone?: string;
  /** When the API is down: no call goes then. */
  readonly downTimes?: readonly DownTime[];
}

/** One call still counted by a tier: its units, until the instant it no longer counts. */
interface Counted {
  readonly until: number;
  readonly units: number;
}

/**
 * The physical optimum (the report's `optimalSeconds`): the seconds from `run.start` to the last of the calls that use
 * `costs` (in that order) when each is sent as soon as every tier allows it, counted exactly (every sliding window, every
 * calendar window, no margin), and the API is up. A call whose units exceed a tier's limit can never go and is left
 * out. With several tiers this can be shorter than the tightest tier's long-run time (`idealSeconds`): a longer
 * tier's window is spent at the shorter tiers' pace before it holds the calls back.
 */
export function optimalSeconds(tiers: readonly Tier[], costs: readonly Costs[], run: OptimalRun): number {
  const { start, timeZone = 'UTC', downTimes = [] } = run;
  const counted: Counted[][] = tiers.map(() => []);
  const used = tiers.map(() => 0);
  let at = start;
  let last = start;
  for (const cost of costs) {
    if (tiers.some((tier) => unitsFor(tier, cost) > tier.limit)) continue;
    // Every tier and the down times move the instant on until none does: each only ever moves it later.
    for (let moved = true; moved;) {
      moved = false;
      const down = downTimes.find((d) => d.startMs <= at && at < d.endMs);
      if (down !== undefined) [at, moved] = [down.endMs, true];
      tiers.forEach((tier, i) => {
        const held = counted[i]!;
        const units = unitsFor(tier, cost);
        // A call at `at` shares a window with every earlier one still counted then (see Tier.countsUntil).
        while (held[0] !== undefined && (held[0].until <= at || used[i]! + units > tier.limit)) {
          if (held[0].until > at) [at, moved] = [held[0].until, true];
          used[i]! -= held.shift()!.units;
        }
      });
    }
    tiers.forEach((tier, i) => {
      const units = unitsFor(tier, cost);
      counted[i]!.push({ until: tier.countsUntil(at, timeZone), units });
      used[i]! += units;
    });
    last = at;
  }
  return Math.round(last - start) / 1000;
}
