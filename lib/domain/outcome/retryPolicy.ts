import { ConfigError } from '../../errors';
import { parseSettings } from '../settings';
import type { Classification } from './classify';

/** How often and how late a failed job is retried. Read once at cold start with {@link parseRetrySettings}. */
export interface RetrySettings {
  /** Total tries including the first; an integer from 1 to 100. @default 5 */
  readonly maxAttempts: number;
  /** Delay ceiling of the first retry in ms, doubled on each further one; an integer from 1 to 900000. @default 1000 */
  readonly baseDelayMs: number;
  /**
   * Hard cap on any delay in ms; an integer from `baseDelayMs` to 900000, SQS's largest `DelaySeconds` (15 min).
   * @default 900000
   */
  readonly maxDelayMs: number;
}

/** SQS's largest message delay (15 minutes), and so the largest delay a requeue can carry. */
export const MAX_DELAY_MS = 900_000;

/** Largest accepted `maxAttempts`. */
export const MAX_ATTEMPTS = 100;

/**
 * Receives a FIFO message may see per attempt of its job before SQS's redrive (the FIFO queue's `maxReceiveCount`)
 * moves it without a reason. Besides its own attempts, a FIFO message is received again for every hand-back (a
 * retry of an earlier message of its group received with it), every stand-down and every pause (the circuit held it
 * back, its worker was late, its key could not be read, the API refused the caller): none spends an attempt, and
 * none should bring the backstop near.
 */
export const FIFO_RECEIVES_PER_ATTEMPT = 20;

/** SQS's largest `maxReceiveCount`. */
export const MAX_RECEIVE_COUNT = 1_000;

/**
 * The least `maxReceiveCount` the FIFO queue's redrive may have, `maxAttempts` being the retry setting: generous
 * enough that, in normal operation, the service dead-letters a FIFO job itself (with its reason) long before SQS
 * would: {@link FIFO_RECEIVES_PER_ATTEMPT} receives per attempt, at most SQS's limit.
 */
export function fifoRedriveThreshold(maxAttempts: number): number {
  return Math.min(MAX_RECEIVE_COUNT, FIFO_RECEIVES_PER_ATTEMPT * maxAttempts);
}

/** The settings used where none are configured. */
export const DEFAULT_RETRY_SETTINGS: RetrySettings = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 1_000,
  maxDelayMs: MAX_DELAY_MS,
});

/**
 * Validates retry settings (an object whose keys are all optional) and returns them frozen, with defaults
 * filled in. `undefined` stands for "nothing configured" and gives {@link DEFAULT_RETRY_SETTINGS}.
 * @param field Name of the object in error messages. @default 'retry'
 * @throws ConfigError naming the offending field (e.g. `retry.maxAttempts`) and its allowed range: a non-object,
 * an unknown key, `maxAttempts` not an integer in 1..100, `baseDelayMs` not an integer in 1..900000, or
 * `maxDelayMs` not an integer in baseDelayMs..900000.
 */
export function parseRetrySettings(input: unknown, field = 'retry'): RetrySettings {
  const settings = parseSettings(input, field, DEFAULT_RETRY_SETTINGS, {
    maxAttempts: { min: 1, max: MAX_ATTEMPTS, integer: true },
    baseDelayMs: { min: 1, max: MAX_DELAY_MS, integer: true },
    maxDelayMs: { min: 1, max: MAX_DELAY_MS, integer: true },
  });
  if (settings.maxDelayMs < settings.baseDelayMs) {
    throw new ConfigError(
      `${field}.maxDelayMs`,
      `must be an integer from ${settings.baseDelayMs} (baseDelayMs) to ${MAX_DELAY_MS}; got ${settings.maxDelayMs}`,
    );
  }
  return settings;
}

/** What to do with a job after an attempt. */
export type RetryDecision =
  | { readonly action: 'succeed' }
  /** Requeue after `delayMs`; `rateLimited` is true for a 429, which pauses the lane instead of counting as an outage. */
  | { readonly action: 'retry'; readonly delayMs: number; readonly reason: string; readonly rateLimited: boolean }
  | { readonly action: 'dead-letter'; readonly reason: string }
  /** The API refused the caller, not the job: return the job to its queue without consuming an attempt. */
  | { readonly action: 'keep'; readonly reason: string };

/** Everything {@link decideRetry} needs besides the settings. */
export interface RetryInput {
  /** What the attempt came to. */
  readonly classification: Classification;
  /** The attempt that just ended, 1-based. */
  readonly attempt: number;
  /**
   * Time in ms until the quota window that was hit refills, as the caller computes it (e.g. the tightest tier's
   * window length). It caps the backoff. May be `Infinity` when unknown; `maxDelayMs` caps it then.
   */
  readonly refillMs: number;
  /** Randomness in [0, 1), injected so tests are deterministic (`Math.random` in production). */
  readonly random: () => number;
}

