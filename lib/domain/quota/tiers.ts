import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';

/** The length of a quota window. Second, minute and hour windows slide; day and month windows are calendar windows. */
export type Period = 'second' | 'minute' | 'hour' | 'day' | 'month';

/** What a tier counts: one per request, or a message's `cost` (e.g. tokens). */
export type TierUnit = 'requests' | 'cost';

/** One quota tier: at most `limit` units per `per`. */
export interface Tier {
  /** Positive integer: the most units the window may hold. */
  readonly limit: number;
  /** Window length. */
  readonly per: Period;
  /** What is counted. @default 'requests' */
  readonly unit: TierUnit;
}

/** Every accepted `per`, in increasing window length. */
export const PERIODS: readonly Period[] = ['second', 'minute', 'hour', 'day', 'month'];

/** Every accepted `unit`. */
export const UNITS: readonly TierUnit[] = ['requests', 'cost'];

/** Largest accepted limit and cost: far above any real quota, small enough for exact integer arithmetic. */
export const MAX_QUANTITY = 1e12;

const SLIDING_WINDOW_MS: Partial<Record<Period, number>> = { second: 1_000, minute: 60_000, hour: 3_600_000 };

/** True for tiers that must hold in every sliding window (second, minute, hour). */
export function isSliding(per: Period): per is 'second' | 'minute' | 'hour' {
  return per in SLIDING_WINDOW_MS;
}

/**
 * Length in ms of a sliding window.
 * @throws Error for calendar periods, whose length varies.
 */
export function slidingWindowMs(per: Period): number {
  const ms = SLIDING_WINDOW_MS[per];
  if (ms === undefined) throw new Error(`'${per}' is a calendar period, not a sliding window`);
  return ms;
}

/** The units a message of `cost` takes from `tier`. */
export function unitsFor(tier: Tier, cost: number): number {
  return tier.unit === 'cost' ? cost : 1;
}

/** Long-run rate of a sliding tier in units per ms. */
export function tierRatePerMs(tier: Tier): number {
  return tier.limit / slidingWindowMs(tier.per);
}

/** Options of {@link parseTiers}. */
export interface ParseTiersOptions {
  /** Name of the field in error messages. @default 'quotas' */
  readonly field?: string;
  /**
   * Whether the job source gives messages a cost. A `cost` tier is refused where it does not, since it would
   * only count requests under another name.
   * @default true
   */
  readonly costsAvailable?: boolean;
}

/**
 * Validates a tier set (e.g. the parsed `QUOTAS` JSON) and returns it frozen, with defaults filled in.
 * @throws ConfigError naming the offending field and the allowed values: an empty or non-array set, a limit that
 * is not an integer in 1..1e12, an unknown `per` or `unit`, an unknown key, a duplicate tier, or a cost tier where
 * jobs carry no cost.
 */
export function parseTiers(input: unknown, options: ParseTiersOptions = {}): readonly Tier[] {
  const field = options.field ?? 'quotas';
  if (!Array.isArray(input)) {
    throw new ConfigError(field, `must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got ${describeValue(input)}`);
  }
  if (input.length === 0) {
    throw new ConfigError(field, 'must hold at least one tier, e.g. [{"limit":10,"per":"second"}]; got an empty list');
  }
  const tiers = input.map((raw, i) => parseTier(raw, `${field}[${i}]`, options.costsAvailable ?? true));
  tiers.forEach((tier, i) => {
    const j = tiers.findIndex((other) => other.per === tier.per && other.unit === tier.unit);
    if (j !== i) {
      throw new ConfigError(`${field}[${i}]`, `duplicates ${field}[${j}] (per '${tier.per}', unit '${tier.unit}'); keep one tier per period and unit`);
    }
  });
  return Object.freeze(tiers);
}

function parseTier(raw: unknown, field: string, costsAvailable: boolean): Tier {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(field, `must be an object {"limit", "per", "unit"?}; got ${describeValue(raw)}`);
  }
  const record = raw as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!['limit', 'per', 'unit'].includes(key)) {
      throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are limit, per, unit`);
    }
  }
  const { limit, per, unit = 'requests' } = record;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_QUANTITY) {
    throw new ConfigError(`${field}.limit`, `must be an integer from 1 to ${MAX_QUANTITY}; got ${describeValue(limit)}`);
  }
  if (typeof per !== 'string' || !(PERIODS as readonly string[]).includes(per)) {
    throw new ConfigError(`${field}.per`, `must be one of ${PERIODS.join(', ')}; got ${describeValue(per)}`);
  }
  if (typeof unit !== 'string' || !(UNITS as readonly string[]).includes(unit)) {
    throw new ConfigError(`${field}.unit`, `must be one of ${UNITS.join(', ')}; got ${describeValue(unit)}`);
  }
  if (unit === 'cost' && !costsAvailable) {
    throw new ConfigError(`${field}.unit`, `'cost' needs jobs that carry a cost, and these jobs carry none; use unit 'requests' or give the jobs a cost`);
  }
  return Object.freeze({ limit, per: per as Period, unit: unit as TierUnit });
}
