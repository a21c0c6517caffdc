import { isLimitOverrideJSON, type LimitOverrideJSON } from '../../domain/limits/limitOverrideJSON';
import { corrupt, type Item } from './itemValues';

/**
 * The attributes of the lane item that hold the operator's override of the tiers' limits (see `LimitOverrideJSON`),
 * and when it was set (`overrideAt`, its `at`: what a replacement's condition compares, a top-level attribute so that
 * the operator policy can grant writes of these two attributes alone).
 */
export const OVERRIDE_ATTRIBUTES = ['override', 'overrideAt'] as const;

/**
 * The override the lane item `item` of `state` holds, as a field to spread: `{}` when it holds none.
 * @throws StateFormatError when it is malformed (`ops limits reset` removes it).
 */
export function overrideIn(item: Item, state: string): { override?: LimitOverrideJSON } {
  const { override: stored, overrideAt } = item;
  if (stored === undefined) return {};
  if (!isLimitOverrideJSON(stored) || stored.at !== overrideAt)
    throw corrupt(
      `limit override of '${state}'`,
      'must be {v: 1, tiers: {"<per>:<unit>": limit}, by, at} beside its overrideAt; `ops limits reset` removes it',
      stored,
    );
  return { override: stored };
}
