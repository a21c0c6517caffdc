import { tierKeyOf, type Tier, type TierKey } from '../quota/tiers';
import type { LimitReading } from './rateLimitHeaders';
import type { ReadingTiers } from './settings';

/**
 * Where the limit in force of a tier comes from:
 * - `configured`: packaging's configuration;
 * - `header`: the API's own `limit` header, below the configured (or overridden) limit;
 * - `remaining`: the API's `remaining` says another caller spends on the key: its share is left to it until the reset;
 * - `rate-limited`: a 429 without limit headers cut it (see {@link LEARNING}).
 */
export type LimitSource = 'configured' | 'header' | 'remaining' | 'rate-limited';

/** A reading a worker recorded: what one answer's headers said, and when the worker read them. */
export interface ObservedReading extends LimitReading {
  /** When the answer came (the worker's clock, epoch ms). */
  readonly at: number;
}

/** What the orchestrator folds into the learned limits at a flush. */
export interface LimitObservations {
  /** The latest reading of each family the workers recorded. */
  readonly readings: readonly ObservedReading[];
  /** The latest 429 a worker got without a limit header that explains it (epoch ms), if any. */
  readonly rateLimitedAt?: number;
}

/**
 * The constants of learning from 429s without headers, and why:
 * - `cutFactor`: a 429 cuts the limit to this share of the lower of the limit and what the tier used in its window.
 *   0.8 undoes an overestimate of up to a quarter at once, yet a single stray 429 costs a fifth of the rate only.
 * - `growShare`: the limit grows back by this share of the configured limit per window without a 429, and only in
 *   a window in which the service used at least `busyShare` of it (an idle lane learns nothing of the API).
 * - `ceilingShare`, `ceilingWindows`: for this many windows after a cut, it grows back to this share of the usage
 *   the 429 came at, no further; only then does it try the configured limit again. This is what keeps the limit
 *   from a sawtooth of a 429 at every second window: at most one 429 per `ceilingWindows` windows while the API
 *   allows less than configured.
 */
export const LEARNING = Object.freeze({
  cutFactor: 0.8,
  growShare: 0.1,
  busyShare: 0.5,
  ceilingShare: 0.95,
  ceilingWindows: 10,
});

/**
 * The traffic-light zones of a tier another caller spends on, by what the API says remains of the limit: green from
 * half the limit up, yellow below half, red below a tenth. In the yellow zone the service also leaves the other caller
 * `yellowMargin` of what remains, in the red zone `redMargin`: it slows before the wall, so that the other caller's
 * next calls find room rather than a 429 for both. Only while another caller spends (the API counts more than the
 * service's own calls): a key the service has to itself is spent to the end of every window, where `remaining` falls
 * to nothing by design, and a margin there would only cost quota.
 */
export const ZONES = Object.freeze({
  yellowBelow: 0.5,
  redBelow: 0.1,
  yellowMargin: 0.25,
  redMargin: 0.5,
});

/** What the service leaves another caller of what remains, `remaining` of `limit` (see {@link ZONES}). */
export function zoneMargin(remaining: number, limit: number): number {
  if (remaining < ZONES.redBelow * limit) return Math.ceil(ZONES.redMargin * remaining);
  if (remaining < ZONES.yellowBelow * limit) return Math.ceil(ZONES.yellowMargin * remaining);
  return 0;
}

/** What is learnt of one tier, kept with the lane's state. */
export interface LearnedTierJSON {
  /** The limit in force. */
  readonly limit: number;
  readonly source: LimitSource;
  /** Since when `limit` and `source` are in force (epoch ms). */
  readonly since: number;
  /** When the latest reading folded was read: the store keeps the latest reading, and each is folded once. */
  readonly readAt?: number;
  /** The API's latest `limit` header for the tier, and when it was read. */
  readonly header?: { readonly limit: number; readonly at: number };
  /**
   * What other callers spent of the tier by the latest `remaining`, with the zone's margin (see {@link ZONES}), left to
   * them until `until`.
   */
  readonly foreign?: { readonly units: number; readonly until: number };
  /** The limit 429s left, while below the configured one, and the latest cut: when, and the usage it came at. */
  readonly cut?: { readonly limit: number; readonly at: number; readonly ceiling: number; readonly grewAt: number };
}

/** The learned limits of a lane, by tier key (sliding tiers only), as stored with its state. */
export interface LearnedLimitsJSON {
  readonly v: 1;
  readonly tiers: Readonly<Partial<Record<TierKey, LearnedTierJSON>>>;
  /** The latest 429 folded, so that it is folded once. */
  readonly rateLimitedAt?: number;
}

const SOURCES: readonly LimitSource[] = ['configured', 'header', 'remaining', 'rate-limited'];

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/**
 * Whether `json` has the shape of {@link LearnedLimitsJSON}, for stores that read a lane's state back: each tier's
 * `limit`, `source` and `since` (what it carries beside them is its own business, rebuilt as it is folded).
 */
