import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TABLE_KEY } from '../../lib/adapters/dynamodb/DynamoTable';
import { dynamoStores } from '../../lib/adapters/dynamodb/dynamoStores';
import { parseServiceConfig } from '../../lib/config';
import { CallSlots } from '../../lib/domain/inflight/callSlots';
import { QuotaLedger, type Settlement } from '../../lib/domain/quota/ledger';
import { settlementShards } from '../../lib/domain/quota/settlementShards';
import { MAX_FOLDED_PER_SAVE, MAX_PENDING_SETTLEMENTS } from '../../lib/ports/LedgerStore';
import { FAKE_CREDENTIALS } from './clients';
import { startEmulators } from './emulators';
import { addMiddleware } from './sdkMiddleware';
import { createStateTable } from './stateTable';

/**
 * A lane whose API reports each call's tokens, with 1,000 calls in progress at most, played at 1,000 calls a second
 * (its requests tier leaves the ledger's bucketed windows a little room).
 */
const HOT = parseServiceConfig({
  lane: 'hot',
  quotas: [
    { limit: 1_100, per: 'second' },
    { limit: 10_000_000, per: 'minute', unit: 'input_tokens' },
    { limit: 5_000_000, per: 'minute', unit: 'output_tokens' },
  ],
  maxInFlight: 1_000,
});

/** Calls played each second. */
export const HOT_LANE_CALLS_PER_SECOND = 1_000;
/** The orchestrator reads reports every tick and saves every {@link FLUSH_TICKS} ticks (2 s). */
const TICK_MS = 250;
const FLUSH_TICKS = 8;
/** How long after its slot a call may be in progress (the arrival margin plus the worker's timeout). */
const HOLD_MS = 30_000;

/** What the items of a hot lane took, by DynamoDB's billing rule (one write unit per KB of the larger image). */
export interface HotLaneLoad {
  /** Seconds played. */
  readonly seconds: number;
  /** The largest write, in KB (its write units), and the item it went to. */
  readonly largestKb: number;
  readonly largestItem: string;
  /** The most write units one item took in one played second, and that item. */
  readonly peakUnitsPerSecond: number;
  readonly peakItem: string;
  /** Calls that found no free call slot: the reports were folded too slowly to free them. */
  readonly starved: number;
}

/** The write units each item took in each played second, and the largest single write (the larger of its images). */
interface ItemMeter {
  readonly perSecond: Map<string, { item: string; units: number }>;
  largestKb: number;
  largestItem: string;
}

/** Counts every write's consumed capacity against its item and the played second `second()`. */
function meter(client: DynamoDBClient, second: () => number): ItemMeter {
  const load: ItemMeter = { perSecond: new Map(), largestKb: 0, largestItem: '' };
  addMiddleware(
    client,
    (next, context) => async (args) => {
      if (context.commandName !== 'UpdateItemCommand') return next(args);
      const input = { ...(args.input as object), ReturnConsumedCapacity: 'TOTAL' };
      const answer = await next({ ...args, input });
      const pk = (input as { Key?: Record<string, unknown> }).Key?.[TABLE_KEY];
      const item = String(typeof pk === 'object' && pk !== null ? (pk as { S?: unknown }).S : pk);
      const units =
        (answer.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ?? 0;
      const key = `${item} @${second()}`;
      const tally = load.perSecond.get(key) ?? { item, units: 0 };
      load.perSecond.set(key, { item, units: tally.units + units });
      if (units > load.largestKb) Object.assign(load, { largestKb: units, largestItem: item });
      return answer;
    },
    { step: 'initialize', name: 'itemLoad' },
  );
  return load;
}

/**
 * Plays a lane at 1,000 calls a second for `seconds`, usage reported (every call owes a settlement) and `maxInFlight`
 * 1,000, on the real DynamoDB adapters against dynalite (which bills writes as DynamoDB does), on a played clock: each
 * call's worker records its settlement (workers and orchestrator with the shard count of the lane's configuration);
 * the orchestrator reads the reports every 250 ms, folds them into its ledger and call slots as `LedgerSync` does (the
 * ids read since the last save are named in the next), and saves every 2 s, with up to ten saves while a read comes
 * back full. It measures the state layout at a rate the local stack cannot reach on a small machine.
 * @throws Error when a write fails (the emulator refused an item, e.g. one past 400 KB).
 */
export async function replayHotLane(seconds: number): Promise<HotLaneLoad> {
  const emulators = await startEmulators();
  // The SDK's default timeouts: the emulator is slower than DynamoDB, and the replay is about sizes, not time.
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: FAKE_CREDENTIALS,
    endpoint: emulators.dynamodbEndpoint,
  });
  try {
    await createStateTable(client, 'state');
    let played = 0;
    const load = meter(client, () => Math.floor(played / 1_000));
    const starved = await playHotLane(DynamoDBDocumentClient.from(client), seconds, (now) => (played = now));
    const peak = [...load.perSecond.values()].reduce((most, entry) => (entry.units > most.units ? entry : most), {
      item: '',
      units: 0,
    });
    return {
      seconds,
      largestKb: load.largestKb,
      largestItem: load.largestItem,
      peakUnitsPerSecond: peak.units,
      peakItem: peak.item,
      starved,
    };
  } finally {
    client.destroy();
    await emulators.stop();
  }
}

