import { ownValue } from '../ownValue';
import type { Settlement } from './ledger';
import type { Costs } from './tiers';

/**
 * The units of each named unit `settlement` hands back: what was reserved and not used (all of it when no call was
 * made). Usage above the reservation hands nothing back (it is charged on top).
 */
export function handedBack(settlement: Settlement): Costs {
  const { reservation, actual } = settlement;
  const back: Record<string, number> = {};
  for (const [unit, reserved] of Object.entries(reservation.costs)) {
    const used = actual === null ? 0 : (ownValue(actual, unit) ?? reserved);
    if (reserved > used) back[unit] = reserved - used;
  }
  return back;
}

/**
 * `settlement` with nothing handed back: each unit used below its reservation counts as reserved (a settlement of no
 * call, as its whole reservation), while usage above the reservation stays, and so does the dispatch it names (its
 * call slot is freed all the same). What a worker records when an earlier copy of the settlement may have landed and
 * been folded already (a write whose answer was lost): folded twice, it can over-count, never give back twice.
 */
export function withoutHandBack(settlement: Settlement): Settlement {
  const { reservation, actual, id } = settlement;
  const above: Record<string, number> = {};
  for (const [unit, used] of Object.entries(actual ?? {}))
    if (used > (ownValue(reservation.costs, unit) ?? 0)) above[unit] = used;
  return { reservation, actual: above, ...(id === undefined ? {} : { id }) };
}
