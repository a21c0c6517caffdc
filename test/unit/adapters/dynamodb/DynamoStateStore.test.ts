// Error paths dynalite cannot produce (throttling, DynamoDB's own response shapes, a key freed between a refused
// claim and its read). Everything else is tested against dynalite in test/integration/dynamoStateStore.test.ts.
import { ConditionalCheckFailedException, DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoStateStore } from '../../../../lib/adapters/dynamodb/DynamoStateStore';
import { StateConflictError } from '../../../../lib/errors';
import type { IdempotencyRecord, Lease, StateStore } from '../../../../lib/ports/StateStore';

const T0 = 1_700_000_000_000;
const LEASE: Lease = { lane: 'lane', owner: 'a', token: 3, expiresAt: T0 + 30_000 };
const CLAIM: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-1', expiresAt: T0 + 30_000 };

const ddbMock = mockClient(DynamoDBDocumentClient);

function store(): DynamoStateStore {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } }));
  return new DynamoStateStore({ client, tableName: 'state' });
}

function throttled(): ProvisionedThroughputExceededException {
  return new ProvisionedThroughputExceededException({ message: 'Rate of requests exceeds the allowed throughput', $metadata: {} });
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

describe('DynamoStateStore', () => {
  describe('errors other than a failed condition', () => {
    const calls: Array<[string, (s: StateStore) => Promise<unknown>]> = [
      ['acquireLease, instead of reporting the lease as held', (s) => s.acquireLease('lane', 'a', T0, 30_000)],
      ['renewLease, instead of LeaseLostError', (s) => s.renewLease(LEASE, T0, 30_000)],
      ['releaseLease, instead of ignoring them', (s) => s.releaseLease(LEASE)],
      ['saveLedger, instead of LeaseLostError', (s) => s.saveLedger('lane', { v: 1, tiers: {} }, 3)],
      ['saveCircuit, instead of reporting a lost race', (s) => s.saveCircuit('lane', { version: 2, state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 }, pausedUntil: 0 })],
      ['addSettlement', (s) => s.addSettlement('lane', { reservation: { at: T0, cost: 1, windows: {} }, actualCost: null })],
      ['takeSettlements, instead of LeaseLostError', (s) => s.takeSettlements('lane', 3)],
      ['putIdempotencyIfAbsent, instead of reporting a record', (s) => s.putIdempotencyIfAbsent('key', CLAIM, T0)],
      ['putIdempotency', (s) => s.putIdempotency('key', CLAIM)],
      ['deleteIdempotency', (s) => s.deleteIdempotency('key')],
      ['loadLedger', (s) => s.loadLedger('lane')],
      ['loadCircuit', (s) => s.loadCircuit('lane')],
      ['getIdempotency', (s) => s.getIdempotency('key', T0)],
    ];

    it.each(calls)('propagate unchanged from %s', async (_, call) => {
      const error = throttled();
      ddbMock.onAnyCommand().rejects(error);
      await expect(call(store())).rejects.toBe(error);
    });
  });

  describe('takeSettlements', () => {
    it('takes an empty list when DynamoDB returns no attributes (nothing was pending)', async () => {
      ddbMock.on(UpdateCommand).resolves({});
      await expect(store().takeSettlements('lane', 3)).resolves.toEqual([]);
    });
  });

  describe('putIdempotencyIfAbsent', () => {
    it('claims again when the record that refused the claim is gone by the time it is read', async () => {
      ddbMock.on(PutCommand).rejectsOnce(conditionFailed()).resolves({});
      ddbMock.on(GetCommand).resolves({});
      await expect(store().putIdempotencyIfAbsent('key', CLAIM, T0)).resolves.toBeNull();
      expect(ddbMock.commandCalls(PutCommand)).toHaveLength(2);
    });

    it('gives up with StateConflictError after three refused claims whose records were gone when read', async () => {
      ddbMock.on(PutCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({});
      await expect(store().putIdempotencyIfAbsent('key', CLAIM, T0)).rejects.toBeInstanceOf(StateConflictError);
      expect(ddbMock.commandCalls(PutCommand)).toHaveLength(3);
      expect(ddbMock.commandCalls(GetCommand)).toHaveLength(3);
    });
  });
});
