import { unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';

/** One arrival's units in a tier, until it stops counting there. */
export interface Held {
  units: number;
  readonly until: number;
}

/**
 * What accepted arrivals hold in one tier: each arrival's units until it stops counting (see
 * `TierWindows.countsUntil`), kept in that order so that the oldest are dropped first. Arrivals come in about time
 * order (a call served over HTTP is dated when it was sent or its request arrived, and handled once its body is read).
 */
export class TierTally {
  private readonly held: Held[] = [];
  private total = 0;
  /** The most units ever seen in one window. */
  maxUsage = 0;

  constructor(
    readonly tier: Tier,
    private readonly timeZone: string,
  ) {}

  /**
   * Earliest instant, from `at` on, at which the tier would take `cost` more, counting only arrivals so far
   * (they only ever leave a window as time passes, so the answer for several tiers is the latest of theirs), against
   * `limit` (the tier's own by default; an API that allows less at the time, see `AllowedLimits`).
   */
  fitsAt(at: number, costs: Costs, limit = this.tier.limit): number {
    const units = unitsFor(this.tier, costs);
    this.prune(at);
    let used = this.total;
    if (used + units <= limit) return at;
    // Drop the oldest arrivals until it fits.
    for (const held of this.held) {
      used -= held.units;
      if (used + units <= limit) return held.until;
    }
    return Number.POSITIVE_INFINITY; // unreachable: a request larger than the limit is answered 413 before this
  }

  /** The units arrivals hold at `at`, and when the oldest of them stops counting (`at` when none does). */
  usedAt(at: number): { readonly used: number; readonly freesAt: number } {
    this.prune(at);
    return { used: this.total, freesAt: this.held[0]?.until ?? at };
  }

  /** Counts an arrival's units; the returned entry can be {@link correct}ed while it counts. */
  record(at: number, costs: Costs): Held {
    this.prune(at);
    const units = unitsFor(this.tier, costs);
    const until = this.tier.countsUntil(at, this.timeZone);
    let i = this.held.length;
    while (i > 0 && (this.held[i - 1]?.until ?? until) > until) i--;
    const held: Held = { units, until };
    this.held.splice(i, 0, held);
    this.total += units;
    // A window's content peaks right after an arrival (a correction only lowers it), so checking at each arrival finds the maximum.
    this.maxUsage = Math.max(this.maxUsage, this.total);
    return held;
  }

  /** Sets what an arrival counts to `units` (never more than it reserved), if it still counts at `now`. */
  correct(now: number, held: Held, units: number): void {
    this.prune(now);
    if (held.until <= now || units >= held.units) return;
    this.total -= held.units - units;
    held.units = units;
  }

  private prune(at: number): void {
    let drop = 0;
    while (drop < this.held.length && (this.held[drop]?.until ?? at) <= at) this.total -= this.held[drop++]?.units ?? 0;
    this.held.splice(0, drop);
  }
}

/**
 * Tiers that several simulated APIs count together, as a provider counts an organisation's limit across its models
 * (a pool: see `ServiceConfig.pools`): each API that shares them admits a call only if it fits them too, and counts
 * it there.
 */
export class SharedTiers {
  readonly tallies: readonly TierTally[];

  constructor(
    readonly name: string,
    readonly tiers: readonly Tier[],
    timeZone = 'UTC',
  ) {
    this.tallies = tiers.map((tier) => new TierTally(tier, timeZone));
  }
}
