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

/**
 * Per lane a lease with a fencing token: the tokens it hands out fence the saves of the `LedgerStore` of the same
 * backend (see `StateStores`). Every implementation passes `test/contract/stateStores.contract.ts`.
 *
 * Expiry is judged against the `now` passed in, never against a clock of the store's own, so that the same
 * contract holds on virtual time.
 */
export interface LeaseStore {
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

  /**
   * The lane's lease as last acquired or renewed, expired or not (the caller judges expiry against its own `now`), for
   * operators; `null` if it was never acquired, or was released since.
   */
  readLease(lane: string): Promise<Lease | null>;
}
