import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { TABLE_KEY, TTL_ATTRIBUTE } from '../../lib/adapters/dynamodb/DynamoTable';
import { dynamoStores } from '../../lib/adapters/dynamodb/dynamoStores';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { Settlement } from '../../lib/domain/quota/ledger';
import { shardOf } from '../../lib/domain/quota/settlementShards';
import { ledgerOf } from '../../lib/adapters/dynamodb/storedLedger';
import { LeaseLostError, StateFormatError } from '../../lib/errors';
import type { Lease } from '../../lib/ports/LeaseStore';
import type { StateStores } from '../../lib/ports/StateStores';
import {
  describeStateStoresContract,
  type StateStoresFixture,
  type WriteRequest,
} from '../contract/stateStores.contract';
import { testDynamoClient, testDynamoEngine, uniqueName } from '../helpers/awsClients';
import { createStateTable, deleteStateTable } from '../../tools/local/stateTable';
import { addMiddleware } from '../../tools/local/sdkMiddleware';

const T0 = 1_700_000_000_000;
const TTL = 30_000;

/**
 * Arms `client` so that {@link StateStoresFixture.loseNextAnswer} works: the next request of the armed kind reaches the
 * emulator and takes effect, `between` runs, and then the answer is a 500 InternalServerError, which the SDK retries.
 */
function answerLosing(client: DynamoDBClient): NonNullable<StateStoresFixture['loseNextAnswer']> {
  let armed: { request: WriteRequest; between: () => Promise<void> } | undefined;
  addMiddleware(
    client,
    (next) => async (args) => {
      const target =
        (args.request as { headers?: Record<string, string> } | undefined)?.headers?.['x-amz-target'] ?? '';
      const lost = armed;
      if (lost === undefined || target !== `DynamoDB_20120810.${lost.request}`) return next(args);
      armed = undefined;
      await next(args);
      await lost.between();
      const body = JSON.stringify({
        __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError',
        message: 'Internal server error',
      });
      return {
        response: {
          statusCode: 500,
          headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'lost-answer' },
          body: Buffer.from(body),
        },
      };
    },
    { step: 'deserialize', name: 'answerLosing', priority: 'low' },
  );
  return (request, between = async () => {}) => {
    armed = { request, between };
  };
}

/** A fresh state table on the tests' DynamoDB (dynalite or DynamoDB Local), the stores on it, and a document client for raw items. */
async function stateTable(): Promise<
  StateStoresFixture & {
    client: DynamoDBClient;
    doc: DynamoDBDocumentClient;
    tableName: string;
    close: () => Promise<void>;
  }
> {
  const client = testDynamoClient();
  const tableName = uniqueName('state');
  await createStateTable(client, tableName);
  const doc = DynamoDBDocumentClient.from(client);
  const close = async (): Promise<void> => {
    await deleteStateTable(client, tableName);
    client.destroy();
  };
  return {
    client,
    doc,
    tableName,
    stores: dynamoStores({ client: doc, tableName }),
    close,
    loseNextAnswer: answerLosing(client),
  };
}

describeStateStoresContract(`dynamoStores on ${testDynamoEngine()}`, stateTable);

function settlement(at: number, id?: string): Settlement {
  return {
    reservation: { at, costs: { cost: 1 }, windows: { 'day:requests': '2026-11-23' } },
    actual: null,
    ...(id === undefined ? {} : { id }),
  };
}

function circuit(version: number, pausedUntil = 0): CircuitJSON {
  return { version, state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 }, pausedUntil };
}

