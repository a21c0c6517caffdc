import { ownValue } from '../ownValue';
import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';
import { calendarWindow } from './calendar';

/** A period whose windows slide: the quota holds in every window of that length, ending at any instant. */
export type SlidingPeriod = 'second' | 'minute' | 'hour';

/** A period whose windows are calendar days or months (in the ledger's time zone). */
export type CalendarPeriod = 'day' | 'month';

/** The length of a quota window. Second, minute and hour windows slide; day and month windows are calendar windows. */
export type Period = SlidingPeriod | CalendarPeriod;

/**
 * What a tier counts: `requests` (one per call), or a named unit such as `cost` (the message attribute of that name),
 * `input_tokens`, `output_tokens` or `tokens`: each message carries its estimate of the unit as a Number attribute of
 * the same name (see `parseJob`), and the worker settles it with the usage the API reports (see `usageSources`).
 */
export type TierUnit = string;

/** Units a message takes, per named unit (`{"input_tokens": 1200, "output_tokens": 1024}`). */
export type Costs = Readonly<Record<string, number>>;

/** Adds `costs` into `total`, unit by unit. */
export function addCosts(total: Record<string, number>, costs: Costs): void {
  for (const [unit, n] of Object.entries(costs)) total[unit] = (total[unit] ?? 0) + n;
}

/** The unit a tier counts when it names none: one per call. */
export const REQUESTS = 'requests';

/** The named unit whose estimate is the message attribute `cost`, 1 when absent: the unit tiers counted before units had names. */
export const COST_UNIT = 'cost';

/** One quota tier as configured (`QUOTAS`, `custom.quotaOrchestrator.quotas`): at most `limit` units per `per`. */
export interface TierSpec {
  /** Positive integer: the most units the window may hold. */
  readonly limit: number;
  /** Window length. */
  readonly per: Period;
  /** What is counted: `requests`, or a named unit (see {@link TierUnit}). @default 'requests' */
  readonly unit: TierUnit;
}

/** A long-run rate: `units` every `perMs`, kept as the pair so that callers' arithmetic stays exact. */
export interface SteadyRate {
  /** Units given back… */
  readonly units: number;
  /** …every this many ms. */
  readonly perMs: number;
}

/**
 * How a tier's windows run: what the pacer, the services and the referees ask a tier instead of switching on its
 * kind, so that a new kind of tier is a new class here (and a counter in the ledger) and nothing else.
 */
export interface TierWindows {
  /** How the windows are laid out. */
  readonly kind: string;
  /**
   * The rate the tier sustains however its quota is spent, or `undefined` if it sets no pace (its quota comes
   * back all at once when a window ends, so it caps a total).
   */
  steadyRate(): SteadyRate | undefined;
  /**
   * The first instant at which a call at `at` no longer counts against the tier, with calendar windows in
   * `timeZone`. Never decreases as `at` grows, so calls in time order also stop counting in that order.
   */
  countsUntil(at: number, timeZone: string): number;
  /**
   * Whether, whatever the time zone, every window that counts a call at `t` has closed by `by`, so that no call
   * from `by` on can share a window with it.
   */
  windowClosesBy(t: number, by: number): boolean;
}

const SLIDING_WINDOW_MS: Readonly<Record<SlidingPeriod, number>> = { second: 1_000, minute: 60_000, hour: 3_600_000 };

/**
 * A tier held in every sliding window `(T − windowMs, T]`. Built by {@link parseTiers}. `kind` and `windowMs`
 * follow from `per` and live on the prototype, so the tier's own fields are its configured form: it serialises
 * to, and parses back from, what users write.
 */
export class SlidingTier implements TierSpec, TierWindows {
  constructor(
    readonly limit: number,
    readonly per: SlidingPeriod,
    readonly unit: TierUnit,
  ) {}

  /** Its windows slide. */
  get kind(): 'sliding' {
    return 'sliding';
  }

  /** Length of its windows in ms. */
  get windowMs(): number {
    return SLIDING_WINDOW_MS[this.per];
  }