/**
 * Decides what happens to a job after an attempt.
 *
 * - success: `succeed`.
 * - permanent or client-error: `dead-letter` with reason `permanent: <classification reason>`; retrying cannot
 *   help. (The worker keeps a client-error job instead when the circuit judges the caller at fault.)
 * - caller-rejected: `keep` with reason `caller rejected: <classification reason>`, whatever the attempt: the job
 *   is not at fault and waits, in its queue, for the caller to be fixed.
 * - rate-limited or transient at `attempt >= maxAttempts`: `dead-letter` with reason
 *   `gave up after <attempt> attempts: <classification reason>`.
 * - otherwise `retry` after {@link backoffDelayMs}, or, when the API sent a Retry-After, after that wait plus a
 *   little jitter (see {@link retryAfterDelayMs}).
 * @throws RangeError when `attempt` is not a positive integer, `refillMs` is negative or NaN, or `random()`
 * returns a value outside [0, 1): these are bugs in the caller, not conditions to work around.
 */
export function decideRetry(input: RetryInput, settings: RetrySettings): RetryDecision {
  const { classification: c, attempt, refillMs, random } = input;
  checkAttempt(attempt);
  if (c.kind === 'success') return { action: 'succeed' };
  if (c.kind === 'permanent' || c.kind === 'client-error')
    return { action: 'dead-letter', reason: `permanent: ${c.reason}` };
  if (c.kind === 'caller-rejected') return { action: 'keep', reason: `caller rejected: ${c.reason}` };
  if (attempt >= settings.maxAttempts) {
    return {
      action: 'dead-letter',
      reason: `gave up after ${attempt} ${attempt === 1 ? 'attempt' : 'attempts'}: ${c.reason}`,
    };
  }
  const delayMs =
    c.retryAfterMs === undefined
      ? backoffDelayMs(attempt, refillMs, random, settings)
      : retryAfterDelayMs(c.retryAfterMs, random, settings);
  return { action: 'retry', delayMs, reason: `${c.kind}: ${c.reason}`, rateLimited: c.kind === 'rate-limited' };
}

/**
 * Delay before the retry that follows attempt `attempt`, when the API gave no Retry-After: "full jitter",
 * `random() * min(cap, baseDelayMs * 2^(attempt-1))` with `cap = max(baseDelayMs, refillMs)`, then clamped to
 * `[0, maxDelayMs]` and rounded up to whole ms.
 *
 * Why this shape:
 * - **Full jitter** (uniform over [0, ceiling), not "ceiling ± 10%"): jobs that failed together (an outage,
 *   a quota burst) are spread evenly over the whole interval, so they do not come back as a second wave — no
 *   retry storm. Among the usual variants it finishes the work with the fewest calls (AWS Architecture Blog,
 *   "Exponential Backoff And Jitter").
 * - **Capped at the refill time** of the window that was hit: by then the quota is whole again, so waiting any
 *   longer only wastes time; an open-ended exponential would park jobs for minutes behind a one-second window.
 *   `baseDelayMs` is the floor of the cap, so short windows still back off a little.
 * - **Clamped to [0, maxDelayMs]**: a retry sooner than now is impossible, and SQS cannot delay longer than
 *   15 minutes.
 * @throws RangeError on invalid `attempt`, `refillMs` or `random()` values (see {@link decideRetry}).
 */
export function backoffDelayMs(
  attempt: number,
  refillMs: number,
  random: () => number,
  settings: RetrySettings,
): number {
  checkAttempt(attempt);
  if (Number.isNaN(refillMs) || refillMs < 0) throw new RangeError(`refillMs must be >= 0; got ${refillMs}`);
  const cap = Math.max(settings.baseDelayMs, refillMs);
  const exponential = settings.baseDelayMs * 2 ** (attempt - 1);
  // Clamping the ceiling first keeps it finite (random() * Infinity would be NaN for 0); as random() < 1 the result is the same.
  const ceiling = Math.min(cap, exponential, settings.maxDelayMs);
  return Math.min(settings.maxDelayMs, Math.ceil(draw(random) * ceiling));
}

/**
 * Delay when the API sent a Retry-After: `retryAfterMs + random() * min(1000, retryAfterMs * 0.1)`, clamped to
 * `[0, maxDelayMs]` and rounded up. The wait is honoured — never earlier than asked, since an earlier call
 * would only be refused again — and the small jitter keeps the jobs paused by one 429 from all returning at
 * the same instant. A Retry-After beyond `maxDelayMs` is cut to it (the SQS limit); the lane's own pause
 * (the circuit) holds dispatch for the rest.
 * @throws RangeError when `random()` returns a value outside [0, 1).
 */
export function retryAfterDelayMs(retryAfterMs: number, random: () => number, settings: RetrySettings): number {
  const jitter = draw(random) * Math.min(1_000, retryAfterMs * 0.1);
  return Math.min(settings.maxDelayMs, Math.max(0, Math.ceil(retryAfterMs + jitter)));
}

function checkAttempt(attempt: number): void {
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be an integer >= 1; got ${attempt}`);
}

function draw(random: () => number): number {
  const r = random();
  if (!(r >= 0 && r < 1)) throw new RangeError(`random() must return a number in [0, 1); got ${r}`);
  return r;
}
