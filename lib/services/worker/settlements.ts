import { ownValue } from '../../domain/ownValue';
import type { ApiResult } from '../../domain/outcome/apiResult';
import { withoutHandBack } from '../../domain/quota/handBack';
import { settlementsByState } from '../../domain/quota/poolSettlements';
import type { Settlement } from '../../domain/quota/ledger';
import type { Costs } from '../../domain/quota/tiers';
import { countedUsage, usageSourcesOf } from '../../domain/usage/unitSettings';
import { readUsage } from '../../domain/usage/usageSources';
import type { ServiceConfig } from '../../config';
import { StateUnavailableError } from '../../errors';
import type { JobEvent } from '../../ports/Invoker';
import type { IdempotencyRecord } from '../../ports/IdempotencyStore';
import type { Owed, WorkerDeps } from './types';

/**
 * What `event`'s call owes, having used `usage` (the units its answer reports; the others used their estimate): the
 * usage the provider counts (see `countedUsage`: a unit whose provider counts the estimate gives nothing back). See
 * {@link Owed}. With it, `used`: what the call counted of each of its units, its estimate for those `usage` leaves out.
 */
export function owedBy(event: JobEvent, usage: Costs, config: ServiceConfig): Owed & { readonly used: Costs } {
  const { costs } = event.reservation;
  const counted = countedUsage(config.units, costs, usage);
  const used = { ...costs, ...counted };
  const settlement: Settlement = { reservation: event.reservation, actual: counted, id: event.dispatchId };
  const differs = Object.entries(counted).some(([unit, n]) => n !== (ownValue(costs, unit) ?? 0));
  if (differs) return { used, owed: settlement };
  return config.maxInFlight === undefined ? { used } : { used, release: { ...settlement, actual: {} } };
}

/**
 * The units the API's answer says the call used, for the units whose usage source finds a count in it (see
 * `readUsage`); none for a call that got no answer.
 */
export function usageOf(result: ApiResult, config: ServiceConfig): Costs {
  return result.kind === 'response' ? readUsage(usageSourcesOf(config.units), result) : {};
}

/**
 * Records `release`, if any, to free the call slot of its dispatch, with the tries of any settlement (see
 * {@link recordSettlement}): a release that is lost costs no quota, but holds the slot until the call could no longer
 * be running, and on a lane whose `maxInFlight` binds that is a call fewer for as long.
 */
export async function releaseSlot(
  lane: string,
  release: Settlement | undefined,
  start: number,
  deps: WorkerDeps,
): Promise<void> {
  if (release !== undefined) await recordSettlement(lane, start, deps, release);
}

/** Records `owed`, if any (see {@link recordSettlement}); false when it could not be recorded. */
export function recordOwed(
  lane: string,
  owed: Settlement | undefined,
  start: number,
  deps: WorkerDeps,
): Promise<boolean> {
  return owed === undefined ? Promise.resolve(true) : recordSettlement(lane, start, deps, owed);
}

/** First wait between tries of a settlement, doubling up to {@link SETTLEMENT_MAX_BACKOFF_MS}. */
const SETTLEMENT_BACKOFF_MS = 100;
/** Longest wait between tries of a settlement. */
const SETTLEMENT_MAX_BACKOFF_MS = 2_000;
/** Share of a worker's time (from its start) by which its last try of a settlement begins: the rest ends the message. */
const SETTLEMENT_TRIES_SHARE = 0.75;

/**
 * Appends `settlements` to the lane's pending list in one write (and, for a lane that draws from pools, to each pool's
 * in one more: see `settlementsByState`), trying again with back-off while the store fails
 * (DynamoDB down or throttling) until {@link SETTLEMENT_TRIES_SHARE} of the worker's time (from `start`) has passed; it
 * always tries once. A failed try may have landed (its answer lost), and the orchestrator may have folded it before the
 * next lands: so every try after the first hands nothing back (see `withoutHandBack`). Folded twice, a settlement then
 * over-counts, never gives back twice; a hand-back whose first try did not land is lost, and its quota goes unused.
 * @returns false when every try failed (in the lane, or in a pool).
 */
