import {
  GetCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type GetCommandInput,
  type UpdateCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { LeaseLostError } from '../../errors';
import { TABLE_KEY, type Item } from './itemValues';

/** The values of the table's items, which every store checks (see `itemValues`). */
export { corrupt, isFiniteNumber, TABLE_KEY, TTL_ATTRIBUTE, type Item } from './itemValues';

/** How the DynamoDB stores reach their table. */
export interface DynamoTableOptions {
  /**
   * A document client, e.g. `DynamoDBDocumentClient.from(new DynamoDBClient({}))`, with the default
   * `translateConfig` (numbers unwrapped). The stores take a document client rather than a bare `DynamoDBClient`
   * because `DynamoDBDocumentClient.from` writes its `translateConfig` into the bare client's shared config: the
   * owner of the client, not a store, should make that choice once.
   */
  readonly client: DynamoDBDocumentClient;
  /** The state table: partition key {@link TABLE_KEY} (S), no sort key, TTL on {@link TTL_ATTRIBUTE}. */
  readonly tableName: string;
}

/**
 * A request without its table; its `ExpressionAttributeNames` need only name the placeholders that do not stand for
 * the attribute of their own name (see {@link DynamoTable}).
 */
type Request<I> = Omit<I, 'TableName'>;

/**
 * The requests the four DynamoDB stores send to their one table of typed items. Where the port needs atomicity, a
 * store method makes one conditional write, so the stores run on dynalite (no transactions) as on DynamoDB; the
 * ledger store's reads span the lane's settlement shards, and its save writes the call slots' item before the lane
 * item (see `DynamoLedgerStore`). (A refused conditional write may read its item back, to tell its own write that
 * landed on an earlier attempt, whose answer was lost, from a refusal: see `saveLedger`, `saveCircuit`,
 * `putIdempotencyIfAbsent`, `claimRefund` and `reopenDeadLettered`.)
 *
 * - `lane#<lane>`: the lease (`leaseOwner`, `leaseToken`, `leaseExpiresAt` in epoch ms), the ledger's tiers (`ledger`,
 *   the LedgerJSON without its slots, as JSON text), the id of the last ledger save (`ledgerSave`; absent on items
 *   saved before it existed), the ids of the settlements that save folded, each with its shard (`folded`, a map, at
 *   most `MAX_FOLDED_PER_SAVE`), and the most settlement shards a save has read (`shards`). The lease store and the
 *   ledger store share this item because the save is fenced by `leaseToken`, and a condition sees only its own item.
 *   An operator's override of the tiers' limits (`override`, a map: see `LimitOverrideJSON`, and its `overrideAt`)
 *   lives here too, so that the ledger's load and each save's answer carry it at no further read; only the operator
 *   writes it.
 *   Items written before the current layout also hold the call slots inside `ledger` and pending settlements in a
 *   `settlements` list (oldest first), which the ledger store reads and its next save migrates.
 * - `slots#<lane>`: the call slots of a lane with `maxInFlight` (`slots`, compact text, about 30 bytes a call) and the
 *   lease token of the save that wrote them (`leaseToken`: no holder of an older one may write over them).
 * - `settle#<lane>#<k>`, `k` in `0..shards - 1`: pending settlements, by id, in a map (`pending`), at most
 *   `MAX_STORED_SETTLEMENTS` before refunds are turned away; workers write into the shard of the id of the first
 *   settlement of a call (see `settlementShards`, `shardOf`), the orchestrator reads every shard and removes what its
 *   last save folded.
 * - `limits#<lane>`: what the API's answers said of its limits (see `DynamoLimitStore`).
 * - `circuit#<lane>`: the CircuitJSON's `version`, `state` and `pausedUntil`, when present its `clientErrorRun`,
 *   `hold` and `transitions`, and the ids of the writes of its last versions (`write<version>`; absent on items
 *   written before they existed).
 * - `idem#<key>`: an idempotency record's fields, plus {@link TTL_ATTRIBUTE}, when a claim wrote it, that claim's
 *   id (`claim`), the dispatches marked as having spent their reservation on the key (`spent`, a string set, with
 *   `refundClaim`), and, once an operator reopened the key, the id of the last reopen (`reopen`).
 * - `batch#<batch>`: the dispatches a batch recorded as succeeded (`succeeded`, a string set), `at`, and the TTL.
 *
 * Every read is strongly consistent but the circuit's refusal run, which a worker reads only to skip a write, and the
 * orchestrator's reads of settlement shards after its first (see `LedgerStore.pendingSettlements`). Items read back
 * are validated: a malformed one raises `StateFormatError`.
 * Errors other than a failed condition propagate unchanged.
 */
export class DynamoTable {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(options: DynamoTableOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  /**
   * A GetItem, strongly consistent unless `input` asks otherwise (`ConsistentRead: false`: half the read units, and it
   * may miss a write of the last second); `#name`s in the projection stand for the attributes of that name.
   */
  async get(input: Request<GetCommandInput>): Promise<Item | undefined> {
    const output = await this.client.send(
      new GetCommand({
        ConsistentRead: true,
        ...input,
        TableName: this.tableName,
        ExpressionAttributeNames: namesIn(input.ExpressionAttributeNames, input.ProjectionExpression),
      }),
    );
    return output.Item;
  }

  /**
   * An UpdateItem; `#name`s in the update and the condition stand for the attributes of that name. With `resend:
   * 'if-refused'`, the SDK sends it again only after an answer that says it did not take effect (throttling); after
   * one that may hide a write that landed (a 5xx, a timeout, a lost connection), the call fails with that answer's
   * error instead, for a write whose second copy would not be harmless (see {@link sendAgainOnlyIfRefused}).
   */
  update(input: Request<UpdateCommandInput>, options: { resend?: 'if-refused' } = {}): Promise<UpdateCommandOutput> {
    const command = new UpdateCommand({
      ...input,
      TableName: this.tableName,
      ExpressionAttributeNames: namesIn(
        input.ExpressionAttributeNames,
        input.UpdateExpression,
        input.ConditionExpression,
      ),
    });
    if (options.resend === 'if-refused') sendAgainOnlyIfRefused(command);
    return this.client.send(command);
  }
}

/** DynamoDB's errors that say a request did not take effect, and may be sent again as it is. */
const REFUSALS = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'ThrottlingError',
]);

