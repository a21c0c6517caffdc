import type { Settlement } from '../domain/quota/ledger';
import type { LedgerJSON } from '../domain/quota/ledgerJSON';

/**
 * Most pending settlements {@link LedgerStore.pendingSettlements} returns, and so most one
 * {@link LedgerStore.saveLedger} removes: it keeps DynamoDB's update expression (one `REMOVE` path per settlement)
 * far below its 4 KB limit. A larger backlog is folded over several saves.
 */
export const MAX_PENDING_SETTLEMENTS = 100;

/**
 * How many pending settlements the lane's list holds before refunds are turned away (see
 * {@link LedgerStore.addSettlements}): about 30 KB of the lane item, well within DynamoDB's 400 KB, so that an append,
 * which costs a write unit per KB of the item, stays cheap too.
 */
export const MAX_STORED_SETTLEMENTS = 200;

/** Whether `settlements` are all refunds: reservations given back by dispatches that made no call. */
export function allRefunds(settlements: readonly Settlement[]): boolean {
  return settlements.every((settlement) => settlement.actual === null);
}

/**
 * Checks the `settled` argument of {@link LedgerStore.saveLedger}, for implementations.
 * @throws RangeError when it is not an integer in 0..{@link MAX_PENDING_SETTLEMENTS}.
 */
export function checkSettled(settled: number): void {
  if (!Number.isInteger(settled) || settled < 0 || settled > MAX_PENDING_SETTLEMENTS) {
    throw new RangeError(`settled must be an integer in 0..${MAX_PENDING_SETTLEMENTS}; got ${settled}`);
  }
}

/**
 * Per lane a quota ledger and the settlements workers report for it. Saves are fenced by the lease tokens of the
 * `LeaseStore` of the same backend (see `StateStores`). Every implementation passes
 * `test/contract/stateStores.contract.ts`.
 */
export interface LedgerStore {
  /** The last ledger saved for the lane, or `undefined` if none. */
  loadLedger(lane: string): Promise<LedgerJSON | undefined>;

  /**
   * Replaces the lane's ledger and removes its `settled` oldest pending settlements, in one atomic write fenced by
   * the lease token: a ledger is never saved without removing the settlements folded into it, nor are settlements
   * removed without the ledger that holds them.
   *
   * Only the lease holder removes settlements and workers only append at the end, so the first `settled` pending
   * ones are exactly those the holder read with {@link LedgerStore.pendingSettlements}, whatever was appended since.
   *
   * A save whose write landed but whose answer was lost, and that the client retries (the AWS SDK does), lands once:
   * the retry changes nothing (it removes no settlement appended since) and the call succeeds.
   * @param settled how many of the settlements the holder last read it folded into `ledger`. @defaultValue 0: only
   * the ledger is replaced.
   * @throws LeaseLostError when `fencingToken` is not the lane's current lease token; nothing is written.
   * @throws StateConflictError when fewer than `settled` settlements are pending (which cannot happen for the
   * holder: only it removes); nothing is written.
   * @throws RangeError when `settled` is not an integer in 0..{@link MAX_PENDING_SETTLEMENTS}; nothing is written.
   */
  saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled?: number): Promise<void>;

  /**
   * Records settlements reported by a worker, in order and in one write, for the lane's orchestrator to fold into its
   * ledger. A call retried after its write landed (its answer lost) may record them twice: the holder folds
   * settlements of one `id` once. With none, it writes nothing.
   *
   * Refunds alone are turned away while the list holds {@link MAX_STORED_SETTLEMENTS} or more: their quota then goes
   * unused, the safe way, and a storm of give-backs (workers that cannot start in time) cannot grow the lane item
   * toward DynamoDB's limit. Settlements of calls are always recorded: the ledger must count what was used.
   * @returns false when refunds were turned away.
   */
  addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean>;

  /**
   * The lane's oldest pending settlements, oldest first, at most {@link MAX_PENDING_SETTLEMENTS}; the rest wait
   * until these are removed. It removes nothing: the holder folds them into its ledger and removes them with the
   * {@link LedgerStore.saveLedger} that saves it, so that a run killed in between leaves them pending for its successor.
   */
  pendingSettlements(lane: string): Promise<Settlement[]>;
}
