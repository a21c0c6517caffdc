import { randomUUID } from 'node:crypto';
import type { CallSlotsJSON } from '../../domain/inflight/callSlots';
import type { Settlement } from '../../domain/quota/ledger';
import type { LedgerJSON } from '../../domain/quota/ledgerJSON';
import { shardOf, type ShardCounts } from '../../domain/quota/settlementShards';
import { StateConflictError } from '../../errors';
import { checkFolded, type LaneItemSeen, type LedgerStore, type PendingOptions } from '../../ports/LedgerStore';
import { DynamoSettlementRecorder } from './DynamoSettlementRecorder';
import {
  corrupt,
  DynamoTable,
  laneKey,
  leaseLost,
  slotsKey,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';
import { pendingIn, removeFolded, type LaneView } from './settlementShardReads';
import { overrideIn } from './overrideItem';
import { ledgerOf, storedLedger } from './storedLedger';
import { slotsOfText, slotsText } from './slotsText';

/**
 * The `LedgerStore` on the state table, over three kinds of items (see {@link DynamoTable} for the whole layout):
 *
 * - the lane item (`lane#<lane>`), beside the lease of {@link DynamoLeaseStore}: the ledger's tiers (`ledger`, JSON
 *   text deflated, see `storedLedger`), the id of the last save (`ledgerSave`), the ids that save folded with their
 *   shards (`folded`), and the most shards any save has read (`shards`). A save is one write of it, fenced by
 *   `leaseToken`.
 * - the slots item (`slots#<lane>`): the call slots (`slots`, see {@link slotsText}), written before the lane item by
 *   a save whose slots changed, fenced by the `leaseToken` it records (no older holder may write over it).
 * - the shards (`settle#<lane>#<k>`): the pending settlements, keyed by id, in a map (`pending`) that workers write
 *   ({@link DynamoSettlementRecorder}) and the holder reads; the read after a save removes what that save folded.
 *
 * Items written before this layout read as before: a lane item whose ledger text holds the slots and whose
 * `settlements` list holds pending settlements. The holder's reads return the list's settlements first, and its
 * next save removes those it folded, in the same write, and writes the slots to their item: the lane is migrated.
 *
 * The store keeps, per lane, what its holder's last read and save found (see {@link LaneView}), so that later reads
 * skip the lane item; the holder's first read (`first`) reads it again.
 */
export class DynamoLedgerStore implements LedgerStore {
  private readonly table: DynamoTable;
  private readonly recorder: DynamoSettlementRecorder;
  private readonly views = new Map<string, LaneView>();
  /** Per lane, the slots text this store last wrote, so that a save whose slots did not change does not write them. */
  private readonly slotsWritten = new Map<string, string>();

  private readonly shardsOf: ShardCounts;

  /** @param shards the shard count of every lane and pool, or of each by its state name (see `shardCounts`). */
  constructor(options: DynamoTableOptions, shards: number | ShardCounts = 1) {
    this.table = new DynamoTable(options);
    this.shardsOf = typeof shards === 'number' ? () => shards : shards;
    this.recorder = new DynamoSettlementRecorder(options, this.shardsOf);
  }

  /**
   * {@inheritDoc LedgerStore.loadLedger}
   * @throws StateFormatError when the stored ledger is not JSON text of a ledger (see `ledgerOf`), or its slots not
   * slots text.
   */
  async loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    const [item, slotsItem] = await Promise.all([
      this.table.get({ Key: laneKey(lane), ProjectionExpression: '#ledger, #override, #overrideAt' }),
      this.table.get({ Key: slotsKey(lane), ProjectionExpression: '#slots' }),
    ]);
    if (item?.ledger === undefined) return undefined;
    const ledger = { ...ledgerOf(item.ledger, lane), ...overrideIn(item, lane) };
    if (slotsItem?.slots === undefined) return ledger;
    const slots = typeof slotsItem.slots === 'string' ? slotsOfText(slotsItem.slots) : undefined;
    if (slots === undefined) throw corrupt(`call slots of lane '${lane}'`, 'must be slots text', slotsItem.slots);
    return { ...ledger, slots };
  }

  /**
   * {@inheritDoc LedgerStore.saveLedger}
   * @throws StateConflictError when fewer settlements are in the lane item's list (written by the previous version)
   * than the holder read from it (which cannot happen for the holder: only it removes); nothing is written.
   */
  async saveLedger(
    lane: string,
    ledger: LedgerJSON,
    fencingToken: number,
    folded: readonly string[] = [],
  ): Promise<LaneItemSeen | undefined> {
    checkFolded(folded);
    const { slots, ...tiers } = ledger;
    if (slots !== undefined) await this.saveSlots(lane, slots, fencingToken);
    const view = this.views.get(lane);
    const listed = new Set(view?.listed);
    // The list's settlements the holder read are its first ones: they go whole, once all are folded.
    const settled = listed.size > 0 && [...listed].every((id) => folded.includes(id)) ? (view?.listedCount ?? 0) : 0;
    const foldedShards = Object.fromEntries(
      folded
        .filter((id) => !listed.has(id))
        .map((id) => [id, view?.shardOf.get(id) ?? shardOf(id, this.shardsOf(lane))]),
    );
    const shards = view === undefined ? undefined : Math.max(this.shardsOf(lane), view.storedShards);
    // Each call writes a fresh `ledgerSave` id, and the condition refuses an item that already holds it, so that the
    // SDK's retry of a write that landed (its answer lost) changes nothing, in particular removes no settlement of the
    // list appended since. A refused write reads the item back: its own id there means it landed. The list's
    // settlements are removed from the highest index down, which DynamoDB and dynalite both resolve against the list
    // as it was (see the list's removal before this layout).
    const saveId = randomUUID();
    const removed = Array.from({ length: settled }, (_, i) => `#settlements[${settled - 1 - i}]`);
    const output = await unlessConditionFails(
      this.table.update({
        Key: laneKey(lane),
        UpdateExpression:
          `SET #ledger = :ledger, #ledgerSave = :save, #folded = :folded${shards === undefined ? '' : ', #shards = :shards'}` +
          (removed.length === 0 ? '' : ` REMOVE ${removed.join(', ')}`),
        ConditionExpression: `${fenced} AND (attribute_not_exists(#ledgerSave) OR #ledgerSave <> :save)${settled === 0 ? '' : ' AND size(#settlements) >= :settled'}`,
        ExpressionAttributeValues: {
          // The override is the operator's: a save never writes it.
          ':ledger': storedLedger({ ...tiers, override: undefined }),
          ':save': saveId,
          ':token': fencingToken,
          ':folded': foldedShards,
          ...(shards === undefined ? {} : { ':shards': shards }),
          ...(settled === 0 ? {} : { ':settled': settled }),
        },
        ReturnValues: 'ALL_NEW',
      }),
      async (cause) => {
        const item = await this.table.get({ Key: laneKey(lane), ProjectionExpression: '#leaseToken, #ledgerSave' });
        if (item?.ledgerSave === saveId) return undefined;
        if (item?.leaseToken !== fencingToken) leaseLost(lane, fencingToken, cause);
        throw new StateConflictError(
          `fewer than ${settled} settlements are in the list of lane '${lane}', so the ledger was not saved`,
          { cause },
        );
      },
    );
    this.saved(lane, foldedShards, shards, output === undefined ? undefined : output.Attributes);
    return output?.Attributes === undefined ? undefined : overrideIn(output.Attributes, lane);
  }

  /** {@inheritDoc LedgerStore.addSettlements} See {@link DynamoSettlementRecorder}, which the worker uses alone. */
  addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    return this.recorder.addSettlements(lane, ...settlements);
  }

  /**
   * {@inheritDoc LedgerStore.pendingSettlements}
   * First removes from their shards the settlements the last save folded, unless this store removed them already.
   * @throws StateFormatError when a pending settlement is malformed (it stays in the table).
   */
  async pendingSettlements(lane: string, { first = false, skip }: PendingOptions = {}): Promise<Settlement[]> {
    let view = this.views.get(lane);
    let list: unknown;
    if (first || view === undefined || view.mayHoldList) {
      if (first) this.slotsWritten.delete(lane);
      const item = await this.table.get({ Key: laneKey(lane), ProjectionExpression: '#folded, #shards, #settlements' });
      view = laneViewOf(item, lane, first ? undefined : view);
      list = item?.settlements;
    }
    this.views.set(lane, view);
    await removeFolded(this.table, lane, view);
    const shards = Math.max(this.shardsOf(lane), view.storedShards);
    return pendingIn(this.table, lane, { view, shards, list, eventual: !first, skip: skip ?? new Set() });
  }

  /** Writes the slots to their item, fenced by `fencingToken`, unless this store last wrote the same. */
  private async saveSlots(lane: string, slots: CallSlotsJSON, fencingToken: number): Promise<void> {
    const text = slotsText(slots);
    if (this.slotsWritten.get(lane) === text) return;
    this.slotsWritten.delete(lane);
    // A retry of a write that landed finds its own token, and passes.
    await unlessConditionFails(
      this.table.update({
        Key: slotsKey(lane),
        UpdateExpression: 'SET #slots = :slots, #leaseToken = :token',
        ConditionExpression: 'attribute_not_exists(#leaseToken) OR #leaseToken <= :token',
        ExpressionAttributeValues: { ':slots': text, ':token': fencingToken },
      }),
      (cause) => leaseLost(lane, fencingToken, cause),
    );
    this.slotsWritten.set(lane, text);
  }

  /** Records what a save left: its folded ids (not yet removed), and whether the lane item still holds a list. */
  private saved(
    lane: string,
    folded: Record<string, number>,
    shards: number | undefined,
    item: Item | undefined,
  ): void {
    const list = item?.settlements;
    this.views.set(lane, {
      storedShards: shards ?? this.views.get(lane)?.storedShards ?? 1,
      folded,
      removed: Object.keys(folded).length === 0,
      // An answer lost: whether a list is left is not known, and the next read reads the lane item.
      mayHoldList: item === undefined || (Array.isArray(list) && list.length > 0),
      shardOf: new Map(),
      listed: [],
      listedCount: 0,
    });
  }
}

/**
 * The fence on ledger writes: the lane's newest token, and nothing else. As in the memory store, a holder whose lease
 * expired (or that released it) may still write until someone acquires the lane again.
 */
const fenced = '#leaseToken = :token';

/** The view of the lane `item` gives: its folded ids and shard count, and (for a holder that removed them) `known`'s removal. */
function laneViewOf(item: Item | undefined, lane: string, known: LaneView | undefined): LaneView {
  const folded = item?.folded ?? {};
  const stored = item?.shards ?? 1;
  if (typeof folded !== 'object' || folded === null || !Object.values(folded).every(Number.isInteger))
    throw corrupt(`folded settlements of lane '${lane}'`, 'must be a map of shard numbers', folded);
  if (typeof stored !== 'number' || !Number.isInteger(stored) || stored < 1)
    throw corrupt(`shard count of lane '${lane}'`, 'must be a positive integer', stored);
  const list = item?.settlements;
  return {
    storedShards: stored,
    folded: folded as Record<string, number>,
    removed: known?.removed === true && Object.keys(folded).every((id) => id in known.folded),
    mayHoldList: Array.isArray(list) && list.length > 0,
    shardOf: new Map(),
    listed: [],
    listedCount: 0,
  };
}
