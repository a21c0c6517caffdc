import { ownValue } from '../ownValue';
import type { Reservation, Settlement } from './ledger';

/** The state name of pool `pool`: `pool:<name>`, which no lane's name can be (a lane's has no ':'). */
export function poolStateName(pool: string): string {
  return `pool:${pool}`;
}

/** `reservation` without its pools' part: what the lane's own ledger settles. */
export function laneReservation(reservation: Reservation): Reservation {
  const { at, costs, windows } = reservation;
  return reservation.pools === undefined ? reservation : { at, costs, windows };
}

/**
 * Where each of `settlements` (of lane `lane`'s dispatches) is recorded: in the lane, and in each pool its
 * reservation names, as that pool's reservation (the lane's instant and costs, the pool's windows), by state name (the
 * lane's, or {@link poolStateName}). A settlement means the same in each: a hand-back or a give-back reaches the pool
 * as it reaches the lane. One that changes no count (it only frees a call slot of the lane) goes to the lane alone:
 * a pool has no call slots.
 */
export function settlementsByState(lane: string, settlements: readonly Settlement[]): Map<string, Settlement[]> {
  const byState = new Map<string, Settlement[]>();
  const add = (state: string, settlement: Settlement) => {
    const list = byState.get(state);
    if (list === undefined) byState.set(state, [settlement]);
    else list.push(settlement);
  };
  for (const settlement of settlements) {
    const { reservation } = settlement;
    add(lane, { ...settlement, reservation: laneReservation(reservation) });
    if (!changesCounts(settlement)) continue;
    for (const [pool, windows] of Object.entries(reservation.pools ?? {}))
      add(poolStateName(pool), {
        ...settlement,
        reservation: { at: reservation.at, costs: reservation.costs, windows },
      });
  }
  return byState;
}

/** Whether `settlement` changes a count: it gives its reservation back, or a unit's usage differs from its estimate. */
function changesCounts({ reservation, actual }: Settlement): boolean {
  return actual === null || Object.entries(actual).some(([unit, used]) => used !== ownValue(reservation.costs, unit));
}
