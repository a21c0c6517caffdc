/**
 * A settlement as the state table stores it (in a lane's settlement shards, or owed by an idempotency record), read
 * back and checked. Apart from `DynamoSettlementRecorder` so that code that only reads items bundles no write.
 */
import type { Reservation, Settlement } from '../../domain/quota/ledger';
import { COST_UNIT, type Costs } from '../../domain/quota/tiers';
import { corrupt, isFiniteNumber, type Item } from './itemValues';

function isObject(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is a reservation's `windows`: an object of strings. */
function isWindows(value: unknown): value is Reservation['windows'] {
  return isObject(value) && Object.values(value).every((window) => typeof window === 'string');
}

/** Whether `value` is a {@link Costs}: an object of finite numbers. */
function isCosts(value: unknown): value is Costs {
  return isObject(value) && Object.values(value).every(isFiniteNumber);
}

/**
 * The settlement stored as `value` (in the lane item's pending list, or owed by an idempotency record). One stored
 * before units had names (`reservation.cost` and `actualCost`, numbers) reads as one of the `cost` unit.
 * @param what names the stored value in the error.
 * @throws StateFormatError when `value` is not a settlement.
 */
export function settlementOf(value: unknown, what: string): Settlement {
  const { reservation, actual, actualCost, id, startDelayMs, chainGapMs } = isObject(value) ? value : {};
  const costs = isObject(reservation)
    ? (reservation.costs ?? (isFiniteNumber(reservation.cost) ? { [COST_UNIT]: reservation.cost } : undefined))
    : undefined;
  const used = actual !== undefined ? actual : isFiniteNumber(actualCost) ? { [COST_UNIT]: actualCost } : actualCost;
  if (
    (id === undefined || typeof id === 'string') &&
    (startDelayMs === undefined || isFiniteNumber(startDelayMs)) &&
    (chainGapMs === undefined || isFiniteNumber(chainGapMs)) &&
    (used === null || isCosts(used)) &&
    isObject(reservation) &&
    isFiniteNumber(reservation.at) &&
    isCosts(costs) &&
    isWindows(reservation.windows) &&
    (reservation.pools === undefined ||
      (isObject(reservation.pools) && Object.values(reservation.pools).every(isWindows)))
  ) {
    const pools = reservation.pools as Reservation['pools'];
    return {
      reservation: {
        at: reservation.at,
        costs,
        windows: reservation.windows,
        ...(pools === undefined ? {} : { pools }),
      },
      actual: used,
      ...(id === undefined ? {} : { id }),
      ...(startDelayMs === undefined ? {} : { startDelayMs }),
      ...(chainGapMs === undefined ? {} : { chainGapMs }),
    };
  }
  throw corrupt(
    what,
    'must be {reservation: {at, costs, windows, pools?}, actual, id?, startDelayMs?, chainGapMs?}',
    value,
  );
}
