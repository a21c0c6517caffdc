import { TABLE_KEY } from '../../lib/adapters/dynamodb/DynamoTable';
import type { InitializeHandlerOptions, InitializeMiddleware, MetadataBearer } from '@smithy/types';

/** Count, summed duration and DynamoDB capacity units of one kind of request. */
export interface RequestTally {
  readonly count: number;
  readonly ms: number;
  /** DynamoDB capacity units consumed (read units for reads, write units for writes); 0 for other services. */
  readonly units: number;
}

/** An SDK v3 client, as far as the meter needs it. */
interface MeteredClient {
  readonly middlewareStack: {
    add(middleware: InitializeMiddleware<object, MetadataBearer>, options: InitializeHandlerOptions): void;
  };
}

/** DynamoDB's answer, as far as its consumed capacity goes: one entry, or one per table (batches, transactions). */
interface CapacityOutput {
  readonly ConsumedCapacity?: { readonly CapacityUnits?: number } | readonly { readonly CapacityUnits?: number }[];
}

/** The capacity units a DynamoDB answer reports. */
function consumedUnits(output: unknown): number {
  const consumed = (output as CapacityOutput | undefined)?.ConsumedCapacity;
  const entries =
    consumed === undefined
      ? []
      : Array.isArray(consumed)
        ? consumed
        : [consumed as { readonly CapacityUnits?: number }];
  return entries.reduce((sum, entry) => sum + (entry.CapacityUnits ?? 0), 0);
}

/**
 * Counts and times the requests of the SDK clients it is attached to, per `service.Command` (e.g.
 * `sqs.ReceiveMessageCommand`). It sits at the `initialize` step, so one command counts once, the SDK's own retries
 * inside it, and its time is what the caller waited. On a `dynamodb` client it also asks each request for its
 * consumed capacity (`ReturnConsumedCapacity: TOTAL`) and sums it; a request that failed (a condition that did not
 * hold) counts one unit, the least DynamoDB charges for it.
 */
export class RequestMeter {
  private readonly tallies = new Map<string, { count: number; ms: number; units: number }>();
  /**
   * Every write to an item, with the item's key, when it was sent (the meter's clock) and the write units it
   * consumed: one per KB of the item, the larger of before and after.
   */
  readonly itemWrites: ItemWrite[] = [];

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Adds the meter to a client and returns the client. */
  attach<C extends MeteredClient>(client: C, service: string): C {
    const capacity = service === 'dynamodb';
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const startedAt = this.now();
        let units = capacity ? 1 : 0;
        try {
          const input = capacity ? { ...(args.input as object), ReturnConsumedCapacity: 'TOTAL' } : args.input;
          const answer = await next({ ...args, input });
          if (capacity) units = consumedUnits(answer.output);
          return answer;
        } finally {
          const key = `${service}.${String(context.commandName)}`;
          const item = capacity ? writtenKey(key, args.input) : undefined;
          if (item !== undefined) this.itemWrites.push({ key: item, at: startedAt, units });
          const tally = this.tallies.get(key) ?? { count: 0, ms: 0, units: 0 };
          tally.count++;
          tally.ms += this.now() - startedAt;
          tally.units += units;
          this.tallies.set(key, tally);
        }
      },
      { step: 'initialize', name: 'requestMeter' },
    );
    return client;
  }

  /** The tallies so far, by `service.Command`. */
  snapshot(): Readonly<Record<string, RequestTally>> {
    return Object.fromEntries([...this.tallies].map(([key, tally]) => [key, { ...tally }]));
  }
}

/** One write to an item, as {@link RequestMeter.itemWrites} keeps it. */
export interface ItemWrite {
  /** The item's key (`lane#default`, `idem#…`). */
  readonly key: string;
  readonly at: number;
  readonly units: number;
}

/** The key of the one item a write request (`service.Command` `command`) with `input` writes; none for a read. */
function writtenKey(command: string, input: unknown): string | undefined {
  if (DYNAMODB_READ.test(command)) return undefined;
  const { Key, Item } = (input ?? {}) as {
    readonly Key?: Record<string, unknown>;
    readonly Item?: Record<string, unknown>;
  };
  // The document client gives the key as it is, the bare client as `{ S }`.
  const pk = (Key ?? Item)?.[TABLE_KEY];
  const text = typeof pk === 'object' && pk !== null ? (pk as { readonly S?: unknown }).S : pk;
  return typeof text === 'string' ? text : undefined;
}

/**
 * The write load of the busiest items, against DynamoDB's 400 KB per item and its billing of one write unit per KB
 * of the item written: the largest write of any item, in KB (write units), and the most write units one item took in
 * any whole second, each with the item's key (`''` when nothing was written).
 */
export interface ItemLoad {
  readonly largestWriteKb: number;
  readonly largestItem: string;
  readonly peakWriteUnitsPerSecond: number;
  readonly peakItem: string;
}

/** {@link ItemLoad} of `writes` (from any meters sharing one clock, in ms). */
export function itemLoad(writes: readonly ItemWrite[]): ItemLoad {
  const perSecond = new Map<string, number>();
  let largest: ItemWrite | undefined;
  for (const write of writes) {
    const slot = `${Math.floor(write.at / 1000)} ${write.key}`;
    perSecond.set(slot, (perSecond.get(slot) ?? 0) + write.units);
    if (largest === undefined || write.units > largest.units) largest = write;
  }
  let peak = { slot: '', units: 0 };
  for (const [slot, units] of perSecond) if (units > peak.units) peak = { slot, units };
  return {
    largestWriteKb: largest?.units ?? 0,
    largestItem: largest?.key ?? '',
    peakWriteUnitsPerSecond: peak.units,
    peakItem: peak.slot.slice(peak.slot.indexOf(' ') + 1),
  };
}

/** Whether a write is to a lane item (`lane#<lane>`: the lease, the ledger and the pending settlements). */
export function isLaneItem(write: ItemWrite): boolean {
  return write.key.startsWith('lane#');
}

/** How many of the tallied requests went to one service (`dynamodb`, `sqs`, `lambda`). */
export function countRequests(tallies: Readonly<Record<string, RequestTally>>, service: string): number {
  return Object.entries(tallies)
    .filter(([key]) => key.startsWith(`${service}.`))
    .reduce((sum, [, tally]) => sum + tally.count, 0);
}

/** DynamoDB commands that read: the rest write. */
const DYNAMODB_READ = /^dynamodb\.(Get|BatchGet|Query|Scan|TransactGet)/;

/** The DynamoDB capacity units the tallied requests consumed, read and write units apart. */
export function dynamodbUnits(tallies: Readonly<Record<string, RequestTally>>): {
  readonly read: number;
  readonly write: number;
} {
  const units = { read: 0, write: 0 };
  for (const [key, tally] of Object.entries(tallies)) {
    if (!key.startsWith('dynamodb.')) continue;
    units[DYNAMODB_READ.test(key) ? 'read' : 'write'] += tally.units;
  }
  return units;
}