  /** Its limit every window. */
  steadyRate(): SteadyRate {
    return { units: this.limit, perMs: this.windowMs };
  }

  /** One window after the call: it counts in every window `(T − W, T]` with `T < at + W`. */
  countsUntil(at: number): number {
    return at + this.windowMs;
  }

  /** When `t + windowMs <= by`. */
  windowClosesBy(t: number, by: number): boolean {
    return t + this.windowMs <= by;
  }
}

/**
 * A tier counted per calendar day or month; window lengths vary, so it has no `windowMs`. Built by
 * {@link parseTiers}; like {@link SlidingTier}, its own fields are its configured form.
 */
export class CalendarTier implements TierSpec, TierWindows {
  constructor(
    readonly limit: number,
    readonly per: CalendarPeriod,
    readonly unit: TierUnit,
  ) {}

  /** Its windows are calendar days or months. */
  get kind(): 'calendar' {
    return 'calendar';
  }

  /** None: its whole quota comes back at once when its window ends. */
  steadyRate(): undefined {
    return undefined;
  }

  /** The end of the call's calendar window in `timeZone`. */
  countsUntil(at: number, timeZone: string): number {
    return calendarWindow(at, this.per, timeZone).end;
  }

  /** Never: where a calendar window ends depends on the time zone. */
  windowClosesBy(): boolean {
    return false;
  }
}

/** One quota tier, as {@link parseTiers} returns it: at most `limit` units per `per`, in windows of its `kind`. */
export type Tier = SlidingTier | CalendarTier;

/** How a tier's windows are laid out. */
export type TierKind = Tier['kind'];

/** Identifies a tier within a tier set: its period and unit (a valid set holds each pair once). */
export type TierKey = `${Period}:${TierUnit}`;

/** The key of a tier within its set. */
export function tierKeyOf(per: Period, unit: TierUnit): TierKey {
  return `${per}:${unit}`;
}

/** Every accepted `per`, in increasing window length. */
export const PERIODS: readonly Period[] = ['second', 'minute', 'hour', 'day', 'month'];

/** Largest accepted limit and cost: far above any real quota, small enough for exact integer arithmetic. */
export const MAX_QUANTITY = 1e12;

/** The units a message of `costs` takes from `tier`: 1 for a request tier, else its estimate of the tier's unit (0 if it has none). */
export function unitsFor(tier: Pick<TierSpec, 'unit'>, costs: Costs): number {
  return tier.unit === REQUESTS ? 1 : (ownValue(costs, tier.unit) ?? 0);
}

/** The named units `tiers` count, each once, in the order of the tiers (`requests` is no named unit). */
export function namedUnits(tiers: readonly Pick<TierSpec, 'unit'>[]): string[] {
  return [...new Set(tiers.map((tier) => tier.unit).filter((unit) => unit !== REQUESTS))];
}

/** How a tier is named in events, logs and read-outs: `20000/day`, `1000000 cost/month`, `40000 input_tokens/minute`. */
export function tierLabel(tier: TierSpec): string {
  return `${tier.limit}${tier.unit === REQUESTS ? '' : ` ${tier.unit}`}/${tier.per}`;
}

/**
 * Message attributes the service itself sets or reads, which no unit may be named after (a message carries each
 * unit's estimate as the attribute of its name).
 */
const RESERVED_ATTRIBUTE_NAMES: ReadonlySet<string> = new Set([
  'idempotencyKey',
  'attempt',
  'reason',
  'sourceQueue',
  'originalMessageId',
  'dispatchId',
  'apiError',
  'packedAttributes',
]);

/**
 * Why `name` cannot name a unit, or `undefined` when it can. A unit's estimate travels as an SQS message attribute of
 * the same name, so the name follows SQS's rules for attribute names: 1 to 256 of `A-Z a-z 0-9 _ - .`, no leading or
 * trailing period, no two periods in a row, and no `AWS.` or `Amazon.` prefix (any case). It may not be one of the
 * service's own attributes either, nor `requests`, the unit of request tiers, nor a member every JavaScript object
 * inherits (`constructor`, `toString`, `__proto__`…).
 */
