/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Gives up after this long. @default 10000 */
  readonly timeoutMs?: number;
  /** Pause between two checks. @default 50 */
  readonly intervalMs?: number;
  /** What is awaited, for the error message, e.g. `'every job to succeed'`. @default 'the condition' */
  readonly what?: string;
}

/** Resolves after `ms` of wall time: for pacing polls and background loops, never as an assertion. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Checks `check` until it returns a value other than `undefined`, `null` or `false`, and returns that value.
 * A check that throws is retried like a false one (until the timeout, when its error is reported).
 * @throws Error naming `what`, after `timeoutMs`, with the last error if the last check threw.
 */
export async function waitFor<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: WaitForOptions = {},
): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 50, what = 'the condition' } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail =
        lastError === undefined
          ? ''
          : `; the last check threw: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${detail}`,
        lastError === undefined ? {} : { cause: lastError },
      );
    }
    await pause(intervalMs);
  }
}
