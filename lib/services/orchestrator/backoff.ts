/** Cap of every back-off of the orchestrator: invokes, state-store calls, queue calls. */
export const MAX_BACKOFF_MS = 10_000;

/** Exponential back-off: `initialMs`, doubling up to {@link MAX_BACKOFF_MS}, back to `initialMs` after `reset`. */
export class Backoff {
  private current = 0;

  constructor(private readonly initialMs: number) {}

  /** The next wait. */
  next(): number {
    this.current = this.current === 0 ? this.initialMs : Math.min(MAX_BACKOFF_MS, this.current * 2);
    return this.current;
  }

  /** Starts over: the next wait is `initialMs` again. */
  reset(): void {
    this.current = 0;
  }
}
