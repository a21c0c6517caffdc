import { parseSettings, type SettingRanges } from '../settings';

/**
 * How a lane shares its quota between its two classes of work: the main class (the requeue, FIFO and main queues)
 * and the bulk class (the bulk queue), whose jobs may wait for the main class's but never starve.
 */
export interface PrioritySettings {
  /**
   * The least share of the lane's dispatches that goes to bulk jobs while the bulk queue holds any: the main class
   * goes first with the rest, and takes what bulk leaves. 0.1 lets interactive work take nine calls in ten while a
   * bulk backlog still drains at a tenth of the quota. @default 0.1
   */
  readonly bulkShare: number;
}

/** The default priority settings. */
export const DEFAULT_PRIORITY_SETTINGS: PrioritySettings = Object.freeze({ bulkShare: 0.1 });

const PRIORITY_RANGES: SettingRanges<PrioritySettings> = {
  bulkShare: { min: 0.01, max: 0.99 },
};

/**
 * Validates the `priorities` section; `undefined` means all defaults.
 * @throws ConfigError naming the field and its allowed range.
 */
export function parsePrioritySettings(input: unknown, field = 'priorities'): PrioritySettings {
  return parseSettings(input, field, DEFAULT_PRIORITY_SETTINGS, PRIORITY_RANGES);
}