export function isLearnedLimitsJSON(json: unknown): json is LearnedLimitsJSON {
  if (typeof json !== 'object' || json === null || (json as { v?: unknown }).v !== 1) return false;
  const { tiers, rateLimitedAt } = json as { tiers?: unknown; rateLimitedAt?: unknown };
  if (typeof tiers !== 'object' || tiers === null || (rateLimitedAt !== undefined && !isNumber(rateLimitedAt)))
    return false;
  return Object.values(tiers).every((tier: unknown) => {
    const t = tier as Partial<Record<keyof LearnedTierJSON, unknown>> | null;
    return (
      t !== null &&
      isNumber(t.limit) &&
      t.limit >= 0 &&
      isNumber(t.since) &&
      (SOURCES as readonly unknown[]).includes(t.source)
    );
  });
}

/** A change of a tier's limit in force, for logs and metrics. */
export interface LimitChange {
  readonly tier: Tier;
  readonly from: number;
  readonly to: number;
  readonly source: LimitSource;
}

/** One tier's limit in force with its origins, for `ops status` and reports. */
export interface TierLimit {
  readonly tier: Tier;
  readonly configured: number;
  readonly limit: number;
  readonly source: LimitSource;
  readonly since: number;
}

/** The tier of `tiers` a reading speaks of: its family's unit, and the window it names or `settings.per`. */
export function tierOfReading(
  reading: Pick<LimitReading, 'family' | 'windowMs'>,
  tiers: readonly Tier[],
  settings: ReadingTiers,
): number {
  const unit = settings.units[reading.family];
  return tiers.findIndex(
    (tier) =>
      tier.kind === 'sliding' &&
      tier.unit === unit &&
      (reading.windowMs === undefined ? tier.per === settings.per : tier.windowMs === reading.windowMs),
  );
}

/**
 * Learns each sliding tier's limit in force from what the API's answers say, as a pure state machine: the lower of
 * the configured limit and what the API says it allows, never above the configured limit.
 * - A `limit` header below the configured limit is taken at once, and the latest one stands until another says
 *   otherwise.
 * - A `remaining` below what the service's own usage in the window leaves says that another caller spends on the
 *   key: its share (the API's count less the service's own) is left to it until the reading's reset, one window at
 *   most. The service's count includes calls reserved but not yet arrived, and is taken at the flush, less what can
 *   have left the window since the answer was read, so the share is never overestimated. As what remains falls, the
 *   service leaves the other caller a margin of it too (the traffic-light zones, see {@link ZONES}).
 * - A 429 without headers cuts the tiers at least half used (see {@link LEARNING}), once per window.
 * Calendar tiers keep their configured limits.
 */
export class LimitLearner {
  private readonly learned = new Map<TierKey, LearnedTierJSON>();
  private rateLimitedAt: number | undefined;

  constructor(
    readonly tiers: readonly Tier[],
    private readonly settings: ReadingTiers,
    json?: LearnedLimitsJSON,
  ) {
    for (const tier of tiers) {
      const key = tierKeyOf(tier.per, tier.unit);
      const saved = json?.tiers[key];
      if (saved !== undefined && tier.kind === 'sliding') this.learned.set(key, saved);
    }
    this.rateLimitedAt = json?.rateLimitedAt;
  }

  /**
   * Folds `observations` at `now`, `usage` being what each tier (in order) holds in its window at `now`.
   * @returns the tiers whose limit in force changed.
   */
  observe(now: number, observations: LimitObservations, usage: readonly number[]): LimitChange[] {
    const before = this.limits(now);
    const readings = [...observations.readings].sort((a, b) => a.at - b.at);
    for (const reading of readings) {
      const i = tierOfReading(reading, this.tiers, this.settings);
      if (i >= 0) this.fold(i, reading, usage[i] ?? 0, now);
    }
    const at = observations.rateLimitedAt;
    if (at !== undefined && (this.rateLimitedAt === undefined || at > this.rateLimitedAt)) {
      this.rateLimitedAt = at;
      this.cut(at, usage, this.limits(now));
    }
    this.grow(now, usage);
    return this.settle(now, before);
  }

  /** The limit in force of each tier at `now`, in order. */
  limits(now: number): number[] {
    return this.tiers.map((tier) => this.inForce(tier, now).limit);
  }

  /** Each tier's limit in force at `now` with its origins. */
  describe(now: number): TierLimit[] {
    return this.tiers.map((tier) => {
      const { limit, source } = this.inForce(tier, now);
      const since = this.learned.get(tierKeyOf(tier.per, tier.unit))?.since ?? 0;
      return { tier, configured: tier.limit, limit, source, since };
    });
  }

  /** The form kept with the lane's state. */
  toJSON(): LearnedLimitsJSON {
    return {
      v: 1,
      tiers: Object.fromEntries(this.learned),
      ...(this.rateLimitedAt === undefined ? {} : { rateLimitedAt: this.rateLimitedAt }),
    };
  }

