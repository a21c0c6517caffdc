// Error paths dynalite cannot produce (throttling, DynamoDB's own response shapes, a key freed between a refused
// claim and its read), and the requests the stores send where their exact form matters. Everything else is tested against dynalite in test/integration/dynamoStateStore.test.ts.
import { ledgerOf } from '../../../../lib/adapters/dynamodb/storedLedger';
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
import { MAX_STORED_SETTLEMENTS } from '../../../../lib/ports/LedgerStore';
import type { Settlement } from '../../../../lib/domain/quota/ledger';
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
        'saveLedger folding settlements, instead of LeaseLostError',
        (s) => s.ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1']),
      ],
      [
        'saveLedger writing call slots, instead of LeaseLostError',
        (s) => s.ledger.saveLedger('lane', { v: 1, tiers: {}, slots: { a: [] } }, 3),
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
  const settlement = (id: string, actual: { cost: number } | null = { cost: 1 }): Settlement => ({
    reservation: { at: T0, costs: { cost: 1 }, windows: {} },
    actual,
    id,
  });
  const updates = () => ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input);
  const gets = () => ddbMock.commandCalls(GetCommand).map((call) => call.args[0].input);

  describe('saveLedger', () => {
    it('saves the ledger and the folded ids with their shards in one fenced write, under a fresh save id', async () => {
      ddbMock.on(UpdateCommand).resolves({});
      const store = stores().ledger;
      await store.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1']);
      await store.saveLedger('lane', { v: 1, tiers: {} }, 3);
      const [first, second] = updates();
      expect(first).toEqual({
        TableName: 'state',
        Key: { pk: 'lane#lane' },
        UpdateExpression: 'SET #ledger = :ledger, #ledgerSave = :save, #folded = :folded',
        ConditionExpression: '#leaseToken = :token AND (attribute_not_exists(#ledgerSave) OR #ledgerSave <> :save)',
        ExpressionAttributeNames: {
          '#ledger': 'ledger',
          '#ledgerSave': 'ledgerSave',
          '#folded': 'folded',
          '#leaseToken': 'leaseToken',
        },
        ExpressionAttributeValues: {
          ':ledger': expect.any(Uint8Array),
          ':save': expect.any(String),
          ':token': 3,
          ':folded': { 'd-1': 0 },
        },
        ReturnValues: 'ALL_NEW',
      });
      expect(ledgerOf(first?.ExpressionAttributeValues?.[':ledger'], 'lane')).toEqual({ v: 1, tiers: {} });
      expect(second?.ExpressionAttributeValues?.[':save']).not.toEqual(first?.ExpressionAttributeValues?.[':save']);
    });

    it('removes the settlements it read from a list of the previous version in the same write, highest index first', async () => {
      ddbMock.on(GetCommand).resolves({});
      ddbMock.on(GetCommand, { Key: { pk: 'lane#lane' } }).resolves({
        Item: { settlements: [settlement('d-1'), settlement('d-2'), settlement('d-3')] },
      });
      ddbMock.on(UpdateCommand).resolves({ Attributes: { settlements: [] } });
      const store = stores().ledger;
      await store.pendingSettlements('lane', { first: true });
      await store.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1', 'd-2', 'd-3']);
      expect(updates()[0]).toMatchObject({
        UpdateExpression:
          'SET #ledger = :ledger, #ledgerSave = :save, #folded = :folded, #shards = :shards REMOVE #settlements[2], #settlements[1], #settlements[0]',
        ConditionExpression:
          '#leaseToken = :token AND (attribute_not_exists(#ledgerSave) OR #ledgerSave <> :save) AND size(#settlements) >= :settled',
        ExpressionAttributeValues: expect.objectContaining({ ':folded': {}, ':settled': 3, ':shards': 1 }),
      });
    });

    it.each([
      ['a lost lease when the token has moved on', { leaseToken: 4 }, LeaseLostError],
      ['a lost lease when the item is gone', undefined, LeaseLostError],
      [
        'StateConflictError when the token is still current (the list was short)',
        { leaseToken: 3 },
        StateConflictError,
      ],
    ])('reports a refused save as %s, from the item read back', async (_, item, expected) => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({ Item: item });
      await expect(stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1'])).rejects.toBeInstanceOf(
        expected,
      );
      expect(gets()[0]).toMatchObject({ ConsistentRead: true, ProjectionExpression: '#leaseToken, #ledgerSave' });
    });

    it('succeeds when the write was refused because an earlier attempt of it landed (its answer lost)', async () => {
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).callsFake(() => {
        const save = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues?.[':save'];
        return { Item: { leaseToken: 3, ledgerSave: save } };
      });
      await expect(stores().ledger.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1'])).resolves.toBeUndefined();
    });

    it('writes the call slots first, fenced by the token, and only when they changed', async () => {
      ddbMock.on(UpdateCommand).resolves({});
      const store = stores().ledger;
      const ledger = { v: 1, tiers: {}, slots: { a: [['d-1', T0] as [string, number]] } } as const;
      await store.saveLedger('lane', ledger, 3);
      await store.saveLedger('lane', ledger, 3);
      await store.saveLedger('lane', { ...ledger, slots: { a: [] } }, 3);
      expect(updates().map(({ Key }) => Key?.pk)).toEqual([
        'slots#lane',
        'lane#lane',
        'lane#lane',
        'slots#lane',
        'lane#lane',
      ]);
      expect(updates()[0]).toMatchObject({
        UpdateExpression: 'SET #slots = :slots, #leaseToken = :token',
        ConditionExpression: 'attribute_not_exists(#leaseToken) OR #leaseToken <= :token',
        ExpressionAttributeValues: { ':slots': `2|${T0}|d-1:0|`, ':token': 3 },
      });
    });
  });

  describe('pendingSettlements', () => {
    it('reads the lane item and the shards strongly consistently at first, then the shards alone eventually consistently', async () => {
      ddbMock.on(GetCommand).resolves({});
      const store = stores().ledger;
      await expect(store.pendingSettlements('lane', { first: true })).resolves.toEqual([]);
      await expect(store.pendingSettlements('lane')).resolves.toEqual([]);
      expect(gets()).toEqual([
        expect.objectContaining({
          Key: { pk: 'lane#lane' },
          ConsistentRead: true,
          ProjectionExpression: '#folded, #shards, #settlements',
        }),
        expect.objectContaining({
          Key: { pk: 'settle#lane#0' },
          ConsistentRead: true,
          ProjectionExpression: '#pending',
        }),
        expect.objectContaining({ Key: { pk: 'settle#lane#0' }, ConsistentRead: false }),
      ]);
    });

    it('removes what the last save folded from its shard at the next read, once, and returns it no more', async () => {
      ddbMock.on(GetCommand).resolves({ Item: { pending: { 'd-1': settlement('d-1'), 'd-2': settlement('d-2') } } });
      ddbMock.on(UpdateCommand).resolves({ Attributes: {} });
      const store = stores().ledger;
      await store.pendingSettlements('lane', { first: true });
      await store.saveLedger('lane', { v: 1, tiers: {} }, 3, ['d-1']);
      await expect(store.pendingSettlements('lane')).resolves.toEqual([settlement('d-2')]);
      await expect(store.pendingSettlements('lane')).resolves.toEqual([settlement('d-2')]);
      expect(updates().slice(1)).toEqual([
        {
          TableName: 'state',
          Key: { pk: 'settle#lane#0' },
          UpdateExpression: 'REMOVE #pending.#f0',
          ConditionExpression: 'attribute_exists(#pending)',
          ExpressionAttributeNames: { '#pending': 'pending', '#f0': 'd-1' },
        },
      ]);
    });
  });

  describe('addSettlements', () => {
    it("writes a call's settlements into its shard's map by id, in one write", async () => {
      ddbMock.on(UpdateCommand).resolves({});
      await stores().ledger.addSettlements('lane', settlement('d-1'), settlement('d-2'));
      expect(updates()).toEqual([
        expect.objectContaining({
          Key: { pk: 'settle#lane#0' },
          UpdateExpression: 'SET #pending.#k0 = :v0, #pending.#k1 = :v1',
          ConditionExpression: 'attribute_exists(#pending)',
          ExpressionAttributeNames: { '#pending': 'pending', '#k0': 'd-1', '#k1': 'd-2' },
        }),
      ]);
    });

    it('makes the map of a shard that has none, and turns refunds away from a full one', async () => {
      ddbMock.on(UpdateCommand).rejectsOnce(conditionFailed()).resolves({});
      await expect(stores().ledger.addSettlements('lane', settlement('d-1'))).resolves.toBe(true);
      expect(updates()[1]).toMatchObject({
        UpdateExpression: 'SET #pending = :pending',
        ConditionExpression: 'attribute_not_exists(#pending)',
        ExpressionAttributeValues: { ':pending': { 'd-1': settlement('d-1') } },
      });
      ddbMock.reset();
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      await expect(stores().ledger.addSettlements('lane', settlement('d-2', null))).resolves.toBe(false);
      expect(updates()[0]).toMatchObject({
        ConditionExpression: 'attribute_exists(#pending) AND size(#pending) < :most',
        ExpressionAttributeValues: expect.objectContaining({ ':most': MAX_STORED_SETTLEMENTS }),
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
