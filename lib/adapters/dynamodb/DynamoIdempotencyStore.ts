import { randomUUID } from 'node:crypto';
import type { Costs } from '../../domain/quota/tiers';
import { StateConflictError } from '../../errors';
import {
  claimRefusal,
  type BatchSuccesses,
  type ClaimRefusal,
  type IdempotencyRecord,
  type IdempotencyStore,
  type JobSuccess,
  type ReopenOutcome,
} from '../../ports/IdempotencyStore';
import { batchJobIndex } from '../../ports/Invoker';
import {
  ATTEMPTS_PROJECTION,
  attemptsOf,
  batchKey,
  BATCH_USAGE_PREFIX,
  batchSuccessOf,
  batchUsageKey,
  idempotencyKey,
  idempotencyRecordOf,
  liveRecord,
  recordUpdate,
  recordValues,
} from './idempotencyItems';
import {
  DynamoTable,
  TABLE_KEY,
  TTL_ATTRIBUTE,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';

/**
 * How often `putIdempotencyIfAbsent` claims again when its claim is refused but the record that refused it is
 * gone (deleted or replaced by an expired one) by the time it is read.
 */
const MAX_CLAIM_ATTEMPTS = 3;

/**
 * How often `reopenDeadLettered` writes again when its write is refused but the record it reads back is a live
 * `dead-lettered` one (dead-lettered again in between).
 */
const MAX_REOPEN_ATTEMPTS = 3;

/**
 * The `IdempotencyStore` on the state table: one item per key (`idem#<key>`) with the record's fields, plus
 * {@link TTL_ATTRIBUTE}, for a claim the id of the claim that wrote it (`claim`), the string set `spent` of the
 * dispatches that claimed the key or gave their reservation back (with `refundClaim`, the id of the last such mark),
 * the string set `attempts` of the dispatches whose call spent an attempt, and, once an operator reopened the key, the
 * id of the last reopen (`reopen`).
 * Items written before `spent` existed read the same: a dispatch missing from the set has not spent its reservation. See {@link DynamoTable} for the whole layout.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  private readonly table: DynamoTable;

  /**
   * @param namespace the lane whose keys it holds apart from every other lane's (see `idempotencyKey`), for a lane of
   * a deployment of several but its `default` lane; none in a deployment of one lane, whose items keep their keys.
   */
  constructor(
    options: DynamoTableOptions,
    private readonly namespace?: string,
  ) {
    this.table = new DynamoTable(options);
  }

  /** The key of `key`'s item, in this store's namespace. */
  private itemKey(key: string): Item {
    return idempotencyKey(key, this.namespace);
  }

  /**
   * {@inheritDoc IdempotencyStore.getIdempotency}
   * @throws StateFormatError when the stored record is malformed.
   */
  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    const item = await this.table.get({ Key: this.itemKey(key) });
    return liveRecord(item, key, now);
  }

  /**
   * {@inheritDoc IdempotencyStore.putIdempotencyIfAbsent}
   * @throws StateConflictError when the claim is refused and the refusing record is gone again when read, three
   * times in a row (others keep claiming and freeing the key).
   * @throws StateFormatError when the existing record is malformed.
   */
  async putIdempotencyIfAbsent(
    key: string,
    record: IdempotencyRecord,
    now: number,
    replacing?: string,
  ): Promise<ClaimRefusal | null> {
    // The stored record R, as seen by a claim at `now`:
    //
    //   R written             R.expiresAt          R.ttl (+ DynamoDB's delay)
    //   ────┬─────────────────────┬─────────────────────┬─────────▶ now
    //       │ refused: returns R  │ R still stored, but │ R deleted
    //       │                     │ the claim replaces it
    //
    // Whatever R, a claim by a dispatch in `spent` is refused: that dispatch claimed the key before, or gave its
    // reservation back. A refused claim reads the item back: R if it keeps the claim out, else `spent` if the
    // dispatch is marked. If neither holds by then (R deleted by TTL, or replaced by an expired record or by another
    // dispatch's failed one), the claim is tried again.
    //
    // Each claim also writes a fresh `claim` id, because the SDK retries a put whose answer was lost (a timeout, a
    // 5xx after the commit). The retry is refused by the claim's own record and mark, and the item read back carries
    // its id:
    //
    //   put R (claim c): lands ── answer lost ── SDK retries: refused ── reads R, claim = c → written (null)
    //
    // Returning R or `spent` there would tell the worker that another delivery holds the key, and the job would wait
    // out R.
    const claim = randomUUID();
    for (let attempt = 1; attempt <= MAX_CLAIM_ATTEMPTS; attempt++) {
      const written = await unlessConditionFails(
        this.table
          .update({
            ...recordUpdate(this.itemKey(key), record, { claim }, `ADD #spent :dispatchIds`),
            ConditionExpression: claimCondition(replacing),
            ExpressionAttributeValues: {
              ...recordValues(record, { claim }),
              ':now': now,
              ':failed': 'failed',
              ':dispatchIds': new Set([record.dispatchId]),
              ...(replacing === undefined ? {} : { ':inProgress': 'in-progress', ':replacing': replacing }),
            },
          })
          .then(() => true),
        () => false,
      );
      if (written) return null;
      const item = await this.table.get({ Key: this.itemKey(key) });
      if (item?.claim === claim) return null;
      const existing = item === undefined ? undefined : idempotencyRecordOf(item, key);
      const refusal = claimRefusal(existing, record.dispatchId, isMarked(item, record.dispatchId), now, replacing);
      if (refusal !== null) return refusal;
    }
    throw new StateConflictError(
      `idempotency key '${key}' was claimed and freed again ${MAX_CLAIM_ATTEMPTS} times while claiming it`,
    );
  }

  /**
   * {@inheritDoc IdempotencyStore.putIdempotency}
   *
   * A spent attempt adds the dispatch to the string set `attempts`: an `ADD` of a member already there changes nothing,
   * so an SDK retry of a write that landed counts the attempt once.
   */
  async putIdempotency(
    key: string,
    record: IdempotencyRecord,
    options: { readonly spentAttempt?: boolean } = {},
  ): Promise<void> {
    const spent = options.spentAttempt === true;
    const { Key, UpdateExpression } = recordUpdate(this.itemKey(key), record, {}, 'REMOVE #claim');
    await this.table.update({
      Key,
      UpdateExpression: spent ? `${UpdateExpression} ADD #attempts :attempt` : UpdateExpression,
      ExpressionAttributeValues: {
        ...recordValues(record, {}),
        ...(spent ? { ':attempt': new Set([record.dispatchId]) } : {}),
      },
    });
  }

  /**
   * {@inheritDoc IdempotencyStore.attemptsSpent}
   *
   * The size of the item's `attempts` set, read alone (a projection: one read unit whatever the item's size). An item
   * written before `attempts` existed has none: 0.
   * @throws StateFormatError when `attempts` is not a string set.
   */
  async attemptsSpent(key: string): Promise<number> {
    return attemptsOf(await this.table.get({ Key: this.itemKey(key), ProjectionExpression: ATTEMPTS_PROJECTION }), key);
  }

  /**
   * {@inheritDoc IdempotencyStore.reopenDeadLettered}
   * @throws StateConflictError when the write is refused and the record read back is a live `dead-lettered` one,
   * three times in a row (the key keeps being dead-lettered again).
   * @throws StateFormatError when the stored record is malformed.
   */
  async reopenDeadLettered(key: string, now: number): Promise<ReopenOutcome> {
    // The key's record R, as a reopen at `now` finds it:
    //
    //   R dead-lettered by dispatch d          R.expiresAt
    //   ────┬──────────────────────────────────────┬──────────────▶ now
    //       │ R becomes `failed` of d: the next    │ R has expired: nothing to reopen (`absent`);
    //       │ dispatch claims the key, d's further │ the next dispatch claims the key anyway
    //       │ deliveries stay out                  │
    //
    // Only `status` changes (and `reason` and the attempts spent go: the redriven job gets all its attempts again): `dispatchId`, `at`, the TTL and the `spent` marks stay, so that a
    // late delivery of d is refused (a failed record of its own dispatch) or, once the next dispatch holds the key,
    // finds its mark and gives nothing back. A record of any other status is left as it is.
    //
    // The write also sets a fresh `reopen` id, which no later write removes, because the SDK retries an update whose
    // answer was lost. The retry is refused (R is `failed` now, or claimed since), and the item read back carries the id:
    //
    //   reopen (id o): lands ── answer lost ── [next dispatch claims] ── retry: refused ── reads reopen = o → reopened
    const reopen = randomUUID();
    for (let attempt = 1; attempt <= MAX_REOPEN_ATTEMPTS; attempt++) {
      const reopened = await unlessConditionFails(
        this.table
          .update({
            Key: this.itemKey(key),
            UpdateExpression: 'SET #status = :failed, #reopen = :reopen REMOVE #reason, #attempts',
            ConditionExpression: '#status = :deadLettered AND #expiresAt > :now',
            ExpressionAttributeValues: {
              ':failed': 'failed',
              ':reopen': reopen,
              ':deadLettered': 'dead-lettered',
              ':now': now,
            },
          })
          .then(() => true),
        () => false,
      );
      if (reopened) return 'reopened';
      const item = await this.table.get({ Key: this.itemKey(key) });
      if (item?.reopen === reopen) return 'reopened';
      const record = liveRecord(item, key, now);
      if (record === undefined) return 'absent';
      if (record.status !== 'dead-lettered') return record.status;
    }
    throw new StateConflictError(
      `idempotency key '${key}' was dead-lettered again ${MAX_REOPEN_ATTEMPTS} times while reopening it`,
    );
  }

  /**
   * {@inheritDoc IdempotencyStore.claimRefund}
   *
   * Adds `dispatchId` to the item's `spent` string set unless it is there (a claim adds its dispatch too). On an item
   * that is gone (TTL), the mark makes an item of its own with the TTL of `expiresAt`, which reads as no record. Like
   * a claim, the mark writes a fresh `refundClaim` id, so that an SDK retry refused by its own landed mark is told
   * apart from a mark made before:
   *
   *   mark d (refundClaim r): lands ── answer lost ── retry: refused ── reads refundClaim = r → true
   */
  async claimRefund(key: string, dispatchId: string, expiresAt: number): Promise<boolean> {
    const refundClaim = randomUUID();
    const marked = await unlessConditionFails(
      this.table
        .update({
          Key: this.itemKey(key),
          UpdateExpression: `SET #${TTL_ATTRIBUTE} = if_not_exists(#${TTL_ATTRIBUTE}, :ttl), #refundClaim = :refundClaim ADD #spent :dispatchIds`,
          ConditionExpression: 'NOT contains(#spent, :dispatchId)',
          ExpressionAttributeValues: {
            ':ttl': Math.ceil(expiresAt / 1000),
            ':refundClaim': refundClaim,
            ':dispatchIds': new Set([dispatchId]),
            ':dispatchId': dispatchId,
          },
        })
        .then(() => true),
      () => false,
    );
    if (marked) return true;
    const item = await this.table.get({
      Key: this.itemKey(key),
      ProjectionExpression: '#refundClaim',
    });
    return item?.refundClaim === refundClaim;
  }

  /**
   * {@inheritDoc IdempotencyStore.recordBatchSuccesses}
   *
   * One item per batch (`batch#<batch>`): `at`, the TTL, `result`, the number set `indexes` of the dispatches named by
   * their index in the batch (see `batchJobDispatchId`), the string set `succeeded` of any other dispatch ids, and the
   * jobs' usage, a map by job in an attribute of each write's own (see `BATCH_USAGE_PREFIX`), so that a write adds to
   * what is there. A thousand indexes fit in one write unit, or ten jobs that count three units each.
   */
  async recordBatchSuccesses(batch: string, { at, expiresAt, jobs, result }: BatchSuccesses): Promise<void> {
    const [first] = jobs;
    if (first === undefined) return;
    const indexes = new Set<number>();
    const others = new Set<string>();
    const usage: Record<string, Costs> = {};
    for (const job of jobs) {
      const index = batchJobIndex(batch, job.dispatchId);
      if (index === undefined) others.add(job.dispatchId);
      else indexes.add(index);
      if (job.usage !== undefined) usage[batchUsageKey(batch, job.dispatchId)] = job.usage;
    }
    const sets = [
      '#at = if_not_exists(#at, :at)',
      `#${TTL_ATTRIBUTE} = :ttl`,
      ...(result === undefined ? [] : ['#result = :result']),
      ...(Object.keys(usage).length === 0 ? [] : ['#usage = :usage']),
    ];
    const adds = [
      ...(indexes.size > 0 ? ['#indexes :indexes'] : []),
      ...(others.size > 0 ? ['#succeeded :succeeded'] : []),
    ];
    await this.table.update({
      Key: batchKey(batch),
      UpdateExpression: `SET ${sets.join(', ')} ADD ${adds.join(', ')}`,
      ExpressionAttributeNames: { '#usage': `${BATCH_USAGE_PREFIX}${batchUsageKey(batch, first.dispatchId)}` },
      ExpressionAttributeValues: {
        ':at': at,
        ':ttl': Math.ceil(expiresAt / 1000),
        ...(result === undefined ? {} : { ':result': result }),
        ...(Object.keys(usage).length === 0 ? {} : { ':usage': usage }),
        ...(indexes.size > 0 ? { ':indexes': indexes } : {}),
        ...(others.size > 0 ? { ':succeeded': others } : {}),
      },
    });
  }

  /**
   * {@inheritDoc IdempotencyStore.batchSuccess}
   * @throws StateFormatError when the batch's record is malformed.
   */
  async batchSuccess(batch: string, dispatchId: string): Promise<JobSuccess | undefined> {
    return batchSuccessOf(await this.table.get({ Key: batchKey(batch) }), batch, dispatchId);
  }
}

