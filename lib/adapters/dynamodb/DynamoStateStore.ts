import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type GetCommandInput,
  type PutCommandInput,
  type UpdateCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { circuitFromJSON, circuitToJSON, type CircuitJSON } from '../../domain/breaker/circuit';
import { parseLedgerJSON, type LedgerJSON, type Reservation, type Settlement } from '../../domain/quota/ledger';
import { describeValue } from '../../domain/describeValue';
import { LeaseLostError, StateConflictError, StateFormatError } from '../../errors';
import { MAX_PENDING_SETTLEMENTS, blocksClaim, checkSettled, type IdempotencyRecord, type Lease, type StateStore } from '../../ports/StateStore';

/** Name of the table's partition key (type S). The table has no sort key; `resources/dynamodb.yml` must match. */
export const TABLE_KEY = 'pk';

/**
 * Name of the table's TTL attribute (epoch seconds, Number). Only idempotency items carry it. DynamoDB deletes
 * expired items late (up to days), so the store also checks expiry itself on every read.
 */
export const TTL_ATTRIBUTE = 'ttl';

/**
 * How often `putIdempotencyIfAbsent` claims again when its claim is refused but the record that refused it is
 * gone (deleted or replaced by an expired one) by the time it is read.
 */
const MAX_CLAIM_ATTEMPTS = 3;

/** How a {@link DynamoStateStore} reaches its table. */
export interface DynamoStateStoreOptions {
  /**
   * A document client, e.g. `DynamoDBDocumentClient.from(new DynamoDBClient({}))`, with the default
   * `translateConfig` (numbers unwrapped). The store takes a document client rather than a bare `DynamoDBClient`
   * because `DynamoDBDocumentClient.from` writes its `translateConfig` into the bare client's shared config: the
   * owner of the client, not this store, should make that choice once.
   */
  readonly client: DynamoDBDocumentClient;
  /** The state table: partition key {@link TABLE_KEY} (S), no sort key, TTL on {@link TTL_ATTRIBUTE}. */
  readonly tableName: string;
}

type Item = Record<string, unknown>;
type Request<I> = Omit<I, 'TableName' | 'ExpressionAttributeNames'>;

/**
 * The `StateStore` on one DynamoDB table of typed items. Every method is a single request, with one conditional
 * write where the port needs atomicity, so it runs on dynalite (no transactions) as on DynamoDB. (Only a refused
 * `saveLedger` that removes settlements reads the item back, to tell a lost lease from a short list.)
 *
 * - `lane#<lane>`: the lease (`leaseOwner`, `leaseToken`, `leaseExpiresAt` in epoch ms), the ledger (`ledger`, the
 *   LedgerJSON as JSON text) and the pending settlements (`settlements`, a list, oldest first). They share one item
 *   because the write that saves the ledger also removes the settlements folded into it, fenced by `leaseToken`,
 *   and a single write (like a condition) sees only its own item.
 * - `circuit#<lane>`: the CircuitJSON's `version`, `state` and `pausedUntil`.
 * - `idem#<key>`: an idempotency record's fields, plus {@link TTL_ATTRIBUTE}.
 *
 * The ledger is stored as JSON text, not as a map: the store never addresses a part of it in an expression (it is
 * replaced whole under the fence) and the domain validates it as a whole, so text round-trips exactly what
 * `JSON.stringify` keeps, as the memory store does, and its length is the attribute's size in the 400 KB item.
 *
 * Every read is strongly consistent. Items read back are validated: a malformed one raises `StateFormatError`.
 * Errors other than a failed condition propagate unchanged.
 */
