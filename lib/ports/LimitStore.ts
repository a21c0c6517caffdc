import type { LimitObservations, ObservedReading } from '../domain/limits/limitLearner';

/**
 * Per lane, what the API's answers said of its limits: the latest reading of each family of limit headers, and the
 * latest 429 that no header explained. Workers record them; the orchestrator folds them into the lane's learned
 * limits (see `LimitLearner`). Every implementation passes `test/contract/stateStores.contract.ts`.
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
}
