import { QuotaExceededError, StateFormatError } from '../../errors';
import { isCallSlotsJSON, type CallSlotsJSON } from '../inflight/callSlots';
import { calendarWindow, type CalendarWindow } from './calendar';
import {
  unitsFor,
  type CalendarPeriod,
  type Costs,
  type Period,
  type Tier,
  type TierKind,
  type TierUnit,
} from './tiers';

/** Identifies a tier within a tier set: its period and unit (a valid set holds each pair once). */
export type TierKey = `${Period}:${TierUnit}`;

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

/** Serialised history of a sliding tier: amounts per bucket of `g` ms, starting at bucket index `b`. */
export interface SlidingTierJSON {
  readonly g: number;
  readonly b: number;
  readonly a: readonly number[];
  /** Units held for a run's allowance, as `[bucket index, units]`: charged in full at the allowance's end. */
  readonly h?: readonly [number, number];
}

/** Serialised state of a calendar tier: the window key and the units used in it. */
export interface CalendarTierJSON {
  readonly w: string;
  readonly u: number;
}

/** The compact, bounded form of a ledger that is persisted and rehydrated. */
export interface LedgerJSON {
  readonly v: 1;
  readonly tiers: Readonly<Partial<Record<TierKey, SlidingTierJSON | CalendarTierJSON>>>;
  /** The calls that may be in progress, saved with the ledger on a lane with `maxInFlight` (see `CallSlots`). */
  readonly slots?: CallSlotsJSON;
}

/**
 * How finely sliding-window history is kept: each window is cut into this many buckets. A bucket's units are
 * treated as if they had all arrived at its last millisecond, so history expires at most one bucket (0.4 % of
 * the window) late: the ledger never under-counts, and costs at most 0.4 % of throughput. It also bounds the
 * serialised form to `BUCKETS_PER_WINDOW + 1` bucket amounts (plus granularity and first index) per sliding tier.
 */
export const BUCKETS_PER_WINDOW = 250;

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

interface Counter {
  /** Earliest instant >= now at which `units` more fit; `Infinity` if never. */
  earliestFit(now: number, units: number): number;
  /** Charges `units` at `now`; returns the calendar window key for calendar tiers. */
  add(now: number, units: number): string | undefined;
  /** Applies a settlement delta to the bucket of instant `at`, or to calendar window `window`, if it still counts. */
  adjust(at: number, window: string | undefined, delta: number): void;
  used(now: number): number;
  /** Instant from which dispatch needs a later window's state: the calendar window's end; `Infinity` for sliding tiers. */
  windowEnd(now: number): number;
  /** The persisted form, holding `units` more as if all were dispatched at `until` (see {@link Allowance}). */
  toJSON(held?: { readonly until: number; readonly units: number }): SlidingTierJSON | CalendarTierJSON;
}

/**
 * Sliding-window history as a dense run of buckets. Bucket `k` covers `[k·g, (k+1)·g)`; its units count in every
 * window `(T − W, T]` with `T < expiry(k) = (k+1)·g − 1 + W`, i.e. as if they arrived at the bucket's last ms.
 */
class SlidingCounter implements Counter {
  private readonly g: number;
  private first = 0;
  private amounts: number[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    this.g = windowMs / BUCKETS_PER_WINDOW;
  }

  static fromJSON(limit: number, windowMs: number, json: SlidingTierJSON): SlidingCounter {
    const counter = new SlidingCounter(limit, windowMs);
    json.a.forEach((amount, i) => {
      // Re-bucket conservatively if the granularity ever changes: keep each amount at its latest instant.
      const lastMs = (json.b + i + 1) * json.g - 1;
      if (amount > 0) counter.charge(Math.floor(lastMs / counter.g), amount);
    });
    if (json.h !== undefined && json.h[1] > 0)
      counter.charge(Math.floor(((json.h[0] + 1) * json.g - 1) / counter.g), json.h[1]);
    return counter;
  }

  private expiry(k: number): number {
    return (k + 1) * this.g - 1 + this.windowMs;
  }

  private prune(now: number): void {
    let drop = 0;
    while (drop < this.amounts.length && (this.expiry(this.first + drop) <= now || this.amounts[drop] === 0)) drop++;
    if (drop > 0) {
      this.amounts = this.amounts.slice(drop);
      this.first += drop;
    }
  }

