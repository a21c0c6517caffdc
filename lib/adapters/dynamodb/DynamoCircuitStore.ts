import { randomUUID } from 'node:crypto';
import { circuitFromJSON, circuitToJSON, type CircuitJSON } from '../../domain/breaker/circuitJSON';
import type { CircuitStore } from '../../ports/CircuitStore';
import {
  corrupt,
  DynamoTable,
  isFiniteNumber,
  TABLE_KEY,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';

/**
 * The `CircuitStore` on the state table: one item per lane (`circuit#<lane>`) with the CircuitJSON's `version`,
 * `state`, `pausedUntil`, when not 0 `clientErrorRun`, while the lane is paused `hold` (a map `{since, by}`), when
 * there are any `transitions` (a list of maps `{at, from, to, reason}`, oldest first), and the ids of the writes of
 * its last versions (`write<version>`), so that a retry of a write that landed is recognised. See {@link DynamoTable}
 * for the whole layout.
 */
export class DynamoCircuitStore implements CircuitStore {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /**
   * {@inheritDoc CircuitStore.loadCircuit}
   * @throws StateFormatError when the stored circuit is malformed.
   */
  async loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    const item = await this.table.get({ Key: circuitKey(lane) });
    return item === undefined ? undefined : circuitToJSON(circuitFromJSON(item));
  }

  /**
   * {@inheritDoc CircuitStore.refusalRun}
   * @throws StateFormatError when the stored run is not a number.
   */
  async refusalRun(lane: string): Promise<number> {
    const item = await this.table.get({
      Key: circuitKey(lane),
      ProjectionExpression: '#clientErrorRun',
      ConsistentRead: false,
    });
    const run = item?.clientErrorRun ?? 0;
    if (!isFiniteNumber(run)) throw corrupt(`circuit of lane '${lane}'`, 'clientErrorRun must be a number', run);
    return run;
  }

  /** @inheritDoc */
  async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    // Two writers read version 3 and both try to write version 4:
    //
    //   X reads v3 ──────── X writes v4 if version = 3: ok
    //   Y reads v3 ───────────────────── Y writes v4 if version = 3: refused (it is 4) → false, Y reloads
    //
    // An absent item counts as version 0, so version 1 is written only if no item exists.
    //
    // The SDK retries a write whose answer was lost (a timeout, a 5xx after the commit); the retry is refused, since
    // the version moved on. So each write also records a fresh id under its version (`write4`), and a refused write
    // reads it back to tell its own landed write from another writer's, even if more versions were written since:
    //
    //   X writes v4 (id x): lands ── answer lost ── Z writes v5 ── SDK retries X: refused ── reads write4 = x → true
    //
    // Reporting `false` there would make the caller reload and apply its event a second time (one transient failure
    // counted twice). Only the ids of the last WRITE_IDS_KEPT versions are kept.
    const writeId = randomUUID();
    const previous = next.version - 1;
    const stale = next.version - WRITE_IDS_KEPT;
    const set = [
      '#version = :version',
      '#state = :state',
      '#pausedUntil = :pausedUntil',
      `${writeIdName(next.version)} = :writeId`,
    ];
    for (const name of OPTIONAL) if (next[name] !== undefined) set.push(`#${name} = :${name}`);
    const remove = removed(next, stale);
    return unlessConditionFails(
      this.table
        .update({
          Key: circuitKey(lane),
          UpdateExpression: `SET ${set.join(', ')}${remove.length === 0 ? '' : ` REMOVE ${remove.join(', ')}`}`,
          ExpressionAttributeValues: {
            ':version': next.version,
            ':state': next.state,
            ':pausedUntil': next.pausedUntil,
            ':writeId': writeId,
            ...Object.fromEntries(
              OPTIONAL.filter((name) => next[name] !== undefined).map((name) => [`:${name}`, next[name]]),
            ),
            ...(previous === 0 ? {} : { ':previous': previous }),
          },
          ConditionExpression: previous === 0 ? `attribute_not_exists(#${TABLE_KEY})` : '#version = :previous',
        })
        .then(() => true),
      async () => {
        const item = await this.table.get({ Key: circuitKey(lane), ProjectionExpression: writeIdName(next.version) });
        return item?.[writeIdName(next.version).slice(1)] === writeId;
      },
    );
  }
}

/** How many versions' write ids a circuit item keeps: far more writes than can land while one write's retry waits. */
const WRITE_IDS_KEPT = 16;

/** The attributes of a CircuitJSON that it leaves out when they hold nothing (a 0 run, no hold, no transitions). */
const OPTIONAL = ['clientErrorRun', 'hold', 'transitions'] as const satisfies readonly (keyof CircuitJSON)[];

/**
 * What a write of `next` removes: the write id of version `stale` once it is out of the kept range, and each
 * {@link OPTIONAL} attribute `next` leaves out (as a whole-item put would, the attribute is absent then).
 */
function removed(next: CircuitJSON, stale: number): string[] {
  return [
    ...(stale >= 1 ? [writeIdName(stale)] : []),
    ...OPTIONAL.filter((name) => next[name] === undefined).map((name) => `#${name}`),
  ];
}

/** The placeholder of the attribute holding the id of the write of `version` (it stands for `write<version>`). */
function writeIdName(version: number): string {
  return `#write${version}`;
}

function circuitKey(lane: string): Item {
  return { [TABLE_KEY]: `circuit#${lane}` };
}
