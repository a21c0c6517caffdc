import type { CircuitJSON } from '../domain/breaker/circuit';
import type { LedgerJSON, Settlement } from '../domain/quota/ledger';

/**
 * A lease on a lane: only its holder may dispatch work or write the ledger. `token` is the fencing token: it
 * grows with every acquisition, and writes that present an older token are refused.
 */
export interface Lease {
  readonly lane: string;
  readonly owner: string;
  readonly token: number;
  /** Epoch ms after which another owner may take the lease over. */
  readonly expiresAt: number;
}

/** What a worker records per idempotency key. */
export type IdempotencyRecord =
  /** A worker is calling the API for this key; other deliveries keep their hands off until `expiresAt`. */
  | { readonly status: 'in-progress'; readonly dispatchId: string; readonly expiresAt: number }
  /** The API call succeeded at `at`; later deliveries must not call again. */
  | { readonly status: 'succeeded'; readonly dispatchId: string; readonly at: number; readonly expiresAt: number }
  /**
   * The call of dispatch `dispatchId` failed at `at` and its message was requeued or dead-lettered. It keeps out only
   * further deliveries of that same dispatch (Lambda may deliver an event twice); the next dispatch claims the key.
   */
  | { readonly status: 'failed'; readonly dispatchId: string; readonly at: number; readonly expiresAt: number };
// `dispatchId` names the orchestrator dispatch (and so the quota reservation) that wrote the record: a second
// delivery of the same event must not settle that reservation again, while a second dispatch must settle its own.

/** Whether `existing`, read at `now`, keeps a claim by dispatch `dispatchId` out (see {@link StateStore.putIdempotencyIfAbsent}). */
export function blocksClaim(existing: IdempotencyRecord | undefined, dispatchId: string, now: number): existing is IdempotencyRecord {
  if (existing === undefined || now >= existing.expiresAt) return false;
  return existing.status !== 'failed' || existing.dispatchId === dispatchId;
}

/**
 * Most pending settlements {@link StateStore.pendingSettlements} returns, and so most one
 * {@link StateStore.saveLedger} removes: it keeps DynamoDB's update expression (one `REMOVE` path per settlement)
 * far below its 4 KB limit. A larger backlog is folded over several saves.
 */
export const MAX_PENDING_SETTLEMENTS = 100;

/**
 * Checks the `settled` argument of {@link StateStore.saveLedger}, for implementations.
 * @throws RangeError when it is not an integer in 0..{@link MAX_PENDING_SETTLEMENTS}.
 */
export function checkSettled(settled: number): void {
  if (!Number.isInteger(settled) || settled < 0 || settled > MAX_PENDING_SETTLEMENTS) {
    throw new RangeError(`settled must be an integer in 0..${MAX_PENDING_SETTLEMENTS}; got ${settled}`);
  }
}

/**
 * Durable shared state of the service: per lane a lease, a quota ledger, a circuit and pending settlements,
 * plus idempotency records. Every implementation passes `test/contract/stateStore.contract.ts`.
 *
 * Expiry is judged against the `now` passed in, never against a clock of the store's own, so that the same
 * contract holds on virtual time.
 */
export interface StateStore {
  /**
   * Takes the lane's lease for `owner` if it is free, expired, or already held by `owner`.
   * Every successful call returns a token greater than any token handed out before for this lane.
   * @returns the new lease, or `null` while another owner holds an unexpired lease.
   */
  acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null>;

  /**
   * Extends a lease that is still current (same token, not taken over), keeping its token.
   * @throws LeaseLostError when another acquisition has happened since.
   */
  renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease>;

  /** Gives the lease up so the next orchestrator need not wait for expiry. Does nothing if it is no longer current. */
  releaseLease(lease: Lease): Promise<void>;

  /** The last ledger saved for the lane, or `undefined` if none. */
  loadLedger(lane: string): Promise<LedgerJSON | undefined>;

  /**
   * Replaces the lane's ledger and removes its `settled` oldest pending settlements, in one atomic write fenced by
   * the lease token: a ledger is never saved without removing the settlements folded into it, nor are settlements
   * removed without the ledger that holds them.
   *
   * Only the lease holder removes settlements and workers only append at the end, so the first `settled` pending
   * ones are exactly those the holder read with {@link StateStore.pendingSettlements}, whatever was appended since.
   * @param settled how many of the settlements the holder last read it folded into `ledger`. @defaultValue 0: only
   * the ledger is replaced.
   * @throws LeaseLostError when `fencingToken` is not the lane's current lease token; nothing is written.
   * @throws StateConflictError when fewer than `settled` settlements are pending (which cannot happen for the
   * holder: only it removes); nothing is written.
   * @throws RangeError when `settled` is not an integer in 0..{@link MAX_PENDING_SETTLEMENTS}; nothing is written.
   */
  saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled?: number): Promise<void>;

  /** The lane's circuit, or `undefined` if never written (callers start from a closed circuit at version 0). */
  loadCircuit(lane: string): Promise<CircuitJSON | undefined>;

  /**
   * Writes `next` if and only if the stored circuit is at version `next.version - 1` (absent counts as version 0).
   * This conditional write is what keeps concurrent transitions from corrupting the circuit.
   * @returns `false` when another writer got there first; the caller reloads and decides again.
   */
  saveCircuit(lane: string, next: CircuitJSON): Promise<boolean>;

  /** Records a settlement reported by a worker, for the lane's orchestrator to fold into its ledger. */
  addSettlement(lane: string, settlement: Settlement): Promise<void>;

  /**
   * The lane's oldest pending settlements, oldest first, at most {@link MAX_PENDING_SETTLEMENTS}; the rest wait
   * until these are removed. It removes nothing: the holder folds them into its ledger and removes them with the
   * {@link StateStore.saveLedger} that saves it, so that a run killed in between leaves them pending for its successor.
   */
  pendingSettlements(lane: string): Promise<Settlement[]>;

  /** The record for `key`, or `undefined` if there is none or it has expired at `now`. */
  getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined>;

  /**
   * Writes `record` for `key` unless an unexpired record at `now` keeps it out: an `in-progress` or `succeeded`
   * record, or a `failed` one of the same `dispatchId` (see {@link blocksClaim}).
   * @returns `null` when written, otherwise the existing record (and nothing is written).
   */
  putIdempotencyIfAbsent(key: string, record: IdempotencyRecord, now: number): Promise<IdempotencyRecord | null>;

  /** Writes `record` for `key`, replacing whatever is there. */
  putIdempotency(key: string, record: IdempotencyRecord): Promise<void>;
}
