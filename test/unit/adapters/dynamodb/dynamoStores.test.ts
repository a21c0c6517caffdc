// Error paths dynalite cannot produce (throttling, DynamoDB's own response shapes, a key freed between a refused
// claim and its read), and the requests the stores send where their exact form matters. Everything else is tested against dynalite in test/integration/dynamoStateStore.test.ts.
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  ProvisionedThroughputExceededException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { dynamoStores } from '../../../../lib/adapters/dynamodb/dynamoStores';
import { LeaseLostError, StateConflictError } from '../../../../lib/errors';
import type { IdempotencyRecord } from '../../../../lib/ports/IdempotencyStore';
import type { Lease } from '../../../../lib/ports/LeaseStore';
import { MAX_PENDING_SETTLEMENTS } from '../../../../lib/ports/LedgerStore';
import type { StateStores } from '../../../../lib/ports/StateStores';

const T0 = 1_700_000_000_000;
const LEASE: Lease = { lane: 'lane', owner: 'a', token: 3, expiresAt: T0 + 30_000 };
const CLAIM: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-1', expiresAt: T0 + 30_000 };

const ddbMock = mockClient(DynamoDBDocumentClient);

function stores(): StateStores {
  const client = DynamoDBDocumentClient.from(
    new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }),
  );
  return dynamoStores({ client, tableName: 'state' });
}

function throttled(): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({
    message: 'Rate of requests exceeds the allowed throughput',
    $metadata: {},
  });
}

function conditionFailed(): ConditionalCheckFailedException {
  return new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
}

beforeEach(() => {
  ddbMock.reset();
});

afterAll(() => {
  ddbMock.restore();
});

describe('dynamoStores', () => {
  describe('errors other than a failed condition', () => {
    const calls: Array<[string, (s: StateStores) => Promise<unknown>]> = [
      ['acquireLease, instead of reporting the lease as held', (s) => s.lease.acquireLease('lane', 'a', T0, 30_000)],
      ['renewLease, instead of LeaseLostError', (s) => s.lease.renewLease(LEASE, T0, 30_000)],
      ['releaseLease, instead of ignoring them', (s) => s.lease.releaseLease(LEASE)],
      ['saveLedger, instead of LeaseLostError', (s) => s.ledger.saveLedger('lane', { v: 1, tiers: {} }, 3)],
      [
        'saveLedger removing settlements, instead of LeaseLostError',
        (s) => s.ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, 2),
      ],
      [
        'saveCircuit, instead of reporting a lost race',
        (s) =>
          s.circuit.saveCircuit('lane', {
            version: 2,
            state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 },
            pausedUntil: 0,
          }),
      ],
      [
        'addSettlements',
        (s) =>
          s.ledger.addSettlements('lane', { reservation: { at: T0, costs: { cost: 1 }, windows: {} }, actual: null }),
      ],
      ['pendingSettlements', (s) => s.ledger.pendingSettlements('lane')],
      [
        'putIdempotencyIfAbsent, instead of reporting a record',
        (s) => s.idempotency.putIdempotencyIfAbsent('key', CLAIM, T0),
      ],
      ['putIdempotency', (s) => s.idempotency.putIdempotency('key', CLAIM)],
      ['loadLedger', (s) => s.ledger.loadLedger('lane')],
      ['loadCircuit', (s) => s.circuit.loadCircuit('lane')],
      ['getIdempotency', (s) => s.idempotency.getIdempotency('key', T0)],
      ['reopenDeadLettered, instead of reporting what it found', (s) => s.idempotency.reopenDeadLettered('key', T0)],
    ];

    it.each(calls)('propagate unchanged from %s', async (_, call) => {
      const error = throttled();
      ddbMock.onAnyCommand().rejects(error);
      await expect(call(stores())).rejects.toBe(error);
    });
  });
});

