import type { Clock } from '../ports/Clock';

/**
 * The wall clock of the running process, for the Lambda handlers: `now` is `Date.now()`, and `sleep` is a
 * `setTimeout` that resolves at once (without a timer) for `ms <= 0`.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve()),
};
