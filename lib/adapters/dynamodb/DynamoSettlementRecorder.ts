import type { Settlement } from '../../domain/quota/ledger';
import type { LedgerStore } from '../../ports/LedgerStore';
import { DynamoTable, laneKey, type DynamoTableOptions } from './DynamoTable';

/**
 * The one ledger write a worker makes, {@link LedgerStore.addSettlement}, on the state table: it appends to the lane
 * item's pending `settlements`, which {@link DynamoLedgerStore} reads, folds and removes. Kept apart from that store so
 * that the worker, which only records, builds and bundles none of the ledger's reading.
 */
export class DynamoSettlementRecorder implements Pick<LedgerStore, 'addSettlement'> {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /** @inheritDoc */
  async addSettlement(lane: string, settlement: Settlement): Promise<void> {
    // Not fenced: workers report whatever lease is current. The list grows inside the lane item (400 KB limit),
    // so the orchestrator must fold and remove settlements regularly.
    await this.table.update({
      Key: laneKey(lane),
      UpdateExpression: 'SET #settlements = list_append(if_not_exists(#settlements, :empty), :one)',
      ExpressionAttributeValues: { ':empty': [], ':one': [settlement] },
    });
  }
}
