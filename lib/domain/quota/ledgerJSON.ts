/**
 * The form a ledger is stored in: per tier, its counter's JSON (see `TierCounter.toJSON`), keyed by {@link TierKey};
 * and the check that a stored item has that form. A new kind of tier adds its JSON to {@link TierJSON}.
 */
import { isLearnedLimitsJSON, type LearnedLimitsJSON } from '../limits/limitLearner';
import type { LimitOverrideJSON } from '../limits/limitOverrideJSON';
import { StateFormatError } from '../../errors';
import { isCallSlotsJSON, type CallSlotsJSON } from '../inflight/callSlots';
import type { TierKey } from './tiers';

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

/** Serialised state of a tier, of either kind. */
export type TierJSON = SlidingTierJSON | CalendarTierJSON;

/** The compact, bounded form of a ledger that is persisted and rehydrated. */
export interface LedgerJSON {
  readonly v: 1;
  readonly tiers: Readonly<Partial<Record<TierKey, TierJSON>>>;
  /** The calls that may be in progress, saved with the ledger on a lane with `maxInFlight` (see `CallSlots`). */
  readonly slots?: CallSlotsJSON;
  /** What the lane learnt of the API's limits (see `LimitLearner`), unless it learns nothing. */
  readonly learned?: LearnedLimitsJSON;
  /**
   * The operator's override of the tiers' limits, as a store loads it beside the ledger (see `LedgerStore.loadLedger`);
   * never saved with it.
   */
  readonly override?: LimitOverrideJSON;
}

/** Whether `json` is the serialised form of a sliding tier (else of a calendar tier). */
export function isSlidingTierJSON(json: TierJSON): json is SlidingTierJSON {
  return 'a' in json;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/**
 * Checks that `json` has the shape of a {@link LedgerJSON}, for stores that read a ledger back. Tiers are not
 * matched against a configuration here; `QuotaLedger.fromJSON` does that when the ledger is rehydrated.
 * @throws StateFormatError when `json` is not a ledger of a known version.
 */
export function parseLedgerJSON(json: unknown): LedgerJSON {
  const fail = (why: string) => new StateFormatError(`stored ledger is unreadable: ${why}`);
  if (typeof json !== 'object' || json === null || (json as { v?: unknown }).v !== 1)
    throw fail('expected {"v":1,"tiers":{…}}');
  const tiers = (json as { tiers?: unknown }).tiers;
  if (typeof tiers !== 'object' || tiers === null) throw fail('missing "tiers"');
  const { slots, learned } = json as { slots?: unknown; learned?: unknown };
  if (slots !== undefined && !isCallSlotsJSON(slots))
    throw fail('"slots" is not {"a": [[id, until], …], "h"?: [[count, until], …]}');
  if (learned !== undefined && !isLearnedLimitsJSON(learned))
    throw fail('"learned" is not {"v":1,"tiers":{"<tier>": {"limit", "source", "since", …}}}');
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
