import { calendarWindow, type CalendarWindow } from './calendar';
import type { CalendarTierJSON } from './ledgerJSON';
import type { CalendarPeriod } from './tiers';
import type { HeldUnits, TierCounter } from './tierCounter';

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
export class CalendarCounter implements TierCounter {
  private key = '';
  /** The window the counter last moved on to (see {@link CalendarCounter.roll}); `key` may be a later one's. */
  private rolled: CalendarWindow = { key: '', end: Number.NEGATIVE_INFINITY };
  private usedUnits = 0;
  /** The window last looked up (see {@link CalendarCounter.windowOf}), and the instant it was looked up for. */
  private looked: { readonly from: number; readonly window: CalendarWindow } | undefined;

  /** An empty count of a tier of `limit` units per `per` in `timeZone`, reserving nothing within `marginMs` of a boundary. */
  constructor(
    private readonly limit: number,
    private readonly per: CalendarPeriod,
    private readonly timeZone: string,
    private readonly marginMs: number,
  ) {}

  /** The count `json` saved (see {@link CalendarCounter.toJSON}), of a tier built as the constructor's arguments say. */
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

  /**
   * A count of a tier built as the constructor's arguments say that counts it full for every call slotted at or before
   * `slot` which it never counted (made under a configuration without the tier): the window of `slot` holds the whole
   * limit, and so does any window before it (a stored key from a later window counts for the earlier ones, see
   * {@link CalendarCounter.roll}), so the tier is full until that window ends. Such a call charged no window of the
   * tier, so its settlement names none and changes nothing (see {@link CalendarCounter.adjust}).
   */
  static filledThrough(
    limit: number,
    per: CalendarPeriod,
    timeZone: string,
    marginMs: number,
    slot: number,
  ): CalendarCounter {
    const counter = new CalendarCounter(limit, per, timeZone, marginMs);
    counter.key = counter.windowOf(slot).key;
    counter.usedUnits = limit;
    return counter;
  }

  /** Moves the counter on to the window of `now`, the present: a later window starts empty. */
  private roll(now: number): void {
    if (now < this.rolled.end) return;
    const window = this.windowOf(now);
    // Keys sort chronologically. A stored key from a later window (a writer whose clock ran ahead, a tier counted
    // full through a later window) is kept, so its usage is never forgotten.
    if (window.key > this.key) {
      this.key = window.key;
      this.usedUnits = 0;
    }
    this.rolled = window;
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
  earliestFit(now: number, units: number, cap?: number): number {
    if (units > this.limit) return Number.POSITIVE_INFINITY;
    const limit = cap === undefined ? this.limit : Math.max(units, Math.min(cap, this.limit));
    const at = this.clearOfBoundary(now);
    const window = at < this.rolled.end ? this.rolled : this.windowOf(at);
    // A window before the one the count is kept for counts as much as it: the next window may be full too.
    const used = window.key > this.key ? 0 : this.usedUnits;
    if (used + units <= limit) return at;
    return window.key < this.key ? this.earliestFit(window.end, units, cap) : this.clearOfBoundary(window.end);
  }

  /** {@inheritDoc TierCounter.add} */
  add(now: number, units: number): string {
    this.roll(now);
    this.usedUnits += units;
    return this.key;
  }

  /** {@inheritDoc TierCounter.adjust} */
  adjust(_at: number, window: string | undefined, delta: number): void {
    if (window === this.key) this.usedUnits = Math.max(0, this.usedUnits + delta);
  }

  /** {@inheritDoc TierCounter.used} */
  used(now: number): number {
    this.roll(now);
    return this.usedUnits;
  }

  /** {@inheritDoc TierCounter.windowEnd} */
  windowEnd(now: number): number {
    this.roll(now);
    return this.rolled.end;
  }

  /** {@inheritDoc TierCounter.toJSON} */
  toJSON(held?: HeldUnits): CalendarTierJSON {
    return { w: this.key, u: this.usedUnits + (held?.units ?? 0) };
  }
}
