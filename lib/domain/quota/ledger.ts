import { QuotaExceededError, StateFormatError } from '../../errors';
import { CalendarCounter } from './calendarCounter';
import { isSlidingTierJSON, parseLedgerJSON, type LedgerJSON, type TierJSON } from './ledgerJSON';
import { SlidingCounter } from './slidingCounter';
import type { TierCounter } from './tierCounter';
import { tierKeyOf, unitsFor, type Costs, type Tier, type TierKey, type TierKind } from './tiers';

/**
 * Quota taken for one dispatch. It is plain data, so a worker can carry it in its event and report it back.
 */
export interface Reservation {
  /** Dispatch instant, epoch ms. */
  readonly at: number;
  /** Units reserved per named unit (see `TierUnit`): the message's estimates. */
  readonly costs: Costs;
  /** Calendar window each calendar tier charged, e.g. `{"day:requests": "2026-11-23"}`. */
  readonly windows: Readonly<Partial<Record<TierKey, string>>>;
  /**
   * On a lane that draws from pools (see `ServiceConfig.pools`): the same dispatch's reservation in each pool, by
   * pool, as the calendar windows its tiers charged there (its instant and costs are this reservation's). A worker
   * settles it in each pool as in the lane (see `settlementsByState`).
   */
  readonly pools?: Readonly<Record<string, Readonly<Partial<Record<TierKey, string>>>>>;
}

/** How a reservation ended: with the usage of a call that reached the API, or with no call at all. */
export interface Settlement {
  readonly reservation: Reservation;
  /**
   * Units the call really used, per named unit (a unit left out used what was reserved), or `null` when the call
   * never reached the API (all quota flows back). A settlement whose usage equals its reservation changes no count:
   * it only frees its dispatch's call slot (see `CallSlots`).
   */
  readonly actual: Costs | null;
  /**
   * Names the settlement (workers use the id of the dispatch whose reservation it settles), so that a copy recorded
   * twice, by a write retried after it landed, is folded once. Settlements recorded before ids existed have none.
   */
  readonly id?: string;
  /**
   * For a reservation given back by a worker that started too late to call: how long after its event was sent it
   * started, so that the orchestrator can dispatch earlier (see `DispatchLead`).
   */
  readonly startDelayMs?: number;
  /**
   * For a reservation given back by a job that waited for the message before it of its FIFO group, in the same
   * batch, and was then too late to call: how long after that message's slot it could start, so that the
   * orchestrator spaces a group's messages in a batch further apart (see `ChainGap`).
   */
  readonly chainGapMs?: number;
}

/** Where a cost fits: the earliest instant, and the tier that held it back longest (`-1` if none did). */
export interface Fit {
  readonly at: number;
  readonly tier: number;
}

/**
 * Quota a running orchestrator may still dispatch before it saves the ledger again: per tier (in configured order)
 * at most `units[i]`, all at instants <= `until`. A ledger saved with an allowance holds those units as if they had
 * all gone at `until`, so a successor that rehydrates it after a crash cannot overshoot any tier; at worst the held
 * quota goes unused.
 */
export interface Allowance {
  readonly until: number;
  readonly units: readonly number[];
}

/** One tier's usage at an instant, for reports. */
export interface TierUsage {
  readonly tier: Tier;
  readonly used: number;
}

/**
 * What a tier's counter starts from: its `saved` form; else, when `uncountedUntil` is given, every call slotted by
 * then counted as filling it (see {@link LedgerOptions.uncountedUntil}); else nothing.
 */
interface CounterStart {
  readonly saved: TierJSON | undefined;
  readonly uncountedUntil: number | undefined;
}

/**
 * The counter of `tier`'s kind, rehydrated from `start`. A new kind of tier adds its {@link TierCounter} here, and
 * its JSON to `TierJSON`.
 * @throws StateFormatError when the saved form is that of another kind of tier.
 */
