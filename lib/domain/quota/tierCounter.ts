import type { TierJSON } from './ledgerJSON';

/** Units of a run's allowance that a saved tier holds as used, as if all were dispatched at `until` (epoch ms). */
export interface HeldUnits {
  readonly until: number;
  readonly units: number;
}

/**
 * How the ledger counts one tier: the seam between the ledger and a kind of tier. Each kind (`SlidingCounter`,
 * `CalendarCounter`) implements it, and rehydrates from its own {@link TierJSON}; instants are epoch ms.
 */
export interface TierCounter {
  /**
   * Earliest instant >= now at which `units` more fit; `Infinity` if never (more than the tier's limit). With `cap`,
   * a lower limit in force (see `QuotaLedger.limitTo`): the window may hold at most `cap` units, or `units` alone
   * when they are more than `cap` (a call that fits the tier is never refused for good by a learned limit).
   */
  earliestFit(now: number, units: number, cap?: number): number;
  /** Charges `units` at `now`; returns the calendar window key for calendar tiers. */
  add(now: number, units: number): string | undefined;
  /** Applies a settlement delta to the bucket of instant `at`, or to calendar window `window`, if it still counts. */
  adjust(at: number, window: string | undefined, delta: number): void;
  /** Units the tier holds at `now`. */
  used(now: number): number;
  /** Instant from which dispatch needs a later window's state: the calendar window's end; `Infinity` for sliding tiers. */
  windowEnd(now: number): number;
  /** The persisted form, holding `units` more as if all were dispatched at `until` (see `Allowance`). */
  toJSON(held?: HeldUnits): TierJSON;
}
