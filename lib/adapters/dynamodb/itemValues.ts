/**
 * The values of the state table's items, without a request to it: the key and TTL attributes' names, and the checks
 * of what an item holds. Apart from `DynamoTable` so that code that only reads items (the producer client's `status`)
 * bundles no write.
 */
import { describeValue } from '../../domain/describeValue';
import { StateFormatError } from '../../errors';

/** Name of the table's partition key (type S). The table has no sort key; `resources/dynamodb.yml` must match. */
export const TABLE_KEY = 'pk';

/**
 * Name of the table's TTL attribute (epoch seconds, Number). Only idempotency and batch items carry it. DynamoDB deletes
 * expired items late (up to days), so the idempotency store also checks expiry itself on every read.
 */
export const TTL_ATTRIBUTE = 'ttl';

/** An item of the state table, as the document client reads and writes it. */
export type Item = Record<string, unknown>;

/** A `StateFormatError` saying that the stored `what` has `problem`, showing the value found. */
export function corrupt(what: string, problem: string, value: unknown): StateFormatError {
  return new StateFormatError(`stored ${what} ${problem}; got ${describeValue(value)}`);
}

/** Whether `value` is a finite number. */
export function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
