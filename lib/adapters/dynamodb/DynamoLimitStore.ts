import type { LimitObservations, ObservedReading } from '../../domain/limits/limitLearner';
import type { LimitFamily } from '../../domain/limits/rateLimitHeaders';
import type { LimitOverrideJSON } from '../../domain/limits/limitOverrideJSON';
import type { ExpectedOverride, LimitStore } from '../../ports/LimitStore';
import {
  corrupt,
  DynamoTable,
  isFiniteNumber,
  laneKey,
  TABLE_KEY,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';
import { overrideIn } from './overrideItem';

/** The families of limit headers, each stored under `read:<family>`. */
const FAMILIES: readonly LimitFamily[] = ['requests', 'tokens', 'input-tokens', 'output-tokens'];

/** The numeric fields of a stored reading besides its `at`. */
const FIELDS = ['limit', 'remaining', 'resetAt', 'windowMs'] as const;

/**
 * The `LimitStore` on the state table: one item per lane (`limits#<lane>`) with each family's latest reading as a map
 * under `read:<family>` (`{at, limit?, remaining?, resetAt?, windowMs?}`), and `rateLimitedAt`. Each write is one
 * conditional UpdateItem that only moves a value forward in time, so that writes in any order, and a retried write
 * whose answer was lost, leave the latest. The operator's override of a lane's or pool's tiers is the `override`
 * (and `overrideAt`) attribute of its lane item (`lane#<state>`), which the ledger store reads with the ledger and
 * each save. See {@link DynamoTable} for the whole layout.
 */
export class DynamoLimitStore implements LimitStore {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /** @inheritDoc */
  async recordReading(lane: string, reading: ObservedReading): Promise<void> {
    const { family, ...fields } = reading;
    // Two workers read answers at t1 < t2 and record them in the other order:
    //
    //   W2 records t2: no reading yet → written ── W1 records t1: refused (t2 is later) → the t2 reading stays
    await unlessConditionFails(
      this.table.update({
        Key: limitsKey(lane),
        UpdateExpression: 'SET #reading = :reading',
        ConditionExpression: 'attribute_not_exists(#reading) OR #reading.#at < :at',
        ExpressionAttributeNames: { '#reading': `read:${family}` },
        ExpressionAttributeValues: { ':reading': fields, ':at': reading.at },
      }),
      () => undefined,
    );
  }

  /** @inheritDoc */
  async recordRateLimited(lane: string, at: number): Promise<void> {
    await unlessConditionFails(
      this.table.update({
        Key: limitsKey(lane),
        UpdateExpression: 'SET #rateLimitedAt = :at',
        ConditionExpression: 'attribute_not_exists(#rateLimitedAt) OR #rateLimitedAt < :at',
        ExpressionAttributeValues: { ':at': at },
      }),
      () => undefined,
    );
  }

  /**
   * {@inheritDoc LimitStore.loadObservations}
   * @throws StateFormatError when a stored reading or `rateLimitedAt` is malformed.
   */
  async loadObservations(lane: string): Promise<LimitObservations> {
    // Eventually consistent, at half the price: a reading of the last second is folded at the next flush.
    const item = await this.table.get({ Key: limitsKey(lane), ConsistentRead: false });
    if (item === undefined) return { readings: [] };
    const readings = FAMILIES.flatMap((family) => {
      const stored = item[`read:${family}`];
      return stored === undefined ? [] : [readingOf(lane, family, stored)];
    });
    const { rateLimitedAt } = item;
    if (rateLimitedAt !== undefined && !isFiniteNumber(rateLimitedAt))
      throw corrupt(`limits of lane '${lane}'`, 'rateLimitedAt must be a number', rateLimitedAt);
    return { readings, ...(rateLimitedAt === undefined ? {} : { rateLimitedAt }) };
  }

  /** {@inheritDoc LimitStore.loadOverride} */
  async loadOverride(state: string): Promise<LimitOverrideJSON | undefined> {
    const item = await this.table.get({ Key: laneKey(state), ProjectionExpression: '#override, #overrideAt' });
    return item === undefined ? undefined : overrideIn(item, state).override;
  }

  /**
   * {@inheritDoc LimitStore.replaceOverride}
   * One UpdateItem of the lane item's `override` and `overrideAt` alone, conditional on the one stored. A retried
   * write whose first answer was lost is refused (the stored override is already the new one): the caller reads it
   * back to tell.
   */
  async replaceOverride(
    state: string,
    next: LimitOverrideJSON | undefined,
    expected: ExpectedOverride,
  ): Promise<boolean> {
    const { condition, values } = overrideCondition(expected);
    if (next !== undefined) Object.assign(values, { ':next': next, ':at': next.at });
    return unlessConditionFails(
      this.table
        .update({
          Key: laneKey(state),
          UpdateExpression:
            next === undefined ? 'REMOVE #override, #overrideAt' : 'SET #override = :next, #overrideAt = :at',
          ...(condition === undefined ? {} : { ConditionExpression: condition }),
          ...(Object.keys(values).length === 0 ? {} : { ExpressionAttributeValues: values }),
        })
        .then(() => true),
      () => false,
    );
  }
}

/** The condition on the stored override that {@link DynamoLimitStore.replaceOverride} writes under, and its value. */
function overrideCondition(expected: ExpectedOverride): { readonly condition?: string; readonly values: Item } {
  if (expected === 'any') return { values: {} };
  if (expected === 'none') return { condition: 'attribute_not_exists(#override)', values: {} };
  return { condition: '#overrideAt = :expectedAt', values: { ':expectedAt': expected } };
}

/** A stored reading of `family`. @throws StateFormatError when it is not a map of numbers with an `at`. */
function readingOf(lane: string, family: LimitFamily, stored: unknown): ObservedReading {
  const what = `limit reading '${family}' of lane '${lane}'`;
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored))
    throw corrupt(what, 'must be a map', stored);
  const map = stored as Item;
  if (!isFiniteNumber(map.at)) throw corrupt(what, 'must have a numeric at', map.at);
  const reading: Record<string, unknown> = { family, at: map.at };
  for (const field of FIELDS) {
    const value = map[field];
    if (value === undefined) continue;
    if (!isFiniteNumber(value)) throw corrupt(what, `${field} must be a number`, value);
    reading[field] = value;
  }
  return reading as unknown as ObservedReading;
}

function limitsKey(lane: string): Item {
  return { [TABLE_KEY]: `limits#${lane}` };
}