export class DynamoStateStore implements StateStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(options: DynamoStateStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  /** @inheritDoc */
  async acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    // The lease held by A, as seen by an acquisition at `now`:
    //
    //   A acquires                A's leaseExpiresAt
    //   ────┬───────────────────────────┬──────────────────────▶ now
    //       │ held: B is refused,       │ expired: anyone may
    //       │ A itself may re-acquire   │ acquire
    //
    // attribute_not_exists(leaseOwner): never leased, or released. `ADD leaseToken` applies under the same
    // condition, so the token grows by one per acquisition; release keeps it, so it grows across releases too.
    const output = await unlessConditionFails(
      this.update({
        Key: laneKey(lane),
        UpdateExpression: 'ADD #leaseToken :one SET #leaseOwner = :owner, #leaseExpiresAt = :expiresAt',
        ConditionExpression: 'attribute_not_exists(#leaseOwner) OR #leaseExpiresAt <= :now OR #leaseOwner = :owner',
        ExpressionAttributeValues: { ':one': 1, ':owner': owner, ':expiresAt': now + ttlMs, ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
      () => undefined,
    );
    if (output === undefined) return null;
    return { lane, owner, token: leaseTokenOf(output.Attributes, lane), expiresAt: now + ttlMs };
  }

  /** @inheritDoc */
  async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    // A holds token 5. A renewal by A at any instant:
    //
    //   A acquires (5)          A's leaseExpiresAt       B acquires (6)
    //   ────┬─────────────────────────┬────────────────────────┬──────────▶ now
    //       │ renewed                 │ renewed (expired, but  │ LeaseLostError
    //       │                         │ nobody acquired since) │
    //
    // Expiry is not checked, only the token. `leaseOwner = :owner` fails once A has released (the owner is removed).
    await unlessConditionFails(
      this.update({
        Key: laneKey(lease.lane),
        UpdateExpression: 'SET #leaseExpiresAt = :expiresAt',
        ConditionExpression: '#leaseToken = :token AND #leaseOwner = :owner',
        ExpressionAttributeValues: { ':expiresAt': now + ttlMs, ':token': lease.token, ':owner': lease.owner },
      }),
      (cause) => leaseLost(lease.lane, lease.token, cause),
    );
    return { ...lease, expiresAt: now + ttlMs };
  }

  /** @inheritDoc */
  async releaseLease(lease: Lease): Promise<void> {
    // A stale holder's release changes nothing:
    //
    //   A acquires (5)      A's leaseExpiresAt     B acquires (6)      A releases (5)
    //   ────┬─────────────────────┬─────────────────────┬───────────────────┬──────▶
    //                                                                       refused: B keeps its lease
    //
    // A release removes the owner and the expiry but keeps `leaseToken`, so the next acquisition gets a greater token.
    await unlessConditionFails(
      this.update({
        Key: laneKey(lease.lane),
        UpdateExpression: 'REMOVE #leaseOwner, #leaseExpiresAt',
        ConditionExpression: '#leaseToken = :token',
        ExpressionAttributeValues: { ':token': lease.token },
      }),
      () => undefined,
    );
  }

  /**
   * {@inheritDoc StateStore.loadLedger}
   * @throws StateFormatError when the stored ledger is not JSON text of a ledger.
   */
  async loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    const item = await this.get({ Key: laneKey(lane), ProjectionExpression: '#ledger' });
    return item?.ledger === undefined ? undefined : ledgerOf(item.ledger, lane);
  }

  /**
   * {@inheritDoc StateStore.saveLedger}
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
    // the condition fails too); which part of the condition failed is read back afterwards. The write is not
    // idempotent: should the SDK retry one that landed (its answer timed out), the condition refuses the retry unless
    // `settled` more settlements were appended in the meantime.
    const removed = Array.from({ length: settled }, (_, i) => `#settlements[${settled - 1 - i}]`);
    await unlessConditionFails(
      this.update({
        Key: laneKey(lane),
        UpdateExpression: `SET #ledger = :ledger${removed.length === 0 ? '' : ` REMOVE ${removed.join(', ')}`}`,
        ConditionExpression: settled === 0 ? fenced : `${fenced} AND size(#settlements) >= :settled`,
        ExpressionAttributeValues: { ':ledger': JSON.stringify(ledger), ':token': fencingToken, ...(settled === 0 ? {} : { ':settled': settled }) },
      }),
      async (cause) => {
        const item = settled === 0 ? undefined : await this.get({ Key: laneKey(lane), ProjectionExpression: '#leaseToken' });
        if (item?.leaseToken !== fencingToken) leaseLost(lane, fencingToken, cause);
        throw new StateConflictError(`fewer than ${settled} settlements are pending for lane '${lane}', so the ledger was not saved`, { cause });
      },
    );
  }

  /**
   * {@inheritDoc StateStore.loadCircuit}
   * @throws StateFormatError when the stored circuit is malformed.
   */
  async loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    const item = await this.get({ Key: circuitKey(lane) });
    return item === undefined ? undefined : circuitToJSON(circuitFromJSON(item));
  }

  /** @inheritDoc */
  async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    // Two writers read version 3 and both try to write version 4:
    //
    //   X reads v3 ──────── X writes v4 if version = 3: ok
    //   Y reads v3 ───────────────────── Y writes v4 if version = 3: refused (it is 4) → false, Y reloads
    //
    // An absent item counts as version 0, so version 1 is written only if no item exists.
    const previous = next.version - 1;
    return unlessConditionFails(
      this.put({
        Item: { ...circuitKey(lane), version: next.version, state: next.state, pausedUntil: next.pausedUntil },
        ...(previous === 0
          ? { ConditionExpression: `attribute_not_exists(#${TABLE_KEY})` }
          : { ConditionExpression: '#version = :previous', ExpressionAttributeValues: { ':previous': previous } }),
      }).then(() => true),
      () => false,
    );
  }

  /** @inheritDoc */
  async addSettlement(lane: string, settlement: Settlement): Promise<void> {
    // Not fenced: workers report whatever lease is current. The list grows inside the lane item (400 KB limit),
    // so the orchestrator must fold and remove settlements regularly.
    await this.update({
      Key: laneKey(lane),
      UpdateExpression: 'SET #settlements = list_append(if_not_exists(#settlements, :empty), :one)',
      ExpressionAttributeValues: { ':empty': [], ':one': [settlement] },
    });
  }

  /**
   * {@inheritDoc StateStore.pendingSettlements}
   * @throws StateFormatError when a pending settlement is malformed (it stays in the table).
   */
  async pendingSettlements(lane: string): Promise<Settlement[]> {
    // The whole list is read (a GetItem costs the whole item anyway) and cut in code.
    const item = await this.get({ Key: laneKey(lane), ProjectionExpression: '#settlements' });
    return settlementsOf(item?.settlements, lane).slice(0, MAX_PENDING_SETTLEMENTS);
  }

  /**
   * {@inheritDoc StateStore.getIdempotency}
   * @throws StateFormatError when the stored record is malformed.
   */
  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    const item = await this.get({ Key: idempotencyKey(key) });
    return liveRecord(item, key, now);
  }

  /**
   * {@inheritDoc StateStore.putIdempotencyIfAbsent}
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
    for (let attempt = 1; attempt <= MAX_CLAIM_ATTEMPTS; attempt++) {
      const written = await unlessConditionFails(
        this.put({
          Item: idempotencyItem(key, record),
          ConditionExpression: `attribute_not_exists(#${TABLE_KEY}) OR #expiresAt <= :now OR (#status = :failed AND #dispatchId <> :dispatchId)`,
          ExpressionAttributeValues: { ':now': now, ':failed': 'failed', ':dispatchId': record.dispatchId },
        }).then(() => true),
        () => false,
      );
      if (written) return null;
      const item = await this.get({ Key: idempotencyKey(key) });
      const existing = item === undefined ? undefined : idempotencyRecordOf(item, key);
      if (blocksClaim(existing, record.dispatchId, now)) return existing;
    }
    throw new StateConflictError(`idempotency key '${key}' was claimed and freed again ${MAX_CLAIM_ATTEMPTS} times while claiming it`);
  }

  /** @inheritDoc */
  async putIdempotency(key: string, record: IdempotencyRecord): Promise<void> {
    await this.put({ Item: idempotencyItem(key, record) });
  }

  private async get(input: Request<GetCommandInput>): Promise<Item | undefined> {
    const output = await this.client.send(
      new GetCommand({ ...input, TableName: this.tableName, ConsistentRead: true, ExpressionAttributeNames: namesIn(input.ProjectionExpression) }),
    );
    return output.Item;
  }

  private async put(input: Request<PutCommandInput>): Promise<void> {
    await this.client.send(new PutCommand({ ...input, TableName: this.tableName, ExpressionAttributeNames: namesIn(input.ConditionExpression) }));
  }

  private update(input: Request<UpdateCommandInput>): Promise<UpdateCommandOutput> {
    return this.client.send(
      new UpdateCommand({ ...input, TableName: this.tableName, ExpressionAttributeNames: namesIn(input.UpdateExpression, input.ConditionExpression) }),
    );
  }
}