/**
 * Makes the SDK's own retries of `command` stop after an attempt whose failure may hide a write that landed: the
 * next attempt fails at once, with that attempt's error (not retryable, so the SDK gives up), instead of writing a
 * second copy. A middleware of the command's own, inside the retry loop, so it sees every attempt.
 */
function sendAgainOnlyIfRefused(command: UpdateCommand): void {
  let uncertain: unknown;
  command.middlewareStack.add(
    (next) => async (args) => {
      if (uncertain !== undefined) {
        throw Object.assign(new Error('not sent again: the write may have landed before its answer was lost'), {
          name: 'UncertainWriteError',
          cause: uncertain,
        });
      }
      try {
        return await next(args);
      } catch (error) {
        if (!REFUSALS.has((error as { name?: unknown } | null)?.name as string)) uncertain = error;
        throw error;
      }
    },
    { step: 'finalizeRequest', priority: 'low' },
  );
}

/**
 * ExpressionAttributeNames for every `#name` in `expressions`, each standing for the attribute of that name, unless
 * `given` names it otherwise (a map key that is no word, such as a settlement's id). Names always go through
 * placeholders because several (`ttl`, `status`, `state`) are reserved words; DynamoDB refuses unused or empty name
 * maps, hence `undefined` when there are none.
 */
function namesIn(
  given: Record<string, string> | undefined,
  ...expressions: (string | undefined)[]
): Record<string, string> | undefined {
  const placeholders = expressions.flatMap((expression) => expression?.match(/#\w+/g) ?? []);
  return placeholders.length === 0
    ? undefined
    : Object.fromEntries(
        placeholders.map((placeholder) => [placeholder, given?.[placeholder] ?? placeholder.slice(1)]),
      );
}

/** Key of the lane item, which holds the lane's lease and ledger (see {@link DynamoTable}). */
export function laneKey(lane: string): Item {
  return { [TABLE_KEY]: `lane#${lane}` };
}

/** Key of the item of the lane's call slots. */
export function slotsKey(lane: string): Item {
  return { [TABLE_KEY]: `slots#${lane}` };
}

/** Key of shard `shard` of the lane's pending settlements. */
export function settlementShardKey(lane: string, shard: number): Item {
  return { [TABLE_KEY]: `settle#${lane}#${shard}` };
}

/** Runs `request`; when its condition fails, returns `onFailed(error)` instead. Every other error propagates. */
export async function unlessConditionFails<T, F>(request: Promise<T>, onFailed: (error: unknown) => F): Promise<T | F> {
  try {
    return await request;
  } catch (error) {
    if ((error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException') return onFailed(error);
    throw error;
  }
}

/** @throws LeaseLostError for `lane` and `fencingToken`, caused by the refused write. */
export function leaseLost(lane: string, fencingToken: number, cause: unknown): never {
  throw new LeaseLostError(lane, fencingToken, { cause });
}
