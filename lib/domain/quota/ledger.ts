import type { Period, TierUnit } from './tiers';

/** Identifies a tier within a tier set: its period and unit (a valid set holds each pair once). */
export type TierKey = `${Period}:${TierUnit}`;

/**
 * Quota taken for one dispatch. It is plain data, so a worker can carry it in its event and report it back.
 */
export interface Reservation {
  /** Dispatch instant, epoch ms. */
  readonly at: number;
  /** Cost reserved for cost tiers. */
  readonly cost: number;
  /** Calendar window each calendar tier charged, e.g. `{"day:requests": "2026-11-23"}`. */
  readonly windows: Readonly<Partial<Record<TierKey, string>>>;
}

/** How a reservation ended: with the actual cost of a call that reached the API, or with no call at all. */
export interface Settlement {
  readonly reservation: Reservation;
  /** Units really consumed on cost tiers, or `null` when the call never reached the API (all quota flows back). */
  readonly actualCost: number | null;
}

/** Serialised history of a sliding tier: amounts per bucket of `g` ms, starting at bucket index `b`. */
export interface SlidingTierJSON {
  readonly g: number;
  readonly b: number;
  readonly a: readonly number[];
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
}