/**
 * The fence on ledger and settlement writes: the lane's newest token, and nothing else. As in the memory store, a
 * holder whose lease expired (or that released it) may still write until someone acquires the lane again.
 */
const fenced = '#leaseToken = :token';

function laneKey(lane: string): Item {
  return { [TABLE_KEY]: `lane#${lane}` };
}

function circuitKey(lane: string): Item {
  return { [TABLE_KEY]: `circuit#${lane}` };
}

function idempotencyKey(key: string): Item {
  return { [TABLE_KEY]: `idem#${key}` };
}

function idempotencyItem(key: string, record: IdempotencyRecord): Item {
  return { ...idempotencyKey(key), ...record, [TTL_ATTRIBUTE]: Math.ceil(record.expiresAt / 1000) };
}

/**
 * ExpressionAttributeNames for every `#name` in `expressions`, each standing for the attribute of that name. Names
 * always go through placeholders because several (`ttl`, `status`, `state`) are reserved words; DynamoDB refuses
 * unused or empty name maps, hence `undefined` when there are none.
 */
function namesIn(...expressions: (string | undefined)[]): Record<string, string> | undefined {
  const placeholders = expressions.flatMap((expression) => expression?.match(/#\w+/g) ?? []);
  return placeholders.length === 0 ? undefined : Object.fromEntries(placeholders.map((placeholder) => [placeholder, placeholder.slice(1)]));
}

/** Runs `request`; when its condition fails, returns `onFailed(error)` instead. Every other error propagates. */
async function unlessConditionFails<T, F>(request: Promise<T>, onFailed: (error: unknown) => F): Promise<T | F> {
  try {
    return await request;
  } catch (error) {
    if ((error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException') return onFailed(error);
    throw error;
  }
}

function leaseLost(lane: string, fencingToken: number, cause: unknown): never {
  throw new LeaseLostError(lane, fencingToken, { cause });
}

function corrupt(what: string, problem: string, value: unknown): StateFormatError {
  return new StateFormatError(`stored ${what} ${problem}; got ${describeValue(value)}`);
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isObject(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function leaseTokenOf(attributes: Item | undefined, lane: string): number {
  const token = attributes?.leaseToken;
  if (typeof token !== 'number' || !Number.isSafeInteger(token) || token < 1) throw corrupt(`leaseToken of lane '${lane}'`, 'must be a positive integer', token);
  return token;
}

function ledgerOf(value: unknown, lane: string): LedgerJSON {
  if (typeof value !== 'string') throw corrupt(`ledger of lane '${lane}'`, 'must be JSON text', value);
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (cause) {
    throw new StateFormatError(`stored ledger of lane '${lane}' is not valid JSON; got ${describeValue(value)}`, { cause });
  }
  return parseLedgerJSON(json);
}

function settlementsOf(value: unknown, lane: string): Settlement[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw corrupt(`settlements of lane '${lane}'`, 'must be a list', value);
  return value.map((settlement: unknown, i) => settlementOf(settlement, `settlements of lane '${lane}' [${i}]`));
}

function settlementOf(value: unknown, what: string): Settlement {
  const { reservation, actualCost } = isObject(value) ? value : {};
  if (
    (actualCost === null || isFiniteNumber(actualCost)) &&
    isObject(reservation) &&
    isFiniteNumber(reservation.at) &&
    isFiniteNumber(reservation.cost) &&
    isObject(reservation.windows) &&
    Object.values(reservation.windows).every((window) => typeof window === 'string')
  ) {
    return { reservation: { at: reservation.at, cost: reservation.cost, windows: reservation.windows as Reservation['windows'] }, actualCost };
  }
  throw corrupt(what, 'must be {reservation: {at, cost, windows}, actualCost}', value);
}

/** The record in `item` if it is still live at `now` (DynamoDB's TTL deletes late; dynalite never does). */
function liveRecord(item: Item | undefined, key: string, now: number): IdempotencyRecord | undefined {
  if (item === undefined) return undefined;
  const record = idempotencyRecordOf(item, key);
  return now < record.expiresAt ? record : undefined;
}

function idempotencyRecordOf(item: Item, key: string): IdempotencyRecord {
  const { status, dispatchId, at, expiresAt } = item;
  if (typeof dispatchId === 'string' && isFiniteNumber(expiresAt)) {
    if (status === 'in-progress') return { status, dispatchId, expiresAt };
    if ((status === 'succeeded' || status === 'failed') && isFiniteNumber(at)) return { status, dispatchId, at, expiresAt };
  }
  throw corrupt(`idempotency record '${key}'`, "must be {status: 'in-progress' | 'succeeded' | 'failed', dispatchId, at?, expiresAt}", item);
}
