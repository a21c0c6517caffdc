import type { Reservation, Settlement } from '../../domain/quota/ledger';
import { COST_UNIT, type Costs } from '../../domain/quota/tiers';
import { allRefunds, MAX_STORED_SETTLEMENTS, type LedgerStore } from '../../ports/LedgerStore';
import {
  corrupt,
  DynamoTable,
  isFiniteNumber,
  laneKey,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';

/**
 * The one ledger write a worker makes, {@link LedgerStore.addSettlements}, on the state table: it appends to the lane
 * item's pending `settlements`, which {@link DynamoLedgerStore} reads, folds and removes. Kept apart from that store so
 * that the worker, which only records, builds and bundles none of the ledger's reading.
 */
export class DynamoSettlementRecorder implements Pick<LedgerStore, 'addSettlements'> {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /** @inheritDoc */
  async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    // Not fenced: workers report whatever lease is current. The list grows inside the lane item (400 KB limit): the
    // orchestrator folds and removes settlements regularly, and refunds are turned away from a full list. Not
    // idempotent either, so the SDK sends the append again only after a refusal (throttling): after an answer that may
    // hide an append that landed, it fails, and the worker's next try hands nothing back (see `recordSettlement`),
    // since the orchestrator may fold the first copy before the second lands. A retry turned away by the condition
    // reports false for refunds that did land.
    if (settlements.length === 0) return true;
    const bounded = allRefunds(settlements);
    return unlessConditionFails(
      this.table
        .update(
          {
            Key: laneKey(lane),
            UpdateExpression: 'SET #settlements = list_append(if_not_exists(#settlements, :empty), :added)',
            ...(bounded
              ? { ConditionExpression: 'attribute_not_exists(#settlements) OR size(#settlements) < :most' }
              : {}),
            ExpressionAttributeValues: {
              ':empty': [],
              ':added': settlements,
              ...(bounded ? { ':most': MAX_STORED_SETTLEMENTS } : {}),
            },
          },
          { resend: 'if-refused' },
        )
        .then(() => true),
      () => false,
    );
  }
}

function isObject(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is a {@link Costs}: an object of finite numbers. */
function isCosts(value: unknown): value is Costs {
  return isObject(value) && Object.values(value).every(isFiniteNumber);
}

/**
 * The settlement stored as `value` (in the lane item's pending list, or owed by an idempotency record). One stored
 * before units had names (`reservation.cost` and `actualCost`, numbers) reads as one of the `cost` unit.
 * @param what names the stored value in the error.
 * @throws StateFormatError when `value` is not a settlement.
 */
export function settlementOf(value: unknown, what: string): Settlement {
  const { reservation, actual, actualCost, id, startDelayMs, chainGapMs } = isObject(value) ? value : {};
  const costs = isObject(reservation)
    ? (reservation.costs ?? (isFiniteNumber(reservation.cost) ? { [COST_UNIT]: reservation.cost } : undefined))
    : undefined;
  const used = actual !== undefined ? actual : isFiniteNumber(actualCost) ? { [COST_UNIT]: actualCost } : actualCost;
  if (
    (id === undefined || typeof id === 'string') &&
    (startDelayMs === undefined || isFiniteNumber(startDelayMs)) &&
    (chainGapMs === undefined || isFiniteNumber(chainGapMs)) &&
    (used === null || isCosts(used)) &&
    isObject(reservation) &&
    isFiniteNumber(reservation.at) &&
    isCosts(costs) &&
    isObject(reservation.windows) &&
    Object.values(reservation.windows).every((window) => typeof window === 'string')
  ) {
    return {
      reservation: { at: reservation.at, costs, windows: reservation.windows as Reservation['windows'] },
      actual: used,
      ...(id === undefined ? {} : { id }),
      ...(startDelayMs === undefined ? {} : { startDelayMs }),
      ...(chainGapMs === undefined ? {} : { chainGapMs }),
    };
  }
  throw corrupt(what, 'must be {reservation: {at, costs, windows}, actual, id?, startDelayMs?, chainGapMs?}', value);
}
