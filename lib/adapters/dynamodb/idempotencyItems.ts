import type { Costs } from '../../domain/quota/tiers';
import type { IdempotencyRecord, JobSuccess, SuccessDetails } from '../../ports/IdempotencyStore';
import { isRecord } from '../../settingChecks';
import { batchJobIndex } from '../../ports/Invoker';
import { settlementOf } from './settlementValues';
import { corrupt, isFiniteNumber, TABLE_KEY, TTL_ATTRIBUTE, type Item } from './itemValues';

/**
 * How an idempotency record is stored on its item of the state table (`idem#<key>`, see `DynamoIdempotencyStore`),
 * and read back: the update that writes a record and keeps the item's other attributes, and the record an item holds.
 */

/** The optional fields of a record: an update removes those `record` lacks. */
const OPTIONAL_FIELDS = ['at', 'settlement', 'reason', 'batch', 'busyUntil', 'usage', 'result'] as const;

/**
 * An UpdateItem of `key` (its item's key: see {@link idempotencyKey}) that sets `record`'s fields, its TTL and `extra`,
 * removes the optional fields it lacks, and keeps every other attribute (the `spent` marks); `tail` adds clauses (an
 * `ADD`, or names to remove).
 */
export function recordUpdate(
  key: Item,
  record: IdempotencyRecord,
  extra: Item,
  tail: string,
): { Key: Item; UpdateExpression: string } {
  const stored = storedFields(record);
  const fields = [...Object.keys(stored), ...Object.keys(extra), TTL_ATTRIBUTE];
  const set = fields.map((name) => `#${name} = :${name}`).join(', ');
  const absent = OPTIONAL_FIELDS.filter((name) => !(name in stored)).map((name) => `#${name}`);
  const remove = tail.startsWith('REMOVE ') ? [...absent, tail.slice('REMOVE '.length)] : absent;
  const add = tail.startsWith('ADD ') ? ` ${tail}` : '';
  return {
    Key: key,
    UpdateExpression: `SET ${set}${remove.length === 0 ? '' : ` REMOVE ${remove.join(', ')}`}${add}`,
  };
}

/** The values {@link recordUpdate} sets. */
export function recordValues(record: IdempotencyRecord, extra: Item): Item {
  const values = { ...storedFields(record), ...extra, [TTL_ATTRIBUTE]: Math.ceil(record.expiresAt / 1000) };
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [`:${name}`, value]));
}

/** The attributes that store `record`: its fields, with a batch claim's flattened into `batch` (its id) and `busyUntil`. */
function storedFields(record: IdempotencyRecord): Item {
  if (record.status !== 'in-progress' || record.batch === undefined) return { ...record };
  const { batch, ...fields } = record;
  return { ...fields, batch: batch.id, busyUntil: batch.busyUntil };
}

/**
 * Separates a lane's name from its keys in the item of a key of that lane's namespace (see {@link idempotencyKey}): a
 * control character, which no SQS message attribute (nor message id) can hold, so no key of another lane can look
 * like it.
 */
const NAMESPACE_SEPARATOR = '\u001f';

/**
 * The key of `key`'s idempotency item: `idem#<key>`, or in the namespace of lane `namespace` (see
 * `DynamoIdempotencyStore`) `idem#␟<lane>␟<key>` (␟ being U+001F), so that two lanes' jobs of one key never share a
 * record.
 */
export function idempotencyKey(key: string, namespace?: string): Item {
  const prefix = namespace === undefined ? '' : `${NAMESPACE_SEPARATOR}${namespace}${NAMESPACE_SEPARATOR}`;
  return { [TABLE_KEY]: `idem#${prefix}${key}` };
}

/** The key of batch `batch`'s outcome item. */
export function batchKey(batch: string): Item {
  return { [TABLE_KEY]: `batch#${batch}` };
}

/** The record in `item` if it is still live at `now` (DynamoDB's TTL deletes late; dynalite never does). */
export function liveRecord(item: Item | undefined, key: string, now: number): IdempotencyRecord | undefined {
  const record = item === undefined ? undefined : idempotencyRecordOf(item, key);
  return record !== undefined && now < record.expiresAt ? record : undefined;
}

