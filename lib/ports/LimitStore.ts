import type { LimitObservations, ObservedReading } from '../domain/limits/limitLearner';
import type { LimitOverrideJSON } from '../domain/limits/limitOverrideJSON';

/**
 * Per lane, what the API's answers said of its limits: the latest reading of each family of limit headers, and the
 * latest 429 that no header explained. Workers record them; the orchestrator folds them into the lane's learned
 * limits (see `LimitLearner`). And per lane or pool (by state name), an operator's override of its tiers' limits
 * (see `LimitOverrideJSON`), kept with its state: the `LedgerStore` of the same backend returns it with the ledger it
 * loads and with each save. Every implementation passes `test/contract/stateStores.contract.ts`.
 */
export interface LimitStore {
  /**
   * Records `reading` as its family's latest, unless a reading of that family read later is already there: workers
   * record in any order, and a late write never hides a newer reading.
   */
  recordReading(lane: string, reading: ObservedReading): Promise<void>;

  /** Records a 429 at `at` that no limit header explained, unless a later one is already there. */
  recordRateLimited(lane: string, at: number): Promise<void>;

  /** What the workers recorded for the lane: nothing for a lane whose answers never said anything. */
  loadObservations(lane: string): Promise<LimitObservations>;

  /** The override of the lane's or pool's (`state`'s) tier limits, if any. @throws StateFormatError when malformed. */
  loadOverride(state: string): Promise<LimitOverrideJSON | undefined>;

  /**
   * Replaces the override of `state`'s tier limits by `next` (`undefined`: removes it), provided the stored one is
   * still `expected`: the one set at that instant, `none` stored, or `any` (an override stored malformed is replaced
   * so: that is how an operator mends it).
   * @returns false when the stored override is not `expected`: nothing is written.
   */
  replaceOverride(state: string, next: LimitOverrideJSON | undefined, expected: ExpectedOverride): Promise<boolean>;
}

/** Which stored override {@link LimitStore.replaceOverride} replaces: the one set at that instant, none, or any. */
export type ExpectedOverride = number | 'none' | 'any';