export async function recordSettlement(
  lane: string,
  start: number,
  deps: WorkerDeps,
  ...settlements: Settlement[]
): Promise<boolean> {
  const byState = [...settlementsByState(lane, settlements)];
  const recorded = await Promise.all(byState.map(([state, list]) => recordIn(state, start, deps, list)));
  return recorded.every(Boolean);
}

/** {@link recordSettlement} in one state (a lane's, or a pool's: see `settlementsByState`). */
async function recordIn(
  state: string,
  start: number,
  deps: WorkerDeps,
  settlements: readonly Settlement[],
): Promise<boolean> {
  const { clock, stores, config } = deps;
  const lastTryBy = start + SETTLEMENT_TRIES_SHARE * config.orchestrator.workerTimeoutMs;
  let copy = settlements;
  for (let waitMs = SETTLEMENT_BACKOFF_MS; ; waitMs = Math.min(SETTLEMENT_MAX_BACKOFF_MS, 2 * waitMs)) {
    try {
      await stores.ledger.addSettlements(state, ...copy);
      return true;
    } catch {
      if (clock.now() + waitMs > lastTryBy) return false;
      copy = settlements.map(withoutHandBack);
      await clock.sleep(waitMs);
    }
  }
}

/**
 * Records the settlement a success record `held` owes, if any (its worker could not record it and kept the message),
 * without its hand-back (see `withoutHandBack`): the worker's tries may have landed with their answers lost, and been
 * folded in an earlier run. Then writes the record again without it, so that it is recorded once.
 * @throws StateUnavailableError when it still cannot be recorded: the message is kept for a later dispatch to try again.
 */
export async function recordOwedSettlement(
  event: JobEvent,
  held: IdempotencyRecord & { status: 'succeeded' },
  start: number,
  deps: WorkerDeps,
): Promise<void> {
  const { settlement, ...record } = held;
  if (settlement === undefined) return;
  if (!(await recordSettlement(event.lane, start, deps, withoutHandBack(settlement))))
    throw unrecorded(
      settlement,
      `the success record of key '${event.idempotencyKey}' still holds it, and the message was kept`,
    );
  await deps.stores.idempotency.putIdempotency(event.idempotencyKey, record);
}

/** The settlement that gives back `event`'s reservation whole: its dispatch used none of it. */
export function refundOf(event: JobEvent): Settlement {
  return { reservation: event.reservation, actual: null, id: event.dispatchId };
}

/**
 * Marks `event`'s dispatch as giving its reservation back (see `IdempotencyStore.claimRefund`), the mark kept
 * for the idempotency TTL from `start`.
 * @returns false when the dispatch called or gave it back before.
 */
export function claimRefund(event: JobEvent, start: number, deps: WorkerDeps): Promise<boolean> {
  const expiresAt = start + deps.config.orchestrator.idempotencyTtlMs;
  return deps.stores.idempotency.claimRefund(event.idempotencyKey, event.dispatchId, expiresAt);
}

/**
 * Gives back the reservation of a dispatch that does not call (another dispatch holds or ended the key), unless the
 * dispatch called or gave it back before: the mark of `IdempotencyStore.claimRefund` makes it once per
 * dispatch, whichever deliveries of it arrive and in whatever order. Without it, a second delivery of a dispatch
 * that stood back would refund again, and a late delivery of a dispatch that called (its key since claimed by the
 * next attempt's dispatch) would refund quota its call used: the ledger would under-count either way.
 */
export async function refundOnce(event: JobEvent, start: number, deps: WorkerDeps): Promise<void> {
  if (await claimRefund(event, start, deps)) await recordSettlement(event.lane, start, deps, refundOf(event));
}

/** The error of a worker that could not record `settlement`, saying what became of it. */
export function unrecorded(settlement: Settlement, fate: string): StateUnavailableError {
  return new StateUnavailableError('addSettlements', {
    cause: new Error(`settlement ${JSON.stringify(settlement)} could not be recorded: ${fate}`),
  });
}