/** The claiming dispatch (`:dispatchId`) is not in `spent`: it neither claimed the key nor gave its reservation back. */
const DISPATCH_UNMARKED = 'NOT contains(#spent, :dispatchId)';
/** No record: no item, or one of `spent` marks only (see claimRefund). */
const NO_RECORD = `attribute_not_exists(#${TABLE_KEY}) OR attribute_not_exists(#status)`;
/** The record has expired at `:now` (DynamoDB deletes it later). */
const RECORD_EXPIRED = '#expiresAt <= :now';
/** Another dispatch's call failed: the next dispatch claims the key. */
const FAILED_BY_ANOTHER = '(#status = :failed AND #dispatchId <> :dispatchId)';
/** A stopped batch claim of dispatch `:replacing`, whose batch recorded no success for it (see claimKey). */
const STOPPED_CLAIM_REPLACED = '(#status = :inProgress AND #dispatchId = :replacing AND #busyUntil <= :now)';

/**
 * The condition of a claim (see {@link DynamoIdempotencyStore.putIdempotencyIfAbsent}): its dispatch is unmarked, and
 * no record keeps it out. An item written before `spent` existed has no marks: its claims pass on the record alone.
 */
function claimCondition(replacing: string | undefined): string {
  const free = [
    NO_RECORD,
    RECORD_EXPIRED,
    FAILED_BY_ANOTHER,
    ...(replacing === undefined ? [] : [STOPPED_CLAIM_REPLACED]),
  ];
  return `${DISPATCH_UNMARKED} AND (${free.join(' OR ')})`;
}

/** Whether `item` marks `dispatchId` in `spent` (see claimRefund). */
function isMarked(item: Item | undefined, dispatchId: string): boolean {
  return item?.spent instanceof Set && item.spent.has(dispatchId);
}