describe('DynamoLedgerStore', () => {
  describe('saveLedger', () => {
    it('removes the settled oldest settlements in the same fenced write, highest index first, under a fresh save id', async () => {
      ddbMock.on(UpdateCommand).resolves({});
      await stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, 3);
      await stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, 3);
      const [first, second] = ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input);
      expect(first).toEqual({
        TableName: 'state',
        Key: { pk: 'lane#lane' },
        UpdateExpression:
          'SET #ledger = :ledger, #ledgerSave = :save REMOVE #settlements[2], #settlements[1], #settlements[0]',
        ConditionExpression:
          '#leaseToken = :token AND (attribute_not_exists(#ledgerSave) OR #ledgerSave <> :save) AND size(#settlements) >= :settled',
        ExpressionAttributeNames: {
          '#ledger': 'ledger',
          '#ledgerSave': 'ledgerSave',
          '#settlements': 'settlements',
          '#leaseToken': 'leaseToken',
        },
        ExpressionAttributeValues: {
          ':ledger': '{"v":1,"tiers":{}}',
          ':save': expect.any(String),
          ':token': 3,
          ':settled': 3,
        },
      });
      expect(second?.ExpressionAttributeValues?.[':save']).not.toEqual(first?.ExpressionAttributeValues?.[':save']);
    });

    it(`keeps the update expression far below DynamoDB's 4 KB limit when removing ${MAX_PENDING_SETTLEMENTS} settlements`, async () => {
      ddbMock.on(UpdateCommand).resolves({});
      await stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, MAX_PENDING_SETTLEMENTS);
      const input = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
      expect(input?.UpdateExpression?.match(/#settlements\[\d+\]/g)).toHaveLength(MAX_PENDING_SETTLEMENTS);
      expect(`${input?.UpdateExpression}${input?.ConditionExpression}`.length).toBeLessThan(2_048);
    });

    it.each([
      ['a lost lease when the token has moved on', { leaseToken: 4 }, 0, LeaseLostError],
      ['a lost lease when the item is gone', undefined, 0, LeaseLostError],
      ['a lost lease when the token has moved on, removing settlements', { leaseToken: 4 }, 2, LeaseLostError],
      [
        'StateConflictError when the token is still current (the list was short)',
        { leaseToken: 3 },
        2,
        StateConflictError,
      ],
    ])('reports a refused save as %s, from the item read back', async (_, item, settled, expected) => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({ Item: item });
      await expect(stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, settled)).rejects.toBeInstanceOf(
        expected,
      );
      expect(ddbMock.commandCalls(GetCommand)[0]?.args[0].input).toMatchObject({
        ConsistentRead: true,
        ProjectionExpression: '#leaseToken, #ledgerSave',
      });
    });

    it('succeeds when the write was refused because an earlier attempt of it landed (its answer lost)', async () => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).callsFake(() => {
        const save = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues?.[':save'];
        return { Item: { leaseToken: 3, ledgerSave: save } };
      });
      await expect(stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, 2)).resolves.toBeUndefined();
    });
  });

  describe('pendingSettlements', () => {
    it('returns an empty list when the lane has no item', async () => {
      ddbMock.on(GetCommand).resolves({});
      await expect(stores().ledger.pendingSettlements('lane')).resolves.toEqual([]);
      expect(ddbMock.commandCalls(GetCommand)[0]?.args[0].input).toMatchObject({
        ConsistentRead: true,
        ProjectionExpression: '#settlements',
      });
    });
  });
});

describe('DynamoIdempotencyStore', () => {
  describe('putIdempotencyIfAbsent', () => {
    it('claims again when the record that refused the claim is gone by the time it is read', async () => {
      ddbMock.on(UpdateCommand).rejectsOnce(conditionFailed()).resolves({});
      ddbMock.on(GetCommand).resolves({});
      await expect(stores().idempotency.putIdempotencyIfAbsent('key', CLAIM, T0)).resolves.toBeNull();
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(2);
    });

    it('gives up with StateConflictError after three refused claims whose records were gone when read', async () => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({});
      await expect(stores().idempotency.putIdempotencyIfAbsent('key', CLAIM, T0)).rejects.toBeInstanceOf(
        StateConflictError,
      );
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(3);
      expect(ddbMock.commandCalls(GetCommand)).toHaveLength(3);
    });
  });

  describe('reopenDeadLettered', () => {
    const deadLettered = { pk: 'idem#key', status: 'dead-lettered', dispatchId: 'd-1', at: T0, expiresAt: T0 + 30_000 };

    it('writes again when the record that refused the reopen reads back dead-lettered (dead-lettered again in between)', async () => {
      ddbMock.on(UpdateCommand).rejectsOnce(conditionFailed()).resolves({});
      ddbMock.on(GetCommand).resolves({ Item: deadLettered });
      await expect(stores().idempotency.reopenDeadLettered('key', T0)).resolves.toBe('reopened');
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(2);
    });

    it('gives up with StateConflictError after three refused reopens whose records read back dead-lettered', async () => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({ Item: deadLettered });
      await expect(stores().idempotency.reopenDeadLettered('key', T0)).rejects.toBeInstanceOf(StateConflictError);
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(3);
    });
  });
});