export function unitNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9_.-]{1,256}$/.test(name))
    return 'must be 1 to 256 of the characters A-Z, a-z, 0-9, _, - and . (an SQS message attribute name)';
  if (name.startsWith('.') || name.endsWith('.') || name.includes('..'))
    return 'must not start or end with a period, nor hold two in a row (SQS attribute names may not)';
  if (/^(aws|amazon)\./i.test(name)) return "must not start with 'AWS.' or 'Amazon.' (reserved by SQS)";
  if (RESERVED_ATTRIBUTE_NAMES.has(name))
    return `is a message attribute of the service itself (${[...RESERVED_ATTRIBUTE_NAMES].join(', ')})`;
  if (name in Object.prototype)
    return 'is a member of every JavaScript object (constructor, toString, __proto__…), which the service could mistake for an estimate';
  return undefined;
}

const isSlidingPeriod = (per: Period): per is SlidingPeriod => per in SLIDING_WINDOW_MS;

/** The tier `spec` describes, frozen; its kind follows from its period. */
function tierOf({ limit, per, unit }: TierSpec): Tier {
  return Object.freeze(isSlidingPeriod(per) ? new SlidingTier(limit, per, unit) : new CalendarTier(limit, per, unit));
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
 * Validates a tier set (e.g. the parsed `QUOTAS` JSON) and returns its tiers, frozen, with defaults filled in.
 * @throws ConfigError naming the offending field and the allowed values: an empty or non-array set, a limit that
 * is not an integer in 1..1e12, an unknown `per` or `unit`, an unknown key, a duplicate tier, or a cost tier where
 * jobs carry no cost.
 */
export function parseTiers(input: unknown, options: ParseTiersOptions = {}): readonly Tier[] {
  const field = options.field ?? 'quotas';
  if (!Array.isArray(input)) {
    throw new ConfigError(
      field,
      `must be a non-empty JSON array of tiers such as [{"limit":10,"per":"second"}]; got ${describeValue(input)}`,
    );
  }
  if (input.length === 0) {
    throw new ConfigError(field, 'must hold at least one tier, e.g. [{"limit":10,"per":"second"}]; got an empty list');
  }
  const tiers = input.map((raw, i) => parseTier(raw, `${field}[${i}]`, options.costsAvailable ?? true));
  tiers.forEach((tier, i) => {
    const j = tiers.findIndex((other) => other.per === tier.per && other.unit === tier.unit);
    if (j !== i) {
      throw new ConfigError(
        `${field}[${i}]`,
        `duplicates ${field}[${j}] (per '${tier.per}', unit '${tier.unit}'); keep one tier per period and unit`,
      );
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
  const { limit, per, unit = REQUESTS } = record;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_QUANTITY) {
    throw new ConfigError(
      `${field}.limit`,
      `must be an integer from 1 to ${MAX_QUANTITY}; got ${describeValue(limit)}`,
    );
  }
  if (typeof per !== 'string' || !(PERIODS as readonly string[]).includes(per)) {
    throw new ConfigError(`${field}.per`, `must be one of ${PERIODS.join(', ')}; got ${describeValue(per)}`);
  }
  if (typeof unit !== 'string') {
    throw new ConfigError(
      `${field}.unit`,
      `must be 'requests' or the name of a unit such as 'cost', 'input_tokens' or 'output_tokens'; got ${describeValue(unit)}`,
    );
  }
  const problem = unit === REQUESTS ? undefined : unitNameProblem(unit);
  if (problem !== undefined) throw new ConfigError(`${field}.unit`, `${problem}; got ${describeValue(unit)}`);
  if (unit === COST_UNIT && !costsAvailable) {
    throw new ConfigError(
      `${field}.unit`,
      `'cost' needs jobs that carry a cost, and these jobs carry none; use unit 'requests' or give the jobs a cost`,
    );
  }
  return tierOf({ limit, per: per as Period, unit });
}
