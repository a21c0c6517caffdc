import type { StateStores } from '../../ports/StateStores';
import { DynamoCircuitStore } from './DynamoCircuitStore';
import { DynamoIdempotencyStore } from './DynamoIdempotencyStore';
import { DynamoLeaseStore } from './DynamoLeaseStore';
import { DynamoLedgerStore } from './DynamoLedgerStore';
import type { DynamoTableOptions } from './DynamoTable';

/** The four stores on one state table (see `DynamoTable` for its items), the lease and ledger stores sharing the lane item. */
export function dynamoStores(options: DynamoTableOptions): StateStores {
  return {
    lease: new DynamoLeaseStore(options),
    ledger: new DynamoLedgerStore(options),
    circuit: new DynamoCircuitStore(options),
    idempotency: new DynamoIdempotencyStore(options),
  };
}
