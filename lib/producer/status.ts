/**
 * What became of a job, for producers: {@link status} reads what the service recorded of it (see `readJobRecord`)
 * with GetItem alone, and bundles no write.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  ATTEMPTS_PROJECTION,
  attemptsOf,
  batchKey,
  batchSuccessOf,
  idempotencyKey,
  liveRecord,
} from '../adapters/dynamodb/idempotencyItems';
import type { Item } from '../adapters/dynamodb/itemValues';
import { UNPREFIXED_LANE } from '../lanes/laneQueueNames';
import type { IdempotencyRecord, IdempotencyStore, JobSuccess } from '../ports/IdempotencyStore';
import { readJobRecord, type JobRecord } from '../services/operator/jobRecord';

/** Where {@link status} reads. */
export interface StatusOptions {
  /** A document client: `DynamoDBDocumentClient.from(new DynamoDBClient({}))`. */
  readonly dynamodb: DynamoDBDocumentClient;
  /** The state table's name (stack output `StateTableName`). */
  readonly tableName: string;
  /**
   * The lane the job was sent to, in a deployment of several lanes, whose keys each lane but `default` keeps apart.
   * @default the one lane of a one-lane deployment, or `default`
   */
  readonly lane?: string;
  /** The instant to judge the record's expiry at (epoch ms). @default now */
  readonly now?: number;
}

/** The reads `readJobRecord` makes, each one strongly consistent GetItem of the state table. */
class JobRecordReads implements Pick<IdempotencyStore, 'getIdempotency' | 'batchSuccess' | 'attemptsSpent'> {
  constructor(
    private readonly options: StatusOptions,
    private readonly namespace: string | undefined,
  ) {}

  private async get(key: Item, projection?: string): Promise<Item | undefined> {
    const { dynamodb, tableName } = this.options;
    const { Item: item } = await dynamodb.send(
      new GetCommand({
        TableName: tableName,
        Key: key,
        ConsistentRead: true,
        ...(projection === undefined
          ? {}
          : { ProjectionExpression: projection, ExpressionAttributeNames: { [projection]: projection.slice(1) } }),
      }),
    );
    return item;
  }

  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    return liveRecord(await this.get(idempotencyKey(key, this.namespace)), key, now);
  }

  async batchSuccess(batch: string, dispatchId: string): Promise<JobSuccess | undefined> {
    return batchSuccessOf(await this.get(batchKey(batch)), batch, dispatchId);
  }

  async attemptsSpent(key: string): Promise<number> {
    return attemptsOf(await this.get(idempotencyKey(key, this.namespace), ATTEMPTS_PROJECTION), key);
  }
}

/**
 * What the service recorded of the job of idempotency key `key` (a job sent without one has its message id for key):
 * `succeeded` (when, what its call counted, where its result went), `dead-lettered` (when, and why while the record
 * keeps it: `npm run ops -- job` also finds the letter), `in-flight`, `retrying` (a call failed; it waits to be
 * dispatched again), or `none` (not dispatched yet, or its record has expired). One to three reads; needs
 * `dynamodb:GetItem` on the table's `idem#*` and `batch#*` items, which the stack's producer policy grants.
 */
export function status(key: string, options: StatusOptions): Promise<JobRecord> {
  const namespace = options.lane === undefined || options.lane === UNPREFIXED_LANE ? undefined : options.lane;
  return readJobRecord(new JobRecordReads(options, namespace), key, options.now ?? Date.now());
}
