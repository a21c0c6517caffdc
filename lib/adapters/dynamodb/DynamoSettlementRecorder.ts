import { randomUUID } from 'node:crypto';
import type { Reservation, Settlement } from '../../domain/quota/ledger';
import { COST_UNIT, type Costs } from '../../domain/quota/tiers';
import { allRefunds, MAX_STORED_SETTLEMENTS, type LedgerStore } from '../../ports/LedgerStore';
import { shardOf, type ShardCounts } from '../../domain/quota/settlementShards';
import {
  corrupt,
  DynamoTable,
  isFiniteNumber,
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

function isObject(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is a reservation's `windows`: an object of strings. */
function isWindows(value: unknown): value is Reservation['windows'] {
  return isObject(value) && Object.values(value).every((window) => typeof window === 'string');
}

/** Whether `value` is a {@link Costs}: an object of finite numbers. */
function isCosts(value: unknown): value is Costs {
  return isObject(value) && Object.values(value).every(isFiniteNumber);
}

/**
 * The settlement stored as `value` (in the lane item's pending list, or owed by an idempotency record). One stored
 * before units had names (`reservation.cost` and `actualCost`, numbers) reads as one of the `cost` unit.
 * @param what names the stored value in the error.
 * @throws StateFormatError when `value` is not a settlement.
 */
export function settlementOf(value: unknown, what: string): Settlement {
  const { reservation, actual, actualCost, id, startDelayMs, chainGapMs } = isObject(value) ? value : {};
  const costs = isObject(reservation)
    ? (reservation.costs ?? (isFiniteNumber(reservation.cost) ? { [COST_UNIT]: reservation.cost } : undefined))
    : undefined;
  const used = actual !== undefined ? actual : isFiniteNumber(actualCost) ? { [COST_UNIT]: actualCost } : actualCost;
  if (
    (id === undefined || typeof id === 'string') &&
    (startDelayMs === undefined || isFiniteNumber(startDelayMs)) &&
    (chainGapMs === undefined || isFiniteNumber(chainGapMs)) &&
    (used === null || isCosts(used)) &&
    isObject(reservation) &&
    isFiniteNumber(reservation.at) &&
    isCosts(costs) &&
    isWindows(reservation.windows) &&
    (reservation.pools === undefined ||
      (isObject(reservation.pools) && Object.values(reservation.pools).every(isWindows)))
  ) {
    const pools = reservation.pools as Reservation['pools'];
    return {
      reservation: {
        at: reservation.at,
        costs,
        windows: reservation.windows,
        ...(pools === undefined ? {} : { pools }),
      },
      actual: used,
      ...(id === undefined ? {} : { id }),
      ...(startDelayMs === undefined ? {} : { startDelayMs }),
      ...(chainGapMs === undefined ? {} : { chainGapMs }),
    };
  }
  throw corrupt(
    what,
    'must be {reservation: {at, costs, windows, pools?}, actual, id?, startDelayMs?, chainGapMs?}',
    value,
  );
}
