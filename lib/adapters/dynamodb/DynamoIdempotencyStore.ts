import { randomUUID } from 'node:crypto';
import { StateConflictError } from '../../errors';
import { blocksClaim, type IdempotencyRecord, type IdempotencyStore } from '../../ports/IdempotencyStore';
import { settlementOf } from './DynamoSettlementRecorder';
import { corrupt, DynamoTable, isFiniteNumber, TABLE_KEY, TTL_ATTRIBUTE, unlessConditionFails, type DynamoTableOptions, type Item } from './DynamoTable';

/**
 * How often `putIdempotencyIfAbsent` claims again when its claim is refused but the record that refused it is
 * gone (deleted or replaced by an expired one) by the time it is read.
 */
const MAX_CLAIM_ATTEMPTS = 3;

/**
 * The `IdempotencyStore` on the state table: one item per key (`idem#<key>`) with the record's fields, plus
 * {@link TTL_ATTRIBUTE}, and for a claim the id of the claim that wrote it (`claim`). See {@link DynamoTable} for the whole layout.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /**
   * {@inheritDoc IdempotencyStore.getIdempotency}
   * @throws StateFormatError when the stored record is malformed.
   */
  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    const item = await this.table.get({ Key: idempotencyKey(key) });
    return liveRecord(item, key, now);
  }

  /**
   * {@inheritDoc IdempotencyStore.putIdempotencyIfAbsent}
   * @throws StateConflictError when the claim is refused and the refusing record is gone again when read, three
   * times in a row (others keep claiming and freeing the key).
   * @throws StateFormatError when the existing record is malformed.
   */
  async putIdempotencyIfAbsent(key: string, record: IdempotencyRecord, now: number): Promise<IdempotencyRecord | null> {
    // The stored record R, as seen by a claim at `now`:
    //
    //   R written             R.expiresAt          R.ttl (+ DynamoDB's delay)
    //   ────┬─────────────────────┬─────────────────────┬─────────▶ now
    //       │ refused: returns R  │ R still stored, but │ R deleted
    //       │                     │ the claim replaces it
    //
    // A refused claim reads R back. If R no longer blocks the claim by then (deleted by TTL, or replaced by an
    // expired record or by another dispatch's failed one), the claim is tried again.
    //
    // Each claim also writes a fresh `claim` id, because the SDK retries a put whose answer was lost (a timeout, a
    // 5xx after the commit). The retry is refused by the claim's own record, and R read back carries its id:
    //
    //   put R (claim c): lands ── answer lost ── SDK retries: refused ── reads R, claim = c → written (null)
    //
    // Returning R there would tell the worker that another delivery holds the key, and the job would wait out R.
    const claim = randomUUID();
    for (let attempt = 1; attempt <= MAX_CLAIM_ATTEMPTS; attempt++) {
      const written = await unlessConditionFails(
        this.table.put({
          Item: { ...idempotencyItem(key, record), claim },
          ConditionExpression: `attribute_not_exists(#${TABLE_KEY}) OR #expiresAt <= :now OR (#status = :failed AND #dispatchId <> :dispatchId)`,
          ExpressionAttributeValues: { ':now': now, ':failed': 'failed', ':dispatchId': record.dispatchId },
        }).then(() => true),
        () => false,
      );
      if (written) return null;
      const item = await this.table.get({ Key: idempotencyKey(key) });
      if (item?.claim === claim) return null;
      const existing = item === undefined ? undefined : idempotencyRecordOf(item, key);
      if (blocksClaim(existing, record.dispatchId, now)) return existing;
    }
    throw new StateConflictError(`idempotency key '${key}' was claimed and freed again ${MAX_CLAIM_ATTEMPTS} times while claiming it`);
  }

  /** @inheritDoc */
  async putIdempotency(key: string, record: IdempotencyRecord): Promise<void> {
    await this.table.put({ Item: idempotencyItem(key, record) });
  }
}

function idempotencyKey(key: string): Item {
  return { [TABLE_KEY]: `idem#${key}` };
}

function idempotencyItem(key: string, record: IdempotencyRecord): Item {
  return { ...idempotencyKey(key), ...record, [TTL_ATTRIBUTE]: Math.ceil(record.expiresAt / 1000) };
}

/** The record in `item` if it is still live at `now` (DynamoDB's TTL deletes late; dynalite never does). */
function liveRecord(item: Item | undefined, key: string, now: number): IdempotencyRecord | undefined {
  if (item === undefined) return undefined;
  const record = idempotencyRecordOf(item, key);
  return now < record.expiresAt ? record : undefined;
}

function idempotencyRecordOf(item: Item, key: string): IdempotencyRecord {
  const { status, dispatchId, at, expiresAt, settlement } = item;
  if (typeof dispatchId === 'string' && isFiniteNumber(expiresAt)) {
    if (status === 'in-progress') return { status, dispatchId, expiresAt };
    if (status === 'failed' && isFiniteNumber(at)) return { status, dispatchId, at, expiresAt };
    if (status === 'succeeded' && isFiniteNumber(at)) {
      const owed = settlement === undefined ? {} : { settlement: settlementOf(settlement, `settlement owed by idempotency record '${key}'`) };
      return { status, dispatchId, at, expiresAt, ...owed };
    }
  }
  throw corrupt(`idempotency record '${key}'`, "must be {status: 'in-progress' | 'succeeded' | 'failed', dispatchId, at?, expiresAt, settlement?}", item);
}