  private total(): number {
    return this.amounts.reduce((sum, a) => sum + a, 0);
  }

  /** Reads only: a probe of a later instant must not drop buckets that still count before it. */
  earliestFit(now: number, units: number): number {
    if (units > this.limit) return Number.POSITIVE_INFINITY;
    // Buckets expire in order: those expired by `now` come first.
    let live = 0;
    while (live < this.amounts.length && this.expiry(this.first + live) <= now) live++;
    let inWindow = 0;
    for (let i = live; i < this.amounts.length; i++) inWindow += this.amounts[i] ?? 0;
    if (inWindow + units <= this.limit) return now;
    for (let i = live; i < this.amounts.length; i++) {
      inWindow -= this.amounts[i] ?? 0;
      if (inWindow + units <= this.limit) return Math.max(now, this.expiry(this.first + i));
    }
    return now; // unreachable: an empty history always fits units <= limit
  }

  add(now: number, units: number): undefined {
    this.prune(now);
    this.charge(Math.floor(now / this.g), units);
    return undefined;
  }

  adjust(at: number, _window: string | undefined, delta: number): void {
    const k = Math.floor(at / this.g);
    const i = k - this.first;
    if (this.amounts.length > 0 && i >= 0 && i < this.amounts.length) {
      this.amounts[i] = Math.max(0, (this.amounts[i] ?? 0) + delta);
    } else if (delta > 0 && !this.expiredBeforeNewest(k)) {
      this.charge(k, delta); // an under-estimate whose bucket is not held: charge it where it happened
    }
  }

  /**
   * Whether bucket `k` had expired by the start of the newest held bucket, an instant that has already passed, so
   * it can never count again. Charging it anyway would pad the history (and its serialised form, past the
   * `BUCKETS_PER_WINDOW + 1` bound) with a zero for every bucket between it and the present.
   */
  private expiredBeforeNewest(k: number): boolean {
    return this.amounts.length > 0 && this.expiry(k) <= (this.first + this.amounts.length - 1) * this.g;
  }

  private charge(k: number, units: number): void {
    if (this.amounts.length === 0) {
      this.first = k;
      this.amounts = [units];
      return;
    }
    if (k < this.first) {
      this.amounts = [...new Array<number>(this.first - k).fill(0), ...this.amounts];
      this.first = k;
    }
    const i = k - this.first;
    while (this.amounts.length <= i) this.amounts.push(0);
    this.amounts[i] = (this.amounts[i] ?? 0) + units;
  }

  used(now: number): number {
    this.prune(now);
    return this.total();
  }

  windowEnd(): number {
    return Number.POSITIVE_INFINITY;
  }

  toJSON(held?: { readonly until: number; readonly units: number }): SlidingTierJSON {
    let end = this.amounts.length;
    while (end > 0 && this.amounts[end - 1] === 0) end--;
    const json = { g: this.g, b: this.first, a: this.amounts.slice(0, end) };
    // Units dispatched at any t <= until leave every window by until + W; the bucket of `until` expires no sooner.
    return held === undefined || held.units === 0
      ? json
      : { ...json, h: [Math.floor(held.until / this.g), held.units] };
  }
}

/**
 * Units used in the current calendar window (day or month in the ledger's time zone).
 *
 * A call reserved at `t` reaches the API within `[t − margin, t + margin]` (late by up to the arrival margin, early
 * by clock skew, which the margin covers too). So no reservation is made within `margin` of a window's boundary `b`:
 *
 *        day D                      │ b                      day D+1
 *   ─────────────────────[ t − m ·· t ·· t + m ]──────────────────────  arrivals could land on either side: refused
 *                        b − m ─────┼───── b + m   no slot here; the next one is b + m, counted in D+1
 *
 * Every reserved call then arrives inside the window it was counted in, at the cost of `2 · margin` per window.
 */
class CalendarCounter implements Counter {
  private key = '';
  private end = Number.NEGATIVE_INFINITY;
  private usedUnits = 0;
  /** The window last looked up (see {@link CalendarCounter.windowOf}), and the instant it was looked up for. */
  private looked: { readonly from: number; readonly window: CalendarWindow } | undefined;

  constructor(
    private readonly limit: number,
    private readonly per: CalendarPeriod,
    private readonly timeZone: string,
    private readonly marginMs: number,
  ) {}

