import { replayHotLane } from '../../local/hotLaneReplay';
import type { ConditionCheck, ConditionScenario } from './types';

/** Seconds played, at 1,000 calls each. */
const SECONDS = 4;
/** DynamoDB's limits the layout must keep far from: the item size we allow, and one partition's write units a second. */
const MOST_ITEM_KB = 64;
const MOST_UNITS_PER_SECOND = 500;

/**
 * Condition 6: a lane at 1,000 calls a second, usage reported (every call owes a settlement) and `maxInFlight` 1,000,
 * on the real DynamoDB adapters for 4 played seconds (see `replayHotLane`). Before the layout change every settlement
 * was appended to the lane item, which also held every call slot.
 */
export const hotLaneItems: ConditionScenario = {
  name: 'hot-lane-items',
  condition: 6,
  injects: '1,000 calls a second, each owing a settlement, with 1,000 calls in progress, for 4 s on dynalite',
  breaks: 'one item grows past 64 KB or takes 500 write units in a second (DynamoDB allows 1,000 a partition)',
  async run(): Promise<ConditionCheck> {
    const load = await replayHotLane(SECONDS).catch((error: unknown) =>
      error instanceof Error ? error : new Error(String(error)),
    );
    if (load instanceof Error) return { held: false, detail: `a write failed: ${load.name}: ${load.message}` };
    return {
      held: load.largestKb < MOST_ITEM_KB && load.peakUnitsPerSecond < MOST_UNITS_PER_SECOND && load.starved === 0,
      detail:
        `largest write ${load.largestKb} KB (${load.largestItem}); peak ${load.peakUnitsPerSecond} write units in a ` +
        `second (${load.peakItem}); limits ${MOST_ITEM_KB} KB and ${MOST_UNITS_PER_SECOND} a second; ` +
        `${load.starved} calls found no free slot (the reports folded too slowly to free them)`,
    };
  },
};
