import type { StateStores } from '../../ports/StateStores';
import { DynamoCircuitStore } from './DynamoCircuitStore';
import { DynamoIdempotencyStore } from './DynamoIdempotencyStore';
import { DynamoLeaseStore } from './DynamoLeaseStore';
import { DynamoLedgerStore } from './DynamoLedgerStore';
import { DynamoLimitStore } from './DynamoLimitStore';
import type { DynamoTableOptions } from './DynamoTable';

/**
 * The five stores on one state table (see `DynamoTable` for its items), the lease and ledger stores sharing the lane
 * item; `settlementShards` is the lane's shard count (see `settlementShards`), 1 by default: a reader still reads every
 * shard a save recorded; `idempotencyNamespace` the lane's namespace of idempotency keys, if it has one (see
 * `idempotencyNamespace`).
 */
export function dynamoStores(
  options: DynamoTableOptions,
  {
    settlementShards = 1,
    idempotencyNamespace,
  }: { readonly settlementShards?: number; readonly idempotencyNamespace?: string } = {},
): StateStores {
  return {
    lease: new DynamoLeaseStore(options),
    ledger: new DynamoLedgerStore(options, settlementShards),
    circuit: new DynamoCircuitStore(options),
    idempotency: new DynamoIdempotencyStore(options, idempotencyNamespace),
    limits: new DynamoLimitStore(options),
  };
}