  /** `tier`'s limit in force at `now`, and what binds it. */
  private inForce(tier: Tier, now: number): { readonly limit: number; readonly source: LimitSource } {
    let best: { limit: number; source: LimitSource } = { limit: tier.limit, source: 'configured' };
    const learned = this.learned.get(tierKeyOf(tier.per, tier.unit));
    if (learned?.header !== undefined && learned.header.limit < best.limit)
      best = { limit: learned.header.limit, source: 'header' };
    if (learned?.cut !== undefined && learned.cut.limit < best.limit)
      best = { limit: learned.cut.limit, source: 'rate-limited' };
    const foreign = learned?.foreign;
    if (foreign !== undefined && foreign.until > now && foreign.units > 0)
      best = { limit: Math.max(0, best.limit - foreign.units), source: 'remaining' };
    return best;
  }

  /** Folds one reading of the `i`-th tier, which holds `used` units at `now`. */
  private fold(i: number, reading: ObservedReading, used: number, now: number): void {
    const tier = this.tiers[i];
    if (tier?.kind !== 'sliding') return;
    const key = tierKeyOf(tier.per, tier.unit);
    const learned = this.learned.get(key) ?? { limit: tier.limit, source: 'configured', since: reading.at };
    if (learned.readAt !== undefined && reading.at <= learned.readAt) return;
    const header = reading.limit === undefined ? learned.header : { limit: reading.limit, at: reading.at };
    let foreign = learned.foreign;
    if (reading.remaining !== undefined) {
      const limit = reading.limit ?? header?.limit ?? tier.limit;
      // `used` is the service's count at the flush, not when the answer was read: calls that left the window in
      // between counted for the API then. At the tier's rate, no more than this many can have left it.
      const left = Math.ceil((Math.max(0, now - reading.at) / tier.windowMs) * limit);
      const units = Math.max(0, limit - reading.remaining - used - left);
      const until = Math.min(reading.resetAt ?? Number.POSITIVE_INFINITY, reading.at + tier.windowMs);
      foreign = units > 0 ? { units: units + zoneMargin(reading.remaining, limit), until } : undefined;
    }
    this.learned.set(key, withOptional({ ...learned, readAt: reading.at }, { header, foreign }));
  }

  /** Cuts, at a 429 at `at`, each sliding tier at least half used (by `usage`) of its limit in force, once per window. */
  private cut(at: number, usage: readonly number[], limits: readonly number[]): void {
    this.tiers.forEach((tier, i) => {
      const limit = limits[i] ?? tier.limit;
      const used = usage[i] ?? 0;
      if (tier.kind !== 'sliding' || used < LEARNING.busyShare * limit) return;
      const key = tierKeyOf(tier.per, tier.unit);
      const learned = this.learned.get(key) ?? { limit: tier.limit, source: 'configured', since: at };
      if (learned.cut !== undefined && at < learned.cut.at + tier.windowMs) return;
      const ceiling = Math.max(1, Math.min(limit, used));
      const cut = { limit: Math.max(1, Math.floor(LEARNING.cutFactor * ceiling)), at, ceiling, grewAt: at };
      this.learned.set(key, { ...learned, cut });
    });
  }

  /** Grows each cut limit back, a window after its last change, while its tier was at least half used (by `usage`). */
  private grow(now: number, usage: readonly number[]): void {
    this.tiers.forEach((tier, i) => {
      if (tier.kind !== 'sliding') return;
      const key = tierKeyOf(tier.per, tier.unit);
      const learned = this.learned.get(key);
      const cut = learned?.cut;
      if (learned === undefined || cut === undefined || now < cut.grewAt + tier.windowMs) return;
      if ((usage[i] ?? 0) < LEARNING.busyShare * cut.limit) return;
      const base = tier.limit;
      const remembered = now < cut.at + LEARNING.ceilingWindows * tier.windowMs;
      const cap = remembered ? Math.max(cut.limit, Math.floor(LEARNING.ceilingShare * cut.ceiling)) : base;
      const limit = Math.min(cap, cut.limit + Math.max(1, Math.ceil(LEARNING.growShare * base)));
      this.learned.set(key, withOptional(learned, { cut: limit >= base ? undefined : { ...cut, limit, grewAt: now } }));
    });
  }

  /** Records when each tier's limit in force changed since `before`, and returns the changes. */
  private settle(now: number, before: readonly number[]): LimitChange[] {
    const changes: LimitChange[] = [];
    this.tiers.forEach((tier, i) => {
      const { limit, source } = this.inForce(tier, now);
      const key = tierKeyOf(tier.per, tier.unit);
      const learned = this.learned.get(key);
      if (learned !== undefined && (learned.limit !== limit || learned.source !== source))
        this.learned.set(key, { ...learned, limit, source, since: now });
      const from = before[i] ?? tier.limit;
      if (from !== limit) changes.push({ tier, from, to: limit, source });
    });
    return changes;
  }
}

/** `learned` with each field of `fields` set, or left out where it is `undefined`. */
function withOptional(
  learned: LearnedTierJSON,
  fields: Partial<Pick<LearnedTierJSON, 'header' | 'foreign' | 'cut'>>,
): LearnedTierJSON {
  const next: Record<string, unknown> = { ...learned, ...fields };
  for (const [name, value] of Object.entries(fields)) if (value === undefined) delete next[name];
  return next as unknown as LearnedTierJSON;
}