describe(`dynamoStores on ${testDynamoEngine()}`, () => {
  let table: Awaited<ReturnType<typeof stateTable>> | undefined;
  let seq = 0;
  const unique = (label: string): string => `${label}-${++seq}`;

  const setup = (): Awaited<ReturnType<typeof stateTable>> => {
    if (table === undefined) throw new Error('the table is not ready');
    return table;
  };
  const stores = (): StateStores => setup().stores;
  const rawItem = async (pk: string): Promise<Record<string, unknown> | undefined> =>
    (
      await setup().doc.send(
        new GetCommand({ TableName: setup().tableName, Key: { [TABLE_KEY]: pk }, ConsistentRead: true }),
      )
    ).Item;
  const putRawItem = async (item: Record<string, unknown>): Promise<void> => {
    await setup().doc.send(new PutCommand({ TableName: setup().tableName, Item: item }));
  };
  const acquire = async (lane: string, owner = 'a', now = T0): Promise<Lease> => {
    const lease = await stores().lease.acquireLease(lane, owner, now, TTL);
    if (lease === null) throw new Error(`expected ${owner} to acquire ${lane}`);
    return lease;
  };

  const takenOver = async (lane: string): Promise<{ stale: Lease; current: Lease }> => ({
    stale: await acquire(lane, 'a', T0),
    current: await acquire(lane, 'b', T0 + TTL),
  });

  beforeAll(async () => {
    table = await stateTable();
  });

  afterAll(async () => {
    await table?.close();
  });

  describe('item layout', () => {
    it('keeps the lease, the ledger as JSON text and the folded ids in the lane item, the settlements in a shard', async () => {
      const lane = unique('layout');
      const lease = await acquire(lane);
      const ledger = { v: 1, tiers: { 'day:requests': { w: '2026-11-23', u: 3 } } } as const;
      await stores().ledger.addSettlements(lane, settlement(T0, 'd-1'));
      await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual([settlement(T0, 'd-1')]);
      await stores().ledger.saveLedger(lane, ledger, lease.token, ['d-1']);
      expect(await rawItem(`lane#${lane}`)).toEqual({
        [TABLE_KEY]: `lane#${lane}`,
        leaseOwner: 'a',
        leaseToken: lease.token,
        leaseExpiresAt: T0 + TTL,
        ledger: expect.any(Uint8Array),
        ledgerSave: expect.any(String),
        folded: { 'd-1': 0 },
        shards: 1,
      });
      // Its JSON text, deflated: a save of a ledger is billed by its compressed size.
      expect(ledgerOf((await rawItem(`lane#${lane}`))?.ledger, lane)).toEqual(ledger);
      expect(await rawItem(`settle#${lane}#0`)).toEqual({
        [TABLE_KEY]: `settle#${lane}#0`,
        pending: { 'd-1': settlement(T0, 'd-1') },
      });
      expect(await rawItem(`slots#${lane}`)).toBeUndefined();
    });

    it('removes what a save folded from its shard at the next read, leaving the map empty', async () => {
      const lane = unique('settled-layout');
      const lease = await acquire(lane);
      await stores().ledger.addSettlements(lane, settlement(T0, 'd-1'), settlement(T0 + 1, 'd-2'));
      await stores().ledger.pendingSettlements(lane, { first: true });
      await stores().ledger.saveLedger(lane, { v: 1, tiers: {} }, lease.token, ['d-1', 'd-2']);
      await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([]);
      expect(await rawItem(`settle#${lane}#0`)).toEqual({ [TABLE_KEY]: `settle#${lane}#0`, pending: {} });
    });

    it('keeps the call slots in an item of their own, as compact text, fenced by the lease token', async () => {
      const lane = unique('slots-layout');
      const { stale, current } = await takenOver(lane);
      const id = '0b7c5b2e-8a43-4e0f-9d3a-6f1e2d3c4b5a';
      const ledger = { v: 1, tiers: {}, slots: { a: [[id, T0 + 1_000]], h: [[2, T0 + 2_050]] } } as const;
      await stores().ledger.saveLedger(lane, ledger, current.token);
      expect(await rawItem(`slots#${lane}`)).toEqual({
        [TABLE_KEY]: `slots#${lane}`,
        slots: expect.stringMatching(/^2\|/),
        leaseToken: current.token,
      });
      expect(ledgerOf((await rawItem(`lane#${lane}`))?.ledger, lane)).toEqual({ v: 1, tiers: {} });
      await expect(stores().ledger.loadLedger(lane)).resolves.toEqual({
        v: 1,
        tiers: {},
        slots: { a: [[id, T0 + 1_000]], h: [[2, T0 + 2_100]] },
      });
      const staleSlots = { ...ledger, slots: { a: [] } };
      await expect(stores().ledger.saveLedger(lane, staleSlots, stale.token)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await stores().ledger.loadLedger(lane))?.slots?.a).toHaveLength(1);
    });

    it('spreads settlements over the shards of the lane, and reads every shard a save has recorded', async () => {
      const lane = unique('shards');
      const lease = await acquire(lane);
      const wide = dynamoStores({ client: setup().doc, tableName: setup().tableName }, { settlementShards: 8 });
      const narrow = dynamoStores({ client: setup().doc, tableName: setup().tableName }, { settlementShards: 2 });
      const added = Array.from({ length: 20 }, (_, i) => settlement(T0 + i, `d-${i}`));
      for (const s of added) await wide.ledger.addSettlements(lane, s);
      const used = new Set(added.map(({ id }) => shardOf(id as string, 8)));
      expect(used.size).toBeGreaterThan(2);
      for (const shard of used) expect(await rawItem(`settle#${lane}#${shard}`)).toBeDefined();
      await expect(wide.ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(added);
      await wide.ledger.saveLedger(lane, { v: 1, tiers: {} }, lease.token, ['d-0']);
      // A store of fewer shards (a deploy that lowered the count) still reads those the lane item records.
      const more = settlement(T0 + 30, 'd-30');
      await wide.ledger.addSettlements(lane, more);
      await expect(narrow.ledger.pendingSettlements(lane, { first: true })).resolves.toEqual([...added.slice(1), more]);
    });

    it('keeps the token counter in the lane item when the lease is released', async () => {
      const lane = unique('release');
      const lease = await acquire(lane);
      await stores().lease.releaseLease(lease);
      expect(await rawItem(`lane#${lane}`)).toEqual({ [TABLE_KEY]: `lane#${lane}`, leaseToken: lease.token });
      await expect(acquire(lane, 'b', T0 + 1)).resolves.toMatchObject({ token: lease.token + 1 });
    });

    it('stores the circuit beside its version, and the ids of the writes of its last 16 versions', async () => {
      const lane = unique('circuit-layout');
      await stores().circuit.saveCircuit(lane, circuit(1, T0));
      expect(await rawItem(`circuit#${lane}`)).toEqual({
        [TABLE_KEY]: `circuit#${lane}`,
        ...circuit(1, T0),
        write1: expect.any(String),
      });
      for (let version = 2; version <= 17; version++) await stores().circuit.saveCircuit(lane, circuit(version, T0));
      const writes = Object.keys((await rawItem(`circuit#${lane}`)) ?? {}).filter((name) => name.startsWith('write'));
      expect(writes.sort()).toEqual(Array.from({ length: 16 }, (_, i) => `write${i + 2}`).sort());
    });

    it("stores an operator's hold and the transitions as attributes of their own, and removes them with the next version that has none", async () => {
      const lane = unique('circuit-operated-layout');
      const hold = { since: T0, by: 'ops' };
      const transitions = [{ at: T0, from: 'closed', to: 'closed', reason: 'paused by operator (ops)' }] as const;
      await stores().circuit.saveCircuit(lane, { ...circuit(1, T0), hold, transitions });
      expect(await rawItem(`circuit#${lane}`)).toEqual({
        [TABLE_KEY]: `circuit#${lane}`,
        ...circuit(1, T0),
        hold,
        transitions,
        write1: expect.any(String),
      });
      await stores().circuit.saveCircuit(lane, circuit(2, T0));
      expect(await rawItem(`circuit#${lane}`)).toEqual({
        [TABLE_KEY]: `circuit#${lane}`,
        ...circuit(2, T0),
        write1: expect.any(String),
        write2: expect.any(String),
      });
    });

    it('gives idempotency records a ttl in epoch seconds, rounded up from expiresAt', async () => {
      const [claimed, put] = [unique('ttl-claim'), unique('ttl-put')];
      await stores().idempotency.putIdempotencyIfAbsent(
        claimed,
        { status: 'in-progress', dispatchId: 'd-1', expiresAt: T0 + 1 },
        T0,
      );
      await stores().idempotency.putIdempotency(put, {
        status: 'succeeded',
        dispatchId: 'd-1',
        at: T0,
        expiresAt: T0 + 1_000,
      });
      expect(await rawItem(`idem#${claimed}`)).toEqual({
        [TABLE_KEY]: `idem#${claimed}`,
        status: 'in-progress',
        dispatchId: 'd-1',
        expiresAt: T0 + 1,
        [TTL_ATTRIBUTE]: T0 / 1_000 + 1,
        claim: expect.any(String),
        spent: new Set(['d-1']),
      });
      expect(await rawItem(`idem#${put}`)).toMatchObject({ expiresAt: T0 + 1_000, [TTL_ATTRIBUTE]: T0 / 1_000 + 1 });
    });
    it("keeps each lane's keys apart from every other lane's, and the default lane's items as a one-lane deployment wrote them", async () => {
      const key = unique('shared-key');
      const at = (namespace?: string) =>
        dynamoStores(
          { client: setup().doc, tableName: setup().tableName },
          namespace === undefined ? {} : { idempotencyNamespace: namespace },
        ).idempotency;
      const record = (dispatchId: string) => ({ status: 'in-progress' as const, dispatchId, expiresAt: T0 + TTL });
      await at().putIdempotencyIfAbsent(key, record('d-default'), T0);
      await at('gpt-4o').putIdempotencyIfAbsent(key, record('d-gpt'), T0);
      await at('claude').putIdempotencyIfAbsent(key, record('d-claude'), T0);

      expect(await at('gpt-4o').getIdempotency(key, T0)).toMatchObject({ dispatchId: 'd-gpt' });
      expect(await at('claude').getIdempotency(key, T0)).toMatchObject({ dispatchId: 'd-claude' });
      expect(await rawItem(`idem#${key}`)).toMatchObject({ dispatchId: 'd-default' });
    });
    it("keeps a success record's owed settlement with its pools' windows, so that it is recorded in each pool later", async () => {
      const key = unique('owed-pools');
      const owed: Settlement = {
        reservation: { at: T0, costs: { cost: 3 }, windows: {}, pools: { org: { 'day:cost': '2026-01-05' } } },
        actual: { cost: 7 },
        id: 'd-1',
      };
      await stores().idempotency.putIdempotency(key, {
        status: 'succeeded',
        dispatchId: 'd-1',
        at: T0,
        expiresAt: T0 + TTL,
        settlement: owed,
      });
      expect(await stores().idempotency.getIdempotency(key, T0)).toMatchObject({
        status: 'succeeded',
        settlement: owed,
      });
    });
    it('reopens a dead-lettered item by its status alone: the reason goes, the dispatch, ttl and spent marks stay, and the reopen id is kept', async () => {
      const key = unique('reopen-layout');
      await stores().idempotency.putIdempotencyIfAbsent(
        key,
        { status: 'in-progress', dispatchId: 'd-1', expiresAt: T0 + TTL },
        T0,
      );
      await stores().idempotency.putIdempotency(key, {
        status: 'dead-lettered',
        dispatchId: 'd-1',
        at: T0 + 1,
        expiresAt: T0 + TTL,
        reason: 'HTTP 400',
      });
      await stores().idempotency.reopenDeadLettered(key, T0 + 2);
      const reopened = {
        [TABLE_KEY]: `idem#${key}`,
        status: 'failed',
        dispatchId: 'd-1',
        at: T0 + 1,
        expiresAt: T0 + TTL,
        [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000,
        spent: new Set(['d-1']),
      };
      expect(await rawItem(`idem#${key}`)).toEqual({ ...reopened, reopen: expect.any(String) });
      await stores().idempotency.putIdempotencyIfAbsent(
        key,
        { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL },
        T0 + 3,
      );
      expect(await rawItem(`idem#${key}`)).toMatchObject({
        status: 'in-progress',
        dispatchId: 'd-2',
        spent: new Set(['d-1', 'd-2']),
        reopen: expect.any(String),
      });
    });
  });

  describe('items written before saves, circuit writes and claims carried ids', () => {
    it('saves over a lane item without ledgerSave, and removes its settlements', async () => {
      const lane = unique('old-lane');
      const lease = await acquire(lane);
      await putRawItem({
        ...(await rawItem(`lane#${lane}`)),
        ledger: '{"v":1,"tiers":{}}',
        settlements: [settlement(T0)],
      });
      const [read] = await stores().ledger.pendingSettlements(lane, { first: true });
      expect(read).toEqual({ ...settlement(T0), id: expect.any(String) });
      await stores().ledger.saveLedger(lane, { v: 1, tiers: {} }, lease.token, [read?.id as string]);
      await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([]);
      await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual([]);
    });

    it('migrates a lane item with slots in its ledger text and a list of settlements: read first, removed and moved by the next save', async () => {
      const lane = unique('old-layout');
      const lease = await acquire(lane);
      const slots = { a: [['d-9', T0 + 500]] as [string, number][] };
      await putRawItem({
        ...(await rawItem(`lane#${lane}`)),
        ledger: JSON.stringify({ v: 1, tiers: {}, slots }),
        settlements: [settlement(T0 + 5, 'd-1'), settlement(T0 + 6)],
      });
      await stores().ledger.addSettlements(lane, settlement(T0, 'd-2'));
      await expect(stores().ledger.loadLedger(lane)).resolves.toEqual({ v: 1, tiers: {}, slots });
      const pending = await stores().ledger.pendingSettlements(lane, { first: true });
      expect(pending).toEqual([
        settlement(T0 + 5, 'd-1'),
        { ...settlement(T0 + 6), id: expect.any(String) },
        settlement(T0, 'd-2'),
      ]);
      // An old worker appends to the list after the read: the save removes only what was read.
      await setup().doc.send(
        new UpdateCommand({
          TableName: setup().tableName,
          Key: { [TABLE_KEY]: `lane#${lane}` },
          UpdateExpression: 'SET settlements = list_append(settlements, :added)',
          ExpressionAttributeValues: { ':added': [settlement(T0 + 7, 'd-3')] },
        }),
      );
      const ids = pending.map(({ id }) => id as string);
      await stores().ledger.saveLedger(lane, { v: 1, tiers: {}, slots }, lease.token, ids);
      await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0 + 7, 'd-3')]);
      await stores().ledger.saveLedger(lane, { v: 1, tiers: {}, slots }, lease.token, ['d-3']);
      const migrated = await rawItem(`lane#${lane}`);
      expect(migrated).toMatchObject({ settlements: [] });
      expect(ledgerOf(migrated?.ledger, lane)).toEqual({ v: 1, tiers: {} });
      await expect(stores().ledger.loadLedger(lane)).resolves.toEqual({ v: 1, tiers: {}, slots });
      await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual([]);
    });

    it('loads a circuit item without write ids and writes its next version', async () => {
      const lane = unique('old-circuit');
      await putRawItem({ [TABLE_KEY]: `circuit#${lane}`, ...circuit(3, T0) });
      await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(3, T0));
      await expect(stores().circuit.saveCircuit(lane, circuit(4, T0 + 1))).resolves.toBe(true);
      await expect(stores().circuit.saveCircuit(lane, circuit(4, T0 + 2))).resolves.toBe(false);
    });

    it('keeps a claim out with a record that has no claim id', async () => {
      const key = unique('old-claim');
      const record = { status: 'in-progress', dispatchId: 'old', expiresAt: T0 + TTL } as const;
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, ...record, [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
      await expect(
        stores().idempotency.putIdempotencyIfAbsent(key, { ...record, dispatchId: 'new' }, T0),
      ).resolves.toEqual(record);
    });

    it('lets a dispatch claim over a record written before dispatches were marked, and marks it there: it claims once', async () => {
      const key = unique('old-failed');
      const record = { status: 'failed', dispatchId: 'old', at: T0, expiresAt: T0 + TTL } as const;
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, ...record, [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
      const claim = { status: 'in-progress', dispatchId: 'new', expiresAt: T0 + TTL } as const;
      await expect(stores().idempotency.putIdempotencyIfAbsent(key, claim, T0 + 1)).resolves.toBeNull();
      expect(await rawItem(`idem#${key}`)).toMatchObject({ dispatchId: 'new', spent: new Set(['new']) });
      await stores().idempotency.putIdempotency(key, { ...record, dispatchId: 'next', at: T0 + 2 });
      await expect(stores().idempotency.putIdempotencyIfAbsent(key, claim, T0 + 3)).resolves.toBe('spent');
    });

    it('counts no attempt on a record written before attempts were counted, and counts the next failed call on it', async () => {
      const key = unique('old-attempts');
      const record = { status: 'failed', dispatchId: 'old', at: T0, expiresAt: T0 + TTL } as const;
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, ...record, [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
      await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(0);
      await stores().idempotency.putIdempotency(key, { ...record, dispatchId: 'new' }, { spentAttempt: true });
      expect(await rawItem(`idem#${key}`)).toMatchObject({ dispatchId: 'new', attempts: new Set(['new']) });
      await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(1);
    });

    it('marks a refund on a record written before dispatches were marked, once, and keeps the record', async () => {
      const key = unique('old-refund');
      const record = { status: 'succeeded', dispatchId: 'old', at: T0, expiresAt: T0 + TTL } as const;
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, ...record, [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
      await expect(stores().idempotency.claimRefund(key, 'new', T0 + 2 * TTL)).resolves.toBe(true);
      await expect(stores().idempotency.claimRefund(key, 'new', T0 + 2 * TTL)).resolves.toBe(false);
      await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(record);
      expect(await rawItem(`idem#${key}`)).toMatchObject({ [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
    });
  });

  describe('idempotency records DynamoDB has not deleted yet', () => {
    it('reports an expired record as absent and lets a claim overwrite it', async () => {
      const key = unique('expired');
      // As TTL leaves it: past its ttl, still in the table (DynamoDB deletes late; the test table has no TTL).
      await putRawItem({
        [TABLE_KEY]: `idem#${key}`,
        status: 'in-progress',
        dispatchId: 'old',
        expiresAt: T0,
        [TTL_ATTRIBUTE]: T0 / 1_000,
      });
      await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toBeUndefined();
      const claim = { status: 'in-progress', dispatchId: 'new', expiresAt: T0 + TTL } as const;
      await expect(stores().idempotency.putIdempotencyIfAbsent(key, claim, T0)).resolves.toBeNull();
      await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(claim);
      expect(await rawItem(`idem#${key}`)).toMatchObject({ dispatchId: 'new', [TTL_ATTRIBUTE]: (T0 + TTL) / 1_000 });
    });
  });

  describe('key size', () => {
    it('claims the longest idempotency key parseJob accepts, in characters of 3 UTF-8 bytes', async () => {
      // DynamoDB limits a partition key to 2048 UTF-8 bytes (DynamoDB Local refuses 1025 × 'é'; dynalite counts
      // characters and takes it). parseJob accepts keys of up to 512 UTF-16 units: at most 3 bytes each, so
      // 'idem#' + 1536 bytes. A limit past 681 units ((2048 − 5) / 3) would let through keys that DynamoDB refuses.
      const key = '€'.repeat(512);
      const claim = { status: 'in-progress', dispatchId: 'd-1', expiresAt: T0 + TTL } as const;
      await expect(stores().idempotency.putIdempotencyIfAbsent(key, claim, T0)).resolves.toBeNull();
      await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(claim);
    });
  });

  describe('settlement appends the SDK would send twice', () => {
    it('fails an append whose answer was lost instead of writing it again', async () => {
      const lane = unique('lost-append');
      await stores().ledger.addSettlements(lane, settlement(T0 - 1, 'd-0'));
      setup().loseNextAnswer?.('UpdateItem');

      await expect(stores().ledger.addSettlements(lane, settlement(T0, 'd-1'))).rejects.toMatchObject({
        name: 'UncertainWriteError',
      });
      await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([
        settlement(T0 - 1, 'd-0'),
        settlement(T0, 'd-1'),
      ]);
    });

    it('sends an append again after a refusal that says it did not land (throttling), and records it once', async () => {
      const lane = unique('throttled-append');
      let throttled = false;
      addMiddleware(
        setup().client,
        (next) => async (args) => {
          const target = (args.request as { headers?: Record<string, string> }).headers?.['x-amz-target'] ?? '';
          if (throttled || !target.endsWith('.UpdateItem')) return next(args);
          throttled = true;
          const body = JSON.stringify({
            __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
            message: 'throttled',
          });
          return {
            response: {
              statusCode: 400,
              headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'throttled' },
              body: Buffer.from(body),
            },
          };
        },
        { step: 'deserialize', name: `throttleOnce-${lane}`, priority: 'low' },
      );

      await expect(stores().ledger.addSettlements(lane, settlement(T0, 'd-1'))).resolves.toBe(true);
      expect(throttled).toBe(true);
      await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0, 'd-1')]);
    });
  });

  describe('concurrent writers', () => {
    it('lets exactly one of ten concurrent writers of the same circuit version win', async () => {
      const lane = unique('circuit-race');
      await stores().circuit.saveCircuit(lane, circuit(1));
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => stores().circuit.saveCircuit(lane, circuit(2, T0 + i))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(2, T0 + results.indexOf(true)));
    });

    it('grants a free lane to exactly one of ten concurrent acquirers', async () => {
      const lane = unique('lease-race');
      const leases = await Promise.all(
        Array.from({ length: 10 }, (_, i) => stores().lease.acquireLease(lane, `owner-${i}`, T0, TTL)),
      );
      expect(leases.filter((lease) => lease !== null)).toHaveLength(1);
    });

    it('lets exactly one of ten concurrent claims of an idempotency key write, and the others see its record', async () => {
      const key = unique('claim-race');
      const claims = Array.from(
        { length: 10 },
        (_, i) => ({ status: 'in-progress', dispatchId: `d-${i}`, expiresAt: T0 + TTL }) as const,
      );
      const results = await Promise.all(
        claims.map((claim) => stores().idempotency.putIdempotencyIfAbsent(key, claim, T0)),
      );
      const winner = results.indexOf(null);
      expect(results.filter((result) => result === null)).toHaveLength(1);
      expect(results.filter((result) => result !== null)).toEqual(Array(9).fill(claims[winner]));
    });

    it('loses and repeats no settlement when reads and saves that remove them run between 50 concurrent adds', async () => {
      const lane = unique('settlement-race');
      const lease = await acquire(lane);
      const folded: Settlement[] = [];
      /** One flush as the orchestrator does it: read the pending settlements, then save them as folded. */
      const flush = async (): Promise<number> => {
        const pending = await stores().ledger.pendingSettlements(lane);
        await stores().ledger.saveLedger(
          lane,
          { v: 1, tiers: {} },
          lease.token,
          pending.map(({ id }) => id as string),
        );
        folded.push(...pending);
        return pending.length;
      };
      let adding = true;
      const adds = Promise.all(
        Array.from({ length: 50 }, (_, i) => stores().ledger.addSettlements(lane, settlement(T0 + i, `d-${i}`))),
      ).finally(() => (adding = false));
      while (adding) await flush();
      await adds;
      while ((await flush()) > 0);
      expect(folded.map((s) => s.reservation.at).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 50 }, (_, i) => T0 + i),
      );
    });
  });

  describe('corrupt items', () => {
    it.each([
      ['text that is not JSON', '{"v":1,'],
      ['JSON of no known ledger', '{"v":2,"tiers":{}}'],
      ['a map instead of JSON text', { v: 1, tiers: {} }],
    ])('refuses a ledger stored as %s', async (_, ledger) => {
      const lane = unique('corrupt-ledger');
      await putRawItem({ [TABLE_KEY]: `lane#${lane}`, ledger });
      await expect(stores().ledger.loadLedger(lane)).rejects.toBeInstanceOf(StateFormatError);
    });

    it('refuses a lease whose owner is not a string', async () => {
      const lane = unique('corrupt-lease');
      await putRawItem({ [TABLE_KEY]: `lane#${lane}`, leaseOwner: 7, leaseToken: 1, leaseExpiresAt: T0 });
      await expect(stores().lease.readLease(lane)).rejects.toBeInstanceOf(StateFormatError);
    });

    it('refuses a circuit whose state lacks its fields', async () => {
      const lane = unique('corrupt-circuit');
      await putRawItem({ [TABLE_KEY]: `circuit#${lane}`, version: 1, state: { status: 'closed' }, pausedUntil: 0 });
      await expect(stores().circuit.loadCircuit(lane)).rejects.toBeInstanceOf(StateFormatError);
    });

    it('refuses a limits override whose limit is no whole number, until an operator replaces it whatever it holds', async () => {
      const lane = unique('corrupt-override');
      const malformed = { v: 1, tiers: { 'minute:requests': '50' }, by: 'alice', at: T0 };
      await putRawItem({ [TABLE_KEY]: `lane#${lane}`, override: malformed, overrideAt: T0 });
      await expect(stores().limits.loadOverride(lane)).rejects.toThrow(/limit override of .*ops limits reset/);
      await expect(stores().limits.replaceOverride(lane, undefined, 'none')).resolves.toBe(false);

      await expect(stores().limits.replaceOverride(lane, undefined, 'any')).resolves.toBe(true);
      await expect(stores().limits.loadOverride(lane)).resolves.toBeUndefined();
    });

    it('refuses an idempotency record of an unknown status', async () => {
      const key = unique('corrupt-idem');
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, status: 'done', dispatchId: 'd-1', expiresAt: T0 + TTL });
      await expect(stores().idempotency.getIdempotency(key, T0)).rejects.toBeInstanceOf(StateFormatError);
      await expect(
        stores().idempotency.putIdempotencyIfAbsent(
          key,
          { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + TTL },
          T0,
        ),
      ).rejects.toBeInstanceOf(StateFormatError);
    });

    it('reads a success whose usage or result is malformed without them: they only inform, and it holds the key', async () => {
      const key = unique('odd-success');
      const success = { status: 'succeeded', dispatchId: 'd-1', at: T0, expiresAt: T0 + TTL };
      await putRawItem({ [TABLE_KEY]: `idem#${key}`, ...success, usage: { tokens: 'many' }, result: 7 });
      await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(success);

      const batch = unique('odd-batch');
      await putRawItem({
        [TABLE_KEY]: `batch#${batch}`,
        at: T0,
        indexes: new Set([0, 1]),
        'usage@0': { 0: 'many', 1: { tokens: 4 } },
        result: 'sqs results',
      });
      await expect(stores().idempotency.batchSuccess(batch, batch)).resolves.toEqual({
        at: T0,
        result: 'sqs results',
      });
      await expect(stores().idempotency.batchSuccess(batch, `${batch}.1`)).resolves.toEqual({
        at: T0,
        usage: { tokens: 4 },
        result: 'sqs results',
      });
    });

    it('refuses a pending settlement without a reservation, and leaves it in the table', async () => {
      const lane = unique('corrupt-settlement');
      await stores().ledger.addSettlements(lane, { actual: { cost: 1 }, id: 'd-1' } as unknown as Settlement);
      await expect(stores().ledger.pendingSettlements(lane)).rejects.toBeInstanceOf(StateFormatError);
      expect(await rawItem(`settle#${lane}#0`)).toMatchObject({ pending: { 'd-1': { actual: { cost: 1 } } } });
    });
  });
});
