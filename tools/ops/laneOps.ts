import { poolStateName } from '../../lib/domain/quota/poolSettlements';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoStores } from '../../lib/adapters/dynamodb/dynamoStores';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import type { Clock } from '../../lib/ports/Clock';
import { QUEUE_NAMES, type QueueName } from '../../lib/ports/QueueReceiver';
import type { StateStores } from '../../lib/ports/StateStores';
import { forceCircuit, pauseLane, resumeLane, type LaneControlResult } from '../../lib/services/operator/laneControl';
import { readLaneStatus, type LaneStatus } from '../../lib/services/operator/laneStatus';
import type { DeadLetterQueues } from './deadLetters';
import type { OpsTarget } from './target';

/** One queue's messages, as SQS counts them (approximately, a little behind). */
export interface QueueDepth {
  /** Waiting to be received (`ApproximateNumberOfMessages`). */
  readonly visible: number;
  /** Received and not yet deleted: waiting for a pacing slot, with a worker, or retried in place (`…NotVisible`). */
  readonly inFlight: number;
  /** Sent with a delay that has not passed, e.g. a retry (`…Delayed`). */
  readonly delayed: number;
}

/** What `ops status` shows: the lane's status, where it was read, and every queue's depth. */
export interface OpsStatus extends LaneStatus {
  /** The stage or local stack (see `OpsTarget.label`). */
  readonly target: string;
  /** The source queues' and the dead-letter queues' depths. */
  readonly queues: Readonly<Record<QueueName, QueueDepth>>;
  /** The pools the lane draws from (see `ServiceConfig.pools`), each against its limits; none without pools. */
  readonly pools: readonly PoolStatus[];
}

/** A pool's status for operators: its tiers' usage, its lease, and the 429 pause it holds, if any. */
export interface PoolStatus {
  readonly pool: string;
  readonly tiers: LaneStatus['tiers'];
  readonly lease: LaneStatus['lease'];
  /** Until when a 429 holds every lane of the pool (`rateLimitScope: pool`), while that is still ahead. */
  readonly rateLimitedUntil?: number;
  /** The operator's override of the pool's limits (`ops limits set --pool`), or `null`. */
  readonly override: LaneStatus['override'];
}

/** The production adapters on a target: the DynamoDB stores on its table, and the SQS adapter on its queues. */
export interface TargetAdapters extends DeadLetterQueues {
  readonly stores: StateStores;
}

/** The production DynamoDB and SQS adapters on `target`'s table and queues. */
export function adaptersOf(target: OpsTarget): TargetAdapters {
  return {
    stores: dynamoStores(
      { client: DynamoDBDocumentClient.from(target.clients.dynamodb), tableName: target.tableName },
      target.idempotencyNamespace === undefined ? {} : { idempotencyNamespace: target.idempotencyNamespace },
    ),
    sqs: target.clients.sqs,
    queueUrls: target.queueUrls,
    queues: new SqsQueues({ client: target.clients.sqs, queueUrls: target.queueUrls }),
  };
}

/** The depth of each of `target`'s eight queues (`GetQueueAttributes`). */
export async function queueDepths(target: OpsTarget): Promise<Record<QueueName, QueueDepth>> {
  const entries = await Promise.all(
    QUEUE_NAMES.map(async (queue) => {
      const { Attributes = {} } = await target.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: target.queueUrls[queue],
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      const depth: QueueDepth = {
        visible: Number(Attributes.ApproximateNumberOfMessages ?? 0),
        inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
        delayed: Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0),
      };
      return [queue, depth] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<QueueName, QueueDepth>;
}

/** The lane's status ({@link readLaneStatus} on the production DynamoDB adapters) with its queues' depths. */
export async function readStatus(target: OpsTarget, clock: Clock): Promise<OpsStatus> {
  const { stores } = adaptersOf(target);
  const { lane, config } = target;
  const read = (state: string, quotas: typeof config.quotas, limits?: typeof config.limits) =>
    readLaneStatus({
      circuits: stores.circuit,
      ledgers: stores.ledger,
      leases: stores.lease,
      clock,
      lane: state,
      quotas,
      timeZone: config.timeZone,
      overrides: stores.limits,
      ...(limits === undefined ? {} : { limits }),
    });
  const [status, queues, pools] = await Promise.all([
    read(lane, config.quotas, config.limits),
    queueDepths(target),
    Promise.all(
      (config.pools ?? []).map(async ({ name, quotas }): Promise<PoolStatus> => {
        const { tiers, lease, circuit, override } = await read(poolStateName(name), quotas);
        const until = circuit.rateLimitedUntil;
        return { pool: name, tiers, lease, ...(until === undefined ? {} : { rateLimitedUntil: until }), override };
      }),
    ),
  ]);
  return { target: target.label, ...status, queues, pools };
}

/** An operator's action on the lane's circuit item (see lib/services/operator/laneControl.ts). */
export type ControlAction = 'pause' | 'resume' | 'open' | 'close';

/** Applies `action` for operator `by` through the lane-control services, on the production circuit store. */
export function controlLane(
  target: OpsTarget,
  clock: Clock,
  action: ControlAction,
  by: string,
): Promise<LaneControlResult> {
  const deps = { circuits: adaptersOf(target).stores.circuit, clock, lane: target.lane };
  switch (action) {
    case 'pause':
      return pauseLane(deps, by);
    case 'resume':
      return resumeLane(deps, by);
    case 'open':
      return forceCircuit(deps, 'open', by);
    case 'close':
      return forceCircuit(deps, 'closed', by);
  }
}
