import type { Settlement } from '../../domain/quota/ledger';
import { MAX_PENDING_SETTLEMENTS } from '../../ports/LedgerStore';
import { settlementOf } from './settlementValues';
import { corrupt, DynamoTable, settlementShardKey, unlessConditionFails, type Item } from './DynamoTable';

/**
 * What a {@link DynamoLedgerStore} knows of a lane from its holder's last read and save, so that its later reads need
 * not read the lane item. Only the holder saves, so while it holds the lease the lane item changes only by its saves.
 */
export interface LaneView {
  /** The most shards a save recorded in the lane item (`shards`); 1 on items written before shards. */
  readonly storedShards: number;
  /** The ids the last save folded, with their shards (`folded`): no read returns them. */
  readonly folded: Readonly<Record<string, number>>;
  /** Whether this store removed `folded` from their shards since that save. */
  removed: boolean;
  /** Whether the lane item may hold a list of settlements (written by the previous version): each read reads it. */
  readonly mayHoldList: boolean;
  /** The shard of each settlement the last read returned from a shard. */
  shardOf: ReadonlyMap<string, number>;
  /** The ids of the list's settlements the last read returned: its first `listedCount`. */
  listed: readonly string[];
  listedCount: number;
}

/** Most map keys one removal names: its update expression stays far below DynamoDB's 4 KB. */
const REMOVALS_PER_WRITE = 100;

/**
 * Removes from their shards the settlements the lane's last save folded (see {@link LaneView.folded}), unless this store
 * did already. Removing a key that is gone already changes nothing, so a removal retried, or made again by a new
 * holder, is harmless; a shard item that does not exist is left so.
 */
export async function removeFolded(table: DynamoTable, lane: string, view: LaneView): Promise<void> {
  if (view.removed) return;
  const byShard = new Map<number, string[]>();
  for (const [id, shard] of Object.entries(view.folded)) byShard.set(shard, [...(byShard.get(shard) ?? []), id]);
  const writes = [...byShard].flatMap(([shard, ids]) =>
    Array.from({ length: Math.ceil(ids.length / REMOVALS_PER_WRITE) }, (_, i) =>
      ids.slice(i * REMOVALS_PER_WRITE, (i + 1) * REMOVALS_PER_WRITE),
    ).map((chunk) =>
      unlessConditionFails(
        table.update({
          Key: settlementShardKey(lane, shard),
          UpdateExpression: `REMOVE ${chunk.map((_, i) => `#pending.#f${i}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(#pending)',
          ExpressionAttributeNames: Object.fromEntries(chunk.map((id, i) => [`#f${i}`, id])),
        }),
        () => undefined,
      ),
    ),
  );
  await Promise.all(writes);
  view.removed = true;
}

/** What {@link pendingIn} reads, and how. */
export interface ShardRead {
  readonly view: LaneView;
  /** How many shards to read. */
  readonly shards: number;
  /** The lane item's list of settlements (written by the previous version), if it was read. */
  readonly list: unknown;
  readonly eventual: boolean;
  /** Ids to leave out of shards (see `PendingOptions.skip`). */
  readonly skip: ReadonlySet<string>;
}

/**
 * Reads the lane's shards and returns the pending settlements: those of the lane item's list (if read) first, in
 * order, then the shards' oldest reservation first, leaving out those the last save folded and those to `skip`; at
 * most {@link MAX_PENDING_SETTLEMENTS}. Records in `view` where each lies, for the save that folds them.
 *
 * An eventually consistent read (`eventual`) may miss a write of the last second: the settlement is then read, and
 * folded, later; it may also still show one removed lately, which the holder skips, having folded its id (see
 * `LedgerSync`).
 */
export async function pendingIn(
  table: DynamoTable,
  lane: string,
  { view, shards, list, eventual, skip }: ShardRead,
): Promise<Settlement[]> {
  const reads = await Promise.all(
    Array.from({ length: shards }, (_, shard) =>
      table.get({ Key: settlementShardKey(lane, shard), ProjectionExpression: '#pending', ConsistentRead: !eventual }),
    ),
  );
  const listed = settlementsOf(list, lane).map((settlement, i) => ({
    ...settlement,
    id: settlement.id ?? `listed-${i}`,
  }));
  const sharded = reads
    .flatMap((item, shard) =>
      entriesOf(item, lane, shard)
        .filter(([id]) => !(id in view.folded) && !skip.has(id))
        .map(([id, value]) => ({
          shard,
          settlement: { ...settlementOf(value, `settlement '${id}' of lane '${lane}'`), id },
        })),
    )
    .sort((a, b) => a.settlement.reservation.at - b.settlement.reservation.at)
    .slice(0, Math.max(0, MAX_PENDING_SETTLEMENTS - listed.length));
  view.listedCount = Math.min(listed.length, MAX_PENDING_SETTLEMENTS);
  view.listed = listed.slice(0, view.listedCount).map(({ id }) => id);
  view.shardOf = new Map(sharded.map(({ shard, settlement }) => [settlement.id, shard]));
  return [...listed.slice(0, view.listedCount), ...sharded.map(({ settlement }) => settlement)];
}

function entriesOf(item: Item | undefined, lane: string, shard: number): [string, unknown][] {
  const pending = item?.pending;
  if (pending === undefined) return [];
  if (typeof pending !== 'object' || pending === null || Array.isArray(pending))
    throw corrupt(`settlements of lane '${lane}' shard ${shard}`, 'must be a map', pending);
  return Object.entries(pending);
}

function settlementsOf(value: unknown, lane: string): Settlement[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw corrupt(`settlements of lane '${lane}'`, 'must be a list', value);
  return value.map((settlement: unknown, i) => settlementOf(settlement, `settlements of lane '${lane}' [${i}]`));
}