/**
 * Plays the lane on the table of `doc` for `seconds`, telling `at` the played instant before each step.
 * @returns how many calls found no free call slot: the orchestrator would not have sent them.
 */
async function playHotLane(doc: DynamoDBDocumentClient, seconds: number, at: (now: number) => void): Promise<number> {
  let starved = 0;
  const shards = { settlementShards: settlementShards(HOT.quotas) };
  const orchestrator = dynamoStores({ client: doc, tableName: 'state' }, shards);
  const worker = dynamoStores({ client: doc, tableName: 'state' }, shards).ledger;
  const start = 1_767_571_200_000;
  const lease = await orchestrator.lease.acquireLease(HOT.lane, 'run', start, 60_000);
  if (lease === null) throw new Error('the lease is free');
  const ledger = new QuotaLedger(HOT.quotas);
  const slots = new CallSlots(1_000, HOLD_MS);
  const unsaved = new Set<string>();
  let first = true;
  // As LedgerSync reads: nothing while the ids read since the last save leave no room for a full read.
  const read = async () => {
    if (unsaved.size > MAX_FOLDED_PER_SAVE - MAX_PENDING_SETTLEMENTS) return 0;
    const pending = await orchestrator.ledger.pendingSettlements(HOT.lane, { first, skip: unsaved });
    first = false;
    for (const settlement of pending.filter(({ id }) => !unsaved.has(id as string))) {
      unsaved.add(settlement.id as string);
      ledger.settle(settlement);
      slots.release(settlement.id as string);
    }
    return pending.length;
  };
  // As LedgerSync flushes: read and save, again while a read comes back full, ten saves at most.
  const flush = async (now: number) => {
    for (let saves = 0; saves < 10; saves++) {
      const count = await read();
      const folded = [...unsaved];
      const saved = { ...ledger.snapshot(), slots: slots.toJSON({ count: 500, until: now + 4_000 }) };
      await orchestrator.ledger.saveLedger(HOT.lane, saved, lease.token, folded);
      for (const id of folded) unsaved.delete(id);
      if (count < MAX_PENDING_SETTLEMENTS) return;
    }
  };
  const callsPerTick = (HOT_LANE_CALLS_PER_SECOND * TICK_MS) / 1_000;
  for (let tick = 0; tick < (seconds * 1_000) / TICK_MS; tick++) {
    const now = start + tick * TICK_MS;
    at(now - start);
    const settlements: Settlement[] = Array.from({ length: callsPerTick }, (_, i) => {
      const id = randomUUID();
      if (slots.free(now) > 0) slots.take(id, now + i, now);
      else starved++;
      const reservation = ledger.reserve(now + i, { input_tokens: 1_200, output_tokens: 1_024 });
      return { reservation, actual: { input_tokens: 1_180, output_tokens: 300 + i }, id };
    });
    // Fifty workers writing at once: dynalite on a shared machine answers more slowly than DynamoDB.
    for (let i = 0; i < settlements.length; i += 50)
      await Promise.all(settlements.slice(i, i + 50).map((settlement) => worker.addSettlements(HOT.lane, settlement)));
    // Reports are read every tick (slots bind); a read without room for a full one flushes instead, as on schedule.
    const noRoom = unsaved.size > MAX_FOLDED_PER_SAVE - MAX_PENDING_SETTLEMENTS;
    if (tick % FLUSH_TICKS === FLUSH_TICKS - 1 || noRoom) await flush(now);
    else await read();
  }
  return starved;
}