function counterFor(tier: Tier, timeZone: string, marginMs: number, start: CounterStart): TierCounter {
  const { saved, uncountedUntil } = start;
  const mismatch = (savedAs: TierKind) =>
    new StateFormatError(
      `stored ledger is unreadable: tier "${tierKeyOf(tier.per, tier.unit)}" is saved as a ${savedAs} tier`,
    );
  switch (tier.kind) {
    case 'sliding': {
      // Counted `marginMs` longer: calls reserved at most a window apart may arrive up to the margin closer together.
      const windowMs = tier.windowMs + marginMs;
      if (saved !== undefined) {
        if (!isSlidingTierJSON(saved)) throw mismatch('calendar');
        return SlidingCounter.fromJSON(tier.limit, windowMs, saved);
      }
      return uncountedUntil === undefined
        ? new SlidingCounter(tier.limit, windowMs)
        : SlidingCounter.filledThrough(tier.limit, windowMs, uncountedUntil);
    }
    case 'calendar':
      if (saved !== undefined) {
        if (isSlidingTierJSON(saved)) throw mismatch('sliding');
        return CalendarCounter.fromJSON(tier.limit, tier.per, timeZone, marginMs, saved);
      }
      return uncountedUntil === undefined
        ? new CalendarCounter(tier.limit, tier.per, timeZone, marginMs)
        : CalendarCounter.filledThrough(tier.limit, tier.per, timeZone, marginMs, uncountedUntil);
  }
}

/** Options of {@link QuotaLedger}. */
export interface LedgerOptions {
  /** IANA time zone of day and month windows. @default 'UTC' */
  readonly timeZone?: string;
  /**
   * How far from its reservation instant a call may reach the API (see `PacingSettings.arrivalMarginMs`): sliding
   * windows are counted this much longer, and calendar tiers reserve nothing within it of a window boundary.
   * @default 0
   */
  readonly arrivalMarginMs?: number;
  /**
   * For a ledger rehydrated from a saved one: the latest instant at which a call made before it was rehydrated may
   * have been slotted. A configured tier the saved ledger lacks was added since it was saved (by a deploy), and never
   * counted those calls, so it counts them as filling it: full until they have all left its windows (one window after
   * this instant for a sliding tier; to the end of this instant's calendar window for a calendar tier). Saved tiers
   * are counted as saved. @default none: a tier the saved ledger lacks starts empty, as an operator's read-out shows it
   */
  readonly uncountedUntil?: number;
}

/**
 * The quota ledger of one lane: every tier's usage, checked and charged together.
 *
 * - Sliding tiers (second, minute, hour) keep bucketed history (see `BUCKETS_PER_WINDOW`) and are never
 *   exceeded in any window `(T − W, T]`.
 * - Calendar tiers (day, month) count units in the current window of the configured time zone.
 * - With an arrival margin (see {@link LedgerOptions.arrivalMarginMs}), both hold for calls that reach the API up to
 *   that margin away from the instant they were reserved at.
 *
 * Reserve before dispatch; settle after the call with the actual cost, or with `null` when the call never reached
 * the API, so unused quota flows back and under-estimates are charged. The ledger is pure: time comes in as `now`.
 */
export class QuotaLedger {
  private readonly counters: TierCounter[];
  /** Per tier, a lower limit in force than its configured one (see {@link QuotaLedger.limitTo}), if any. */
  private caps: readonly (number | undefined)[] = [];

  constructor(
    readonly tiers: readonly Tier[],
    options: LedgerOptions = {},
    json?: LedgerJSON,
  ) {
    const timeZone = options.timeZone ?? 'UTC';
    const marginMs = options.arrivalMarginMs ?? 0;
    const uncountedUntil = json === undefined ? undefined : options.uncountedUntil;
    this.counters = tiers.map((tier) =>
      counterFor(tier, timeZone, marginMs, { saved: json?.tiers[tierKeyOf(tier.per, tier.unit)], uncountedUntil }),
    );
  }

  /**
   * Rehydrates a ledger saved by {@link QuotaLedger.toJSON}, its tiers matched by period and unit (see `TierKey`).
   * Tiers that are configured but not saved start empty, or full with {@link LedgerOptions.uncountedUntil}; saved
   * tiers no longer configured are dropped.
   * @throws StateFormatError when `json` is not a ledger of a known version.
   */
  static fromJSON(tiers: readonly Tier[], json: unknown, options: LedgerOptions = {}): QuotaLedger {
    return new QuotaLedger(tiers, options, parseLedgerJSON(json));
  }