  static fromJSON(
    limit: number,
    per: CalendarPeriod,
    timeZone: string,
    marginMs: number,
    json: CalendarTierJSON,
  ): CalendarCounter {
    const counter = new CalendarCounter(limit, per, timeZone, marginMs);
    counter.key = json.w;
    counter.usedUnits = json.u;
    return counter;
  }

  /** Moves the counter on to the window of `now`, the present: a later window starts empty. */
  private roll(now: number): void {
    if (now < this.end) return;
    const window = this.windowOf(now);
    // Keys sort chronologically. A stored key from a later window (a writer whose clock ran ahead) is kept, so
    // its usage is never forgotten.
    if (window.key > this.key) {
      this.key = window.key;
      this.usedUnits = 0;
    }
    this.end = window.end;
  }

  /** The window holding `t`. Instants mostly move forward, so the last one looked up usually holds it: no zone lookup then. */
  private windowOf(t: number): CalendarWindow {
    if (this.looked === undefined || t < this.looked.from || t >= this.looked.window.end) {
      this.looked = { from: t, window: calendarWindow(t, this.per, this.timeZone) };
    }
    return this.looked.window;
  }

  /** The earliest instant >= `t` with no window boundary within the margin on either side. */
  private clearOfBoundary(t: number): number {
    if (this.marginMs === 0) return t;
    const boundary = this.windowOf(t - this.marginMs).end;
    return boundary <= t + this.marginMs ? boundary + this.marginMs : t;
  }

  /** Reads only: a probe of a later window must not move the counter on while earlier instants may still be charged. */
  earliestFit(now: number, units: number): number {
    if (units > this.limit) return Number.POSITIVE_INFINITY;
    const at = this.clearOfBoundary(now);
    const window = at < this.end ? { key: this.key, end: this.end } : this.windowOf(at);
    const used = window.key > this.key ? 0 : this.usedUnits;
    return used + units <= this.limit ? at : this.clearOfBoundary(window.end);
  }

  add(now: number, units: number): string {
    this.roll(now);
    this.usedUnits += units;
    return this.key;
  }

  adjust(_at: number, window: string | undefined, delta: number): void {
    if (window === this.key) this.usedUnits = Math.max(0, this.usedUnits + delta);
  }

  used(now: number): number {
    this.roll(now);
    return this.usedUnits;
  }

  windowEnd(now: number): number {
    this.roll(now);
    return this.end;
  }

  toJSON(held?: { readonly until: number; readonly units: number }): CalendarTierJSON {
    return { w: this.key, u: this.usedUnits + (held?.units ?? 0) };
  }
}

/**
 * The counter of `tier`'s kind, rehydrated from `saved` when given.
 * @throws StateFormatError when `saved` is the serialised form of another kind of tier.
 */
function counterFor(
  tier: Tier,
  timeZone: string,
  marginMs: number,
  saved: SlidingTierJSON | CalendarTierJSON | undefined,
): Counter {
  const mismatch = (savedAs: TierKind) =>
    new StateFormatError(
      `stored ledger is unreadable: tier "${tierKeyOf(tier.per, tier.unit)}" is saved as a ${savedAs} tier`,
    );
  switch (tier.kind) {
    case 'sliding':
      // Counted `marginMs` longer: calls reserved at most a window apart may arrive up to the margin closer together.
      if (saved === undefined) return new SlidingCounter(tier.limit, tier.windowMs + marginMs);
      if (!('a' in saved)) throw mismatch('calendar');
      return SlidingCounter.fromJSON(tier.limit, tier.windowMs + marginMs, saved);
    case 'calendar':
      if (saved === undefined) return new CalendarCounter(tier.limit, tier.per, timeZone, marginMs);
      if ('a' in saved) throw mismatch('sliding');
      return CalendarCounter.fromJSON(tier.limit, tier.per, timeZone, marginMs, saved);
  }
}

/** The key of a tier within its set. */
export function tierKeyOf(per: Period, unit: TierUnit): TierKey {
  return `${per}:${unit}`;
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
}

