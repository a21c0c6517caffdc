import type { Settlement } from '../domain/quota/ledger';
import type { LimitOverrideJSON } from '../domain/limits/limitOverrideJSON';
import type { LedgerJSON } from '../domain/quota/ledgerJSON';

/**
 * Most pending settlements one {@link LedgerStore.pendingSettlements} returns. A larger backlog is folded over several
 * reads and saves: with a save every 2 s folding ten reads' worth, a lane keeps up with 1,000 calls a second.
 */
export const MAX_PENDING_SETTLEMENTS = 250;

/**
 * Most settlement ids one {@link LedgerStore.saveLedger} lists as folded: those of two full reads, for a holder that
 * read again before it saved. The stored ledger keeps them until the next save, so they bound its size (about 21 KB
 * in the DynamoDB lane item, for ids of 36 characters).
 */
export const MAX_FOLDED_PER_SAVE = 2 * MAX_PENDING_SETTLEMENTS;

/**
 * How many pending settlements a store holds in one place (the DynamoDB store: one shard item) before refunds are
 * turned away (see {@link LedgerStore.addSettlements}): about 50 KB, so that an append, billed a write unit per KB of
 * the item, stays cheap too.
 */
export const MAX_STORED_SETTLEMENTS = 200;

/** Whether `settlements` are all refunds: reservations given back by dispatches that made no call. */
export function allRefunds(settlements: readonly Settlement[]): boolean {
  return settlements.every((settlement) => settlement.actual === null);
}

/**
 * Checks the `folded` argument of {@link LedgerStore.saveLedger}, for implementations.
 * @throws RangeError when it holds more than {@link MAX_FOLDED_PER_SAVE} ids.
 */
export function checkFolded(folded: readonly string[]): void {
  if (folded.length > MAX_FOLDED_PER_SAVE) {
    throw new RangeError(`at most ${MAX_FOLDED_PER_SAVE} settlements may be folded in a save; got ${folded.length}`);
  }
}

/** Options of {@link LedgerStore.pendingSettlements}. */
export interface PendingOptions {
  /**
   * The holder's first read since it acquired the lease: it reads strongly consistently what the last save (of any
   * holder) left. Later reads may lag a write of the last second or so: the holder remembers the ids it folded longer
   * than that (see `LedgerSync`), and a settlement read late is folded late. @defaultValue false
   */
  readonly first?: boolean;
  /**
   * Ids the holder read since its last save: not returned again, nor counted toward the most a read returns, so that a
   * backlog larger than one read is read on before the next save. @defaultValue none
   */
  readonly skip?: ReadonlySet<string>;
}

/** What a ledger save found of the lane's state beside the ledger. */
export interface LaneItemSeen {
  /** The operator's override of the tiers' limits, if one is set. */
  readonly override?: LimitOverrideJSON;
}

/**
 * Per lane a quota ledger and the settlements workers report for it. Saves are fenced by the lease tokens of the
 * `LeaseStore` of the same backend (see `StateStores`). Every implementation passes
 * `test/contract/stateStores.contract.ts`.
 */
export interface LedgerStore {
  /**
   * The last ledger saved for the lane, or `undefined` if none; with the operator's override of its tiers' limits (see
   * `LimitStore.replaceOverride`), if one is set. @throws StateFormatError when either is malformed.
   */
  loadLedger(lane: string): Promise<LedgerJSON | undefined>;

  /**
   * Replaces the lane's ledger and marks the settlements of the ids in `folded` (as {@link
   * LedgerStore.pendingSettlements} returned them) as folded into it, in one atomic write fenced by the lease token:
   * from then on no read returns them, and the store removes them (the DynamoDB store at the next read). A ledger is
   * never saved without marking the settlements folded into it, nor are settlements marked without the ledger that
   * holds them.
   *
   * A save whose write landed but whose answer was lost, and that the client retries (the AWS SDK does), lands once
   * and the call succeeds.
   * @param folded ids of the settlements the holder read and folded into `ledger`. @defaultValue none: only the
   * ledger is replaced.
   * @throws LeaseLostError when `fencingToken` is not the lane's current lease token; nothing is written.
   * @throws RangeError when `folded` holds more than {@link MAX_FOLDED_PER_SAVE} ids; nothing is written.
   * @throws StateFormatError when the override the save found is malformed (the ledger was saved).
   * @returns what the save found beside the ledger (the operator's override), or `undefined` when it cannot say (a
   * retried write whose first answer was lost). A ledger's `override` is not saved: the operator sets it.
   */
  saveLedger(
    lane: string,
    ledger: LedgerJSON,
    fencingToken: number,
    folded?: readonly string[],
  ): Promise<LaneItemSeen | undefined>;

  /**
   * Records settlements reported by a worker, in one write, for the lane's orchestrator to fold into its ledger.
   * Settlements are keyed by `id`: a copy written again while the first is pending replaces it, and one written again
   * after it was folded is read again (the holder folds settlements of one `id` once). With none, it writes nothing.
   *
   * Refunds alone are turned away while their place holds {@link MAX_STORED_SETTLEMENTS} or more: their quota then
   * goes unused, the safe way, and a storm of give-backs (workers that cannot start in time) cannot grow an item
   * toward DynamoDB's limit. Settlements of calls are always recorded: the ledger must count what was used.
   * @returns false when refunds were turned away.
   */
  addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean>;

  /**
   * Pending settlements of the lane, at most {@link MAX_PENDING_SETTLEMENTS}, each with an `id` (the store names one
   * recorded without), oldest reservation first; the rest wait until these are folded. It returns none that a save
   * marked as folded: the holder folds them into its ledger and names them in the {@link LedgerStore.saveLedger} that
   * saves it, so that a run killed in between leaves them pending for its successor.
   */
  pendingSettlements(lane: string, options?: PendingOptions): Promise<Settlement[]>;
}
