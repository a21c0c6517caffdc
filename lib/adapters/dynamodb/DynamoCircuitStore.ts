import { circuitFromJSON, circuitToJSON, type CircuitJSON } from '../../domain/breaker/circuit';
import type { CircuitStore } from '../../ports/CircuitStore';
import { DynamoTable, TABLE_KEY, unlessConditionFails, type DynamoTableOptions, type Item } from './DynamoTable';

/**
 * The `CircuitStore` on the state table: one item per lane (`circuit#<lane>`) with the CircuitJSON's `version`,
 * `state`, `pausedUntil` and, when not 0, `clientErrorRun`. See {@link DynamoTable} for the whole layout.
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

  /** @inheritDoc */
  async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    // Two writers read version 3 and both try to write version 4:
    //
    //   X reads v3 ──────── X writes v4 if version = 3: ok
    //   Y reads v3 ───────────────────── Y writes v4 if version = 3: refused (it is 4) → false, Y reloads
    //
    // An absent item counts as version 0, so version 1 is written only if no item exists.
    const previous = next.version - 1;
    return unlessConditionFails(
      this.table.put({
        Item: {
          ...circuitKey(lane),
          version: next.version,
          state: next.state,
          pausedUntil: next.pausedUntil,
          ...(next.clientErrorRun === undefined ? {} : { clientErrorRun: next.clientErrorRun }),
        },
        ...(previous === 0
          ? { ConditionExpression: `attribute_not_exists(#${TABLE_KEY})` }
          : { ConditionExpression: '#version = :previous', ExpressionAttributeValues: { ':previous': previous } }),
      }).then(() => true),
      () => false,
    );
  }
}

function circuitKey(lane: string): Item {
  return { [TABLE_KEY]: `circuit#${lane}` };
}