/**
 * The quota ledger of one lane: every tier's usage, checked and charged together.
 *
 * - Sliding tiers (second, minute, hour) keep bucketed history (see {@link BUCKETS_PER_WINDOW}) and are never
 *   exceeded in any window `(T − W, T]`.
 * - Calendar tiers (day, month) count units in the current window of the configured time zone.
 * - With an arrival margin (see {@link LedgerOptions.arrivalMarginMs}), both hold for calls that reach the API up to
 *   that margin away from the instant they were reserved at.
 *
 * Reserve before dispatch; settle after the call with the actual cost, or with `null` when the call never reached
 * the API, so unused quota flows back and under-estimates are charged. The ledger is pure: time comes in as `now`.
 */
export class QuotaLedger {
  private readonly counters: Counter[];

  constructor(
    readonly tiers: readonly Tier[],
    options: LedgerOptions = {},
    json?: LedgerJSON,
  ) {
    const timeZone = options.timeZone ?? 'UTC';
    const marginMs = options.arrivalMarginMs ?? 0;
    this.counters = tiers.map((tier) =>
      counterFor(tier, timeZone, marginMs, json?.tiers[tierKeyOf(tier.per, tier.unit)]),
    );
  }

  /**
   * Rehydrates a ledger saved by {@link QuotaLedger.toJSON}. Tiers that are configured but not saved start empty;
   * saved tiers no longer configured are dropped.
   * @throws StateFormatError when `json` is not a ledger of a known version.
   */
  static fromJSON(tiers: readonly Tier[], json: unknown, options: LedgerOptions = {}): QuotaLedger {
    return new QuotaLedger(tiers, options, parseLedgerJSON(json));
  }

  /** Earliest instant >= `now` at which a message of `costs` fits every tier (`at: Infinity` if it never can). */
  earliestFit(now: number, costs: Costs): Fit {
    let fit: Fit = { at: now, tier: -1 };
    this.tiers.forEach((tier, i) => {
      const at = this.counters[i]?.earliestFit(now, unitsFor(tier, costs)) ?? now;
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
    const tiers: Partial<Record<TierKey, SlidingTierJSON | CalendarTierJSON>> = {};
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

/**
 * The units of each named unit `settlement` hands back: what was reserved and not used (all of it when no call was
 * made). Usage above the reservation hands nothing back (it is charged on top).
 */
export function handedBack(settlement: Settlement): Costs {
  const { reservation, actual } = settlement;
  const back: Record<string, number> = {};
  for (const [unit, reserved] of Object.entries(reservation.costs)) {
    const used = actual === null ? 0 : (actual[unit] ?? reserved);
    if (reserved > used) back[unit] = reserved - used;
  }
  return back;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/**
 * Checks that `json` has the shape of a {@link LedgerJSON}, for stores that read a ledger back. Tiers are not
 * matched against a configuration here; {@link QuotaLedger.fromJSON} does that when the ledger is rehydrated.
 * @throws StateFormatError when `json` is not a ledger of a known version.
 */
export function parseLedgerJSON(json: unknown): LedgerJSON {
  const fail = (why: string) => new StateFormatError(`stored ledger is unreadable: ${why}`);
  if (typeof json !== 'object' || json === null || (json as { v?: unknown }).v !== 1)
    throw fail('expected {"v":1,"tiers":{…}}');
  const tiers = (json as { tiers?: unknown }).tiers;
  if (typeof tiers !== 'object' || tiers === null) throw fail('missing "tiers"');
  const { slots } = json as { slots?: unknown };
  if (slots !== undefined && !isCallSlotsJSON(slots))
    throw fail('"slots" is not {"a": [[id, until], …], "h"?: [[count, until], …]}');
  for (const [key, value] of Object.entries(tiers as Record<string, unknown>)) {
    const v = value as Record<string, unknown>;
    const held =
      v?.h === undefined || (Array.isArray(v.h) && v.h.length === 2 && Number.isInteger(v.h[0]) && isCount(v.h[1]));
    const sliding =
      Array.isArray(v?.a) &&
      isCount(v.g) &&
      (v.g as number) > 0 &&
      Number.isInteger(v.b) &&
      (v.a as unknown[]).every(isCount) &&
      held;
    const calendar = typeof v?.w === 'string' && isCount(v.u);
    if (!sliding && !calendar) throw fail(`tier "${key}" is neither sliding {g,b,a} nor calendar {w,u}`);
  }
  return json as LedgerJSON;
}
