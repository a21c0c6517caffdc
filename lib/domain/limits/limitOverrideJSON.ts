import { MAX_QUANTITY, type TierKey } from '../quota/tiers';

/**
 * An operator's override of a lane's or pool's tier limits (`ops limits set`), kept with its state: each tier it names
 * (by period and unit) goes by its limit instead of the configured one, lower or higher, until `ops limits reset`.
 */
export interface LimitOverrideJSON {
  readonly v: 1;
  /** Per tier, the limit that stands in for the configured one. */
  readonly tiers: Readonly<Partial<Record<TierKey, number>>>;
  /** Who set it last: an operator's name. */
  readonly by: string;
  /** When it was set last (epoch ms). */
  readonly at: number;
}

/** Whether `json` has the shape of a {@link LimitOverrideJSON}: whole limits within the accepted range, a name and a time. */
export function isLimitOverrideJSON(json: unknown): json is LimitOverrideJSON {
  if (typeof json !== 'object' || json === null) return false;
  const { v, tiers, by, at } = json as Partial<Record<keyof LimitOverrideJSON, unknown>>;
  return (
    v === 1 &&
    typeof by === 'string' &&
    typeof at === 'number' &&
    Number.isFinite(at) &&
    typeof tiers === 'object' &&
    tiers !== null &&
    !Array.isArray(tiers) &&
    Object.values(tiers).every(isAcceptedLimit)
  );
}

/** Whether `limit` may stand in for a tier's: a whole number from 1 to `MAX_QUANTITY`, as a configured limit. */
export function isAcceptedLimit(limit: unknown): limit is number {
  return typeof limit === 'number' && Number.isInteger(limit) && limit >= 1 && limit <= MAX_QUANTITY;
}
