/**
 * The source of time. Domain code never reads the wall clock: services read `now()` once per step
 * and pass it down. Tests and the simulation use a fake clock that they advance.
 */
export interface Clock {
  /** Current instant in epoch milliseconds. */
  now(): number;
  /** Resolves once `ms` milliseconds have passed on this clock (immediately for `ms <= 0`). */
  sleep(ms: number): Promise<void>;
}
