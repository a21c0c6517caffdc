import type { CircuitStore } from './CircuitStore';
import type { IdempotencyStore } from './IdempotencyStore';
import type { LeaseStore } from './LeaseStore';
import type { LedgerStore } from './LedgerStore';
import type { LimitStore } from './LimitStore';

/**
 * The durable shared state of the service, one store per concern, all five over one backend. They share state
 * where the contract says so: {@link LedgerStore.saveLedger} is fenced by the tokens of the {@link LeaseStore} beside
 * it, so a ledger store only works together with the lease store of the same backend. Every backend's five stores
 * pass `test/contract/stateStores.contract.ts` together.
 */
export interface StateStores {
  readonly lease: LeaseStore;
  readonly ledger: LedgerStore;
  readonly circuit: CircuitStore;
  readonly idempotency: IdempotencyStore;
  readonly limits: LimitStore;
}