/** The record `item` holds; `undefined` for an item of `spent` marks only (see claimRefund). */
export function idempotencyRecordOf(item: Item, key: string): IdempotencyRecord | undefined {
  const { status, dispatchId, at, expiresAt, settlement, reason, batch, busyUntil } = item;
  if (status === undefined && item.spent !== undefined) return undefined;
  if (typeof dispatchId === 'string' && isFiniteNumber(expiresAt)) {
    if (status === 'in-progress' && batch === undefined && busyUntil === undefined)
      return { status, dispatchId, expiresAt };
    if (status === 'in-progress' && typeof batch === 'string' && isFiniteNumber(busyUntil))
      return { status, dispatchId, expiresAt, batch: { id: batch, busyUntil } };
    if (status === 'failed' && isFiniteNumber(at)) return { status, dispatchId, at, expiresAt };
    if (status === 'dead-lettered' && isFiniteNumber(at) && (reason === undefined || typeof reason === 'string')) {
      return { status, dispatchId, at, expiresAt, ...(reason === undefined ? {} : { reason }) };
    }
    if (status === 'succeeded' && isFiniteNumber(at)) {
      const owed =
        settlement === undefined
          ? {}
          : { settlement: settlementOf(settlement, `settlement owed by idempotency record '${key}'`) };
      return { status, dispatchId, at, expiresAt, ...owed, ...successDetailsOf(item.usage, item.result) };
    }
  }
  throw corrupt(
    `idempotency record '${key}'`,
    "must be {status: 'in-progress' | 'succeeded' | 'failed' | 'dead-lettered', dispatchId, at?, expiresAt, settlement?, reason?, batch?, busyUntil?}",
    item,
  );
}

/**
 * The details of a success (see `SuccessDetails`) as stored: `usage`, a map of numbers, and `result`, a string. Either
 * is left out when absent or malformed: they only inform, and a success holds whatever they hold.
 */
function successDetailsOf(usage: unknown, result: unknown): SuccessDetails {
  const counts = isRecord(usage) && Object.values(usage).every(isFiniteNumber) ? (usage as Costs) : undefined;
  return { ...(counts === undefined ? {} : { usage: counts }), ...(typeof result === 'string' ? { result } : {}) };
}

/** The projection that reads an idempotency item's `attempts` alone: one read unit whatever the item's size. */
export const ATTEMPTS_PROJECTION = '#attempts';

/**
 * How many attempts the item of `key` (read with {@link ATTEMPTS_PROJECTION}) counts: the size of its `attempts`
 * set; 0 without one (an item written before `attempts` existed, or none).
 * @throws StateFormatError when `attempts` is not a string set.
 */
export function attemptsOf(item: Item | undefined, key: string): number {
  const attempts = item?.attempts;
  if (attempts === undefined) return 0;
  if (!(attempts instanceof Set)) throw corrupt(`idempotency record '${key}'`, 'attempts must be a string set', item);
  return attempts.size;
}

/**
 * The prefix of the attributes of a batch's item that hold its jobs' usage: one a write, `usage@<key of its first
 * job>`, a map from each job's key (see {@link batchUsageKey}) to its usage. A write again (a retry after a lost
 * answer) replaces its own with the same.
 */
export const BATCH_USAGE_PREFIX = 'usage@';

/** The key of dispatch `dispatchId` in batch `batch`'s usage maps: its index in the batch, else `@<dispatchId>`. */
export function batchUsageKey(batch: string, dispatchId: string): string {
  return String(batchJobIndex(batch, dispatchId) ?? `@${dispatchId}`);
}

/** The usage of the job of `key` (see {@link batchUsageKey}) in batch item `item`'s usage maps, if any. */
function batchUsageOf(item: Item, key: string): unknown {
  for (const [name, value] of Object.entries(item))
    if (name.startsWith(BATCH_USAGE_PREFIX) && isRecord(value) && Object.hasOwn(value, key)) return value[key];
  return undefined;
}

/**
 * The success the record of batch `batch` (its item, if any) holds for dispatch `dispatchId`; `undefined` if it holds
 * none.
 * @throws StateFormatError when the batch's record is malformed (its usage and result are left out when they are: see
 * {@link successDetailsOf}).
 */
export function batchSuccessOf(item: Item | undefined, batch: string, dispatchId: string): JobSuccess | undefined {
  if (item === undefined) return undefined;
  const { at, succeeded, indexes } = item;
  if (
    !isFiniteNumber(at) ||
    !(succeeded === undefined || succeeded instanceof Set) ||
    !(indexes === undefined || indexes instanceof Set)
  ) {
    throw corrupt(`batch record '${batch}'`, 'must be {at, indexes?: a number set, succeeded?: a string set}', item);
  }
  const index = batchJobIndex(batch, dispatchId);
  if (!((index !== undefined && indexes?.has(index) === true) || succeeded?.has(dispatchId) === true)) return undefined;
  return { at, ...successDetailsOf(batchUsageOf(item, batchUsageKey(batch, dispatchId)), item.result) };
}
