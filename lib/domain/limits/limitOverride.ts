import { requestsPerSecond, SHARD_APPENDS_PER_SECOND, settlementShards } from '../quota/settlementShards';
import { CalendarTier, MAX_QUANTITY, SlidingTier, tierKeyOf, tierLabel, type Tier, type TierKey } from '../quota/tiers';
import { isAcceptedLimit, type LimitOverrideJSON } from './limitOverrideJSON';

/** `tier` with `limit` in place of its own. */
export function withLimit(tier: Tier, limit: number): Tier {
  return tier.kind === 'sliding'
    ? new SlidingTier(limit, tier.per, tier.unit)
    : new CalendarTier(limit, tier.per, tier.unit);
}

/** The limit `override` sets for `tier`, if it names it. */
function overrideOf(tier: Tier, override: LimitOverrideJSON | undefined): number | undefined {
  return override?.tiers[tierKeyOf(tier.per, tier.unit)];
}

/**
 * The tiers a lane or pool goes by under `override`, in configured order: each configured tier the override names
 * takes its limit; a tier the override names that is not configured (a deploy removed it) is ignored.
 *
 * A raise stands only as far as the settlement shards deployed for the configured tiers carry its pace (see
 * {@link overrideProblem}): when a deploy since lowered what they carry, the override's raises are dropped and its
 * lowered limits kept. Lowering is always safe; a raise the shards cannot carry would crowd them past their writes.
 */
export function overriddenTiers(configured: readonly Tier[], override: LimitOverrideJSON | undefined): readonly Tier[] {
  if (override === undefined) return configured;
  const tiers = configured.map((tier) => {
    const limit = overrideOf(tier, override);
    return limit === undefined || limit === tier.limit ? tier : withLimit(tier, limit);
  });
  if (shardsProblem(configured, tiers) === undefined) return tiers;
  return configured.map((tier) => {
    const limit = overrideOf(tier, override);
    return limit === undefined || limit >= tier.limit ? tier : withLimit(tier, limit);
  });
}

/**
 * Why `limits` (by tier key) cannot override `configured` tiers, or `undefined` when they can: each must name a
 * configured tier and be a whole number from 1 to `MAX_QUANTITY`, and the pace of requests they allow must not need
 * more settlement shards than the configured tiers were deployed with (see `settlementShards`).
 */
export function overrideProblem(
  configured: readonly Tier[],
  limits: Readonly<Partial<Record<TierKey, number>>>,
): string | undefined {
  const keys = configured.map((tier) => tierKeyOf(tier.per, tier.unit));
  for (const [key, limit] of Object.entries(limits)) {
    if (!(keys as string[]).includes(key)) return `no tier ${key} is configured; the tiers are ${keys.join(', ')}`;
    if (!isAcceptedLimit(limit))
      return `the limit of ${key} must be a whole number from 1 to ${MAX_QUANTITY}; got ${String(limit)}`;
  }
  const tiers = configured.map((tier) => {
    const limit = limits[tierKeyOf(tier.per, tier.unit)];
    return limit === undefined ? tier : withLimit(tier, limit);
  });
  return shardsProblem(configured, tiers);
}

/** Why `tiers` pace more requests than the settlement shards deployed for `configured` carry, or `undefined`. */
function shardsProblem(configured: readonly Tier[], tiers: readonly Tier[]): string | undefined {
  const deployed = settlementShards(configured);
  if (settlementShards(tiers) <= deployed) return undefined;
  const carried = deployed * SHARD_APPENDS_PER_SECOND;
  return (
    `these limits allow ${Math.round(requestsPerSecond(tiers))} requests a second, and the settlement shards deployed ` +
    `for the configured tiers (${configured.map(tierLabel).join(', ')}) carry ${carried} a second: raise them so far ` +
    'in the configuration and deploy'
  );
}

/**
 * The tiers of `configured` whose limit differs between `before` and `after` (tiers in the order of `configured`, as
 * {@link overriddenTiers} gives them), each with its limit in both.
 */
export function limitChanges(
  configured: readonly Tier[],
  before: readonly Tier[],
  after: readonly Tier[],
): { readonly tier: Tier; readonly from: number; readonly to: number }[] {
  return configured.flatMap((tier, i) => {
    const from = before[i]?.limit ?? tier.limit;
    const to = after[i]?.limit ?? tier.limit;
    return from === to ? [] : [{ tier, from, to }];
  });
}

/** A tier whose limit an override changed during a run, for logs and metrics. */
export interface OverrideChange {
  /** The tier as configured. */
  readonly tier: Tier;
  readonly from: number;
  readonly to: number;
  /**
   * `now`: a limit no higher than the run's tier holds at once; `next-run`: a higher one needs the run's tiers
   * rebuilt, by the next run, and the run paces at its own tier meanwhile (`meanwhile`).
   */
  readonly when: 'now' | 'next-run';
  /** With `next-run`, the limit the run paces at until then: its own tier's. */
  readonly meanwhile?: number;
}

/**
 * The override a run goes by: the tiers it started with (see {@link overriddenTiers}), and the override it last read,
 * which may lower them during the run. A higher limit takes the next run: the run's ledger, pacing and allowance are
 * built on its tiers, and a cap can only lower them (see `QuotaLedger.limitTo`).
 */
export class OverrideInForce {
  /** The tiers the run started with. */
  readonly tiers: readonly Tier[];
  private current: LimitOverrideJSON | undefined;

  constructor(
    /** The tiers as configured (packaging's). */
    readonly configured: readonly Tier[],
    override: LimitOverrideJSON | undefined,
  ) {
    this.tiers = overriddenTiers(configured, override);
    this.current = override;
  }

  /** The override last read, if any. */
  get override(): LimitOverrideJSON | undefined {
    return this.current;
  }

  /**
   * Takes the override read from the store (`undefined`: none, after a reset).
   * @returns each tier whose limit under it differs from under the one before, and when the change holds.
   */
  update(override: LimitOverrideJSON | undefined): OverrideChange[] {
    const before = overriddenTiers(this.configured, this.current);
    const after = overriddenTiers(this.configured, override);
    this.current = override;
    return limitChanges(this.configured, before, after).map(({ tier, from, to }): OverrideChange => {
      const own = this.tiers[this.configured.indexOf(tier)]?.limit ?? tier.limit;
      return to <= own ? { tier, from, to, when: 'now' } : { tier, from, to, when: 'next-run', meanwhile: own };
    });
  }

  /** Per tier of the run, the most the override last read allows: never above the tier the run started with. */
  limits(): number[] {
    const now = overriddenTiers(this.configured, this.current);
    return this.tiers.map((tier, i) => Math.min(tier.limit, now[i]?.limit ?? tier.limit));
  }
}
