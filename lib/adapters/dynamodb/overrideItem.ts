import { isLimitOverrideJSON, type LimitOverrideJSON } from '../../domain/limits/limitOverride';
import { corrupt, type Item } from './itemValues';

/** The attribute of the lane item that holds the operator's override of the tiers' limits (see `LimitOverrideJSON`). */
export const OVERRIDE_ATTRIBUTE = 'override';

/**
 * The override the lane item `item` of `state` holds, as a field to spread: `{}` when it holds none.
 * @throws StateFormatError when it is malformed (`ops limits reset` removes it).
 */
export function overrideIn(item: Item, state: string): { override?: LimitOverrideJSON } {
  const stored = item[OVERRIDE_ATTRIBUTE];
  if (stored === undefined) return {};
  if (!isLimitOverrideJSON(stored))
    throw corrupt(
      `limit override of '${state}'`,
      'must be {v: 1, tiers: {"<per>:<unit>": limit}, by, at}; `ops limits reset` removes it',
      stored,
    );
  return { override: stored };
}
