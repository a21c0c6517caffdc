import { randomUUID } from 'node:crypto';
import type { Settlement } from '../../domain/quota/ledger';
import { allRefunds, MAX_STORED_SETTLEMENTS, type LedgerStore } from '../../ports/LedgerStore';
import { shardOf, type ShardCounts } from '../../domain/quota/settlementShards';
import {
  DynamoTable,
  settlementShardKey,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';

/**
 * The one ledger write a worker makes, {@link LedgerStore.addSettlements}, on the state table: it writes the
 * settlements into the `pending` map of one shard of the lane's settlements (`settle#<lane>#<k>`, `k` the shard of
 * the first settlement's id), keyed by id, which {@link DynamoLedgerStore} reads, folds and removes. Kept apart from
 * that store so that the worker, which only records, builds and bundles none of the ledger's reading.
 */
export class DynamoSettlementRecorder implements Pick<LedgerStore, 'addSettlements'> {
  private readonly table: DynamoTable;

  private readonly shardsOf: ShardCounts;

  /** @param shards the shard count of every lane and pool, or of each by its state name (see `shardCounts`). */
  constructor(options: DynamoTableOptions, shards: number | ShardCounts = 1) {
    this.table = new DynamoTable(options);
    this.shardsOf = typeof shards === 'number' ? () => shards : shards;
  }

  /** @inheritDoc */
  async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    // Not fenced: workers report whatever lease is current. A shard stays small: the orchestrator reads it about every
    // second and removes what it folded, and refunds are turned away from a full one. Keyed by id, so a copy written
    // again while the first is pending replaces it; a copy that lands after the first was folded and removed is read
    // again, and the orchestrator skips an id it folded lately. The SDK still sends the write again only after a
    // refusal (throttling), as when the settlements were a list (see `recordSettlement`).
    if (settlements.length === 0) return true;
    // One value per id (two SETs of one key would be refused): the later copy, as a second write would leave.
    const byId = new Map(settlements.map((settlement) => [settlement.id ?? `unnamed-${randomUUID()}`, settlement]));
    const named = [...byId].map(([id, settlement]) => ({ ...settlement, id }));
    const key = settlementShardKey(lane, shardOf(named[0]?.id ?? '', this.shardsOf(lane)));
    const bounded = allRefunds(settlements);
    let added = true;
    for (let i = 0; i < named.length; i += SETTLEMENTS_PER_WRITE)
      added = (await this.write(key, named.slice(i, i + SETTLEMENTS_PER_WRITE), bounded)) && added;
    return added;
  }

  /** Writes `settlements` into the shard of `key`, making its map if it has none; false when refunds were turned away. */
  private async write(key: Item, settlements: (Settlement & { id: string })[], bounded: boolean): Promise<boolean> {
    // A shard's map is made by the first write to it, and kept (removals leave it empty): SET of a key needs its map.
    const condition = bounded ? 'attribute_exists(#pending) AND size(#pending) < :most' : 'attribute_exists(#pending)';
    const put = () =>
      unlessConditionFails(
        this.table
          .update(
            {
              Key: key,
              UpdateExpression: `SET ${settlements.map((_, i) => `#pending.#k${i.toString(36)} = :v${i.toString(36)}`).join(', ')}`,
              ConditionExpression: condition,
              ExpressionAttributeNames: Object.fromEntries(settlements.map(({ id }, i) => [`#k${i.toString(36)}`, id])),
              ExpressionAttributeValues: {
                ...Object.fromEntries(settlements.map((settlement, i) => [`:v${i.toString(36)}`, settlement])),
                ...(bounded ? { ':most': MAX_STORED_SETTLEMENTS } : {}),
              },
            },
            { resend: 'if-refused' },
          )
          .then(() => true),
        () => false,
      );
    if (await put()) return true;
    const made = await unlessConditionFails(
      this.table
        .update(
          {
            Key: key,
            UpdateExpression: 'SET #pending = :pending',
            ConditionExpression: 'attribute_not_exists(#pending)',
            ExpressionAttributeValues: { ':pending': Object.fromEntries(settlements.map((s) => [s.id, s])) },
          },
          { resend: 'if-refused' },
        )
        .then(() => true),
      () => false,
    );
    // The map exists (another write made it in between, or refunds were turned away from a full shard): once more.
    return made || put();
  }
}

/** Most settlements one write holds: its update expression stays below DynamoDB's 4 KB. */
const SETTLEMENTS_PER_WRITE = 100;