  /**
   * Holds every tier to `limits` (in configured order) where it is below its configured limit: the limits in force
   * the lane learnt from the API (see `LimitLearner`). A message whose units are more than a tier's limit in force,
   * but not more than its configured limit, still fits once the window is empty: a learned limit delays a call, never
   * refuses it for good. Settles nothing and forgets nothing: the counts stay as they are.
   */
  limitTo(limits: readonly number[]): void {
    this.caps = this.tiers.map((tier, i) => {
      const limit = limits[i];
      return limit !== undefined && limit < tier.limit ? limit : undefined;
    });
  }

  /** Earliest instant >= `now` at which a message of `costs` fits every tier (`at: Infinity` if it never can). */
  earliestFit(now: number, costs: Costs): Fit {
    let fit: Fit = { at: now, tier: -1 };
    this.tiers.forEach((tier, i) => {
      const at = this.counters[i]?.earliestFit(now, unitsFor(tier, costs), this.caps[i]) ?? now;
      if (at > fit.at) fit = { at, tier: i };
    });
    return fit;
  }

  /**
   * Charges a message of `costs` dispatched at `now` to every tier.
   * @throws QuotaExceededError if it does not fit at `now`; nothing is charged then.
   */
  reserve(now: number, costs: Costs): Reservation {
    const fit = this.earliestFit(now, costs);
    if (fit.at > now) throw new QuotaExceededError(fit.tier, fit.at);
    const windows: Partial<Record<TierKey, string>> = {};
    this.tiers.forEach((tier, i) => {
      const key = this.counters[i]?.add(now, unitsFor(tier, costs));
      if (key !== undefined) windows[tierKeyOf(tier.per, tier.unit)] = key;
    });
    return { at: now, costs, windows };
  }

  /**
   * Settles a reservation: a call that never reached the API gives back everything; one that did is charged its
   * actual usage on each named unit's tiers (more or less than reserved), so that the unused part of a reservation is
   * free for the next dispatch at once. Windows that have since closed are left alone.
   */
  settle(settlement: Settlement): void {
    const { reservation } = settlement;
    this.tiers.forEach((tier, i) => {
      const reserved = unitsFor(tier, reservation.costs);
      const actual = settledUnits(tier, settlement);
      const window = reservation.windows[tierKeyOf(tier.per, tier.unit)];
      if (actual !== reserved) this.counters[i]?.adjust(reservation.at, window, actual - reserved);
    });
  }

  /** Units each tier holds at `now`. */
  usage(now: number): TierUsage[] {
    return this.tiers.map((tier, i) => ({ tier, used: this.counters[i]?.used(now) ?? 0 }));
  }

  /**
   * The compact form to persist: at most `BUCKETS_PER_WINDOW + 1` bucket amounts plus two numbers per sliding tier (fewer once history
   * older than a window is pruned, which happens on every reserve and usage read) and two values per calendar tier.
   */
  toJSON(): LedgerJSON {
    return this.snapshot();
  }

  /** {@link QuotaLedger.toJSON}, holding `allowance` as used when given: what a run saves while it may still dispatch. */
  snapshot(allowance?: Allowance): LedgerJSON {
    const tiers: Partial<Record<TierKey, TierJSON>> = {};
    this.tiers.forEach((tier, i) => {
      const counter = this.counters[i];
      const held = allowance === undefined ? undefined : { until: allowance.until, units: allowance.units[i] ?? 0 };
      if (counter !== undefined) tiers[tierKeyOf(tier.per, tier.unit)] = counter.toJSON(held);
    });
    return { v: 1, tiers };
  }

  /**
   * The latest end an {@link Allowance} granted at `now` may have: `now + horizonMs`, but before the current calendar
   * window of any calendar tier ends, since the held units are charged to the current window only.
   */
  allowanceEnd(now: number, horizonMs: number): number {
    return Math.min(now + horizonMs, ...this.counters.map((c) => c.windowEnd(now) - 1));
  }
}

/** The units `settlement` charges `tier` in the end: none without a call, else the usage (the reservation where it reports none). */
export function settledUnits(tier: Pick<Tier, 'unit'>, settlement: Settlement): number {
  const { reservation, actual } = settlement;
  if (actual === null) return 0;
  return unitsFor(tier, { ...reservation.costs, ...actual });
}
