import { randomUUID } from 'node:crypto';
import type { Settlement } from '../../domain/quota/ledger';
import { parseLedgerJSON, type LedgerJSON } from '../../domain/quota/ledgerJSON';
import { describeValue } from '../../domain/describeValue';
import { StateConflictError, StateFormatError } from '../../errors';
import { MAX_PENDING_SETTLEMENTS, checkSettled, type LedgerStore } from '../../ports/LedgerStore';
import { DynamoSettlementRecorder, settlementOf } from './DynamoSettlementRecorder';
import { corrupt, DynamoTable, laneKey, leaseLost, unlessConditionFails, type DynamoTableOptions } from './DynamoTable';

/**
 * The `LedgerStore` on the state table: the ledger (`ledger`, the LedgerJSON as JSON text) and the pending
 * settlements (`settlements`, a list, oldest first) live in the lane item (`lane#<lane>`), beside the lease of
 * {@link DynamoLeaseStore}: a save is fenced by that lease's `leaseToken`, read in the same item, and writes a fresh
 * `ledgerSave` id so that a retry of a save that landed is refused and recognised (items without it read as before). See
 * {@link DynamoTable} for the whole layout.
 *
 * The ledger is stored as JSON text, not as a map: the store never addresses a part of it in an expression (it is
 * replaced whole under the fence) and the domain validates it as a whole, so text round-trips exactly what
 * `JSON.stringify` keeps, as the memory store does, and its length is the attribute's size in the 400 KB item.
 */
export class DynamoLedgerStore implements LedgerStore {
  private readonly table: DynamoTable;
  private readonly recorder: DynamoSettlementRecorder;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
    this.recorder = new DynamoSettlementRecorder(options);
  }

  /**
   * {@inheritDoc LedgerStore.loadLedger}
   * @throws StateFormatError when the stored ledger is not JSON text of a ledger.
   */
  async loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    const item = await this.table.get({ Key: laneKey(lane), ProjectionExpression: '#ledger' });
    return item?.ledger === undefined ? undefined : ledgerOf(item.ledger, lane);
  }

  /**
   * {@inheritDoc LedgerStore.saveLedger}
   * @throws StateConflictError when fewer than `settled` settlements are pending; nothing is written.
   */
  async saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled = 0): Promise<void> {
    checkSettled(settled);
    // One write: SET the ledger, REMOVE the settlements folded into it. DynamoDB resolves every index of a REMOVE
    // against the list as it was before the update, so `#settlements[1], #settlements[0]` drops the two oldest,
    // whatever workers appended since the holder read them. dynalite instead removes the paths one after another,
    // shifting the list each time: listing them from the highest index down gives the same result on both.
    //
    //   holder reads [s0 s1] ── worker appends s2 ── holder saves, settled = 2: REMOVE [1], [0] → [s2]
    //
    // `size(...) >= :settled` keeps the write from removing settlements nobody read (an absent list has no size, so
    // the condition fails too).
    //
    // Each call writes a fresh `ledgerSave` id, and the condition refuses an item that already holds it, so that the
    // SDK's retry of a write that landed (its answer was lost: a timeout, a 5xx after the commit) changes nothing:
    //
    //   holder reads [s0 s1] ── save X lands: [ ] ── answer lost ── worker appends s2 ── SDK retries X: refused
    //                           ledgerSave = X                                         (ledgerSave = X), s2 stays
    //
    // Without the id, the retry would pass `size >= 2` once two more settlements were appended, and remove them
    // unfolded. A refused write reads the item back: its own id there means it landed, and the call succeeds.
    const saveId = randomUUID();
    const removed = Array.from({ length: settled }, (_, i) => `#settlements[${settled - 1 - i}]`);
    const notRepeated = '(attribute_not_exists(#ledgerSave) OR #ledgerSave <> :save)';
    await unlessConditionFails(
      this.table.update({
        Key: laneKey(lane),
        UpdateExpression: `SET #ledger = :ledger, #ledgerSave = :save${removed.length === 0 ? '' : ` REMOVE ${removed.join(', ')}`}`,
        ConditionExpression: `${fenced} AND ${notRepeated}${settled === 0 ? '' : ' AND size(#settlements) >= :settled'}`,
        ExpressionAttributeValues: {
          ':ledger': JSON.stringify(ledger),
          ':save': saveId,
          ':token': fencingToken,
          ...(settled === 0 ? {} : { ':settled': settled }),
        },
      }),
      async (cause) => {
        const item = await this.table.get({ Key: laneKey(lane), ProjectionExpression: '#leaseToken, #ledgerSave' });
        if (item?.ledgerSave === saveId) return;
        if (item?.leaseToken !== fencingToken) leaseLost(lane, fencingToken, cause);
        throw new StateConflictError(
          `fewer than ${settled} settlements are pending for lane '${lane}', so the ledger was not saved`,
          { cause },
        );
      },
    );
  }

  /** {@inheritDoc LedgerStore.addSettlements} See {@link DynamoSettlementRecorder}, which the worker uses alone. */
  addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    return this.recorder.addSettlements(lane, ...settlements);
  }

  /**
   * {@inheritDoc LedgerStore.pendingSettlements}
   * @throws StateFormatError when a pending settlement is malformed (it stays in the table).
   */
  async pendingSettlements(lane: string): Promise<Settlement[]> {
    // The whole list is read (a GetItem costs the whole item anyway) and cut in code.
    const item = await this.table.get({ Key: laneKey(lane), ProjectionExpression: '#settlements' });
    return settlementsOf(item?.settlements, lane).slice(0, MAX_PENDING_SETTLEMENTS);
  }
}

/**
 * The fence on ledger and settlement writes: the lane's newest token, and nothing else. As in the memory store, a
 * holder whose lease expired (or that released it) may still write until someone acquires the lane again.
 */
const fenced = '#leaseToken = :token';

function ledgerOf(value: unknown, lane: string): LedgerJSON {
  if (typeof value !== 'string') throw corrupt(`ledger of lane '${lane}'`, 'must be JSON text', value);
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (cause) {
    throw new StateFormatError(`stored ledger of lane '${lane}' is not valid JSON; got ${describeValue(value)}`, {
      cause,
    });
  }
  return parseLedgerJSON(json);
}

function settlementsOf(value: unknown, lane: string): Settlement[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw corrupt(`settlements of lane '${lane}'`, 'must be a list', value);
  return value.map((settlement: unknown, i) => settlementOf(settlement, `settlements of lane '${lane}' [${i}]`));
}
