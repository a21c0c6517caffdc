/** Inputs of {@link runDeadline}. */
export interface DeadlineInputs {
  /** The instant the run starts (epoch ms). */
  readonly now: number;
  /** What the Lambda context says is left before the timeout. */
  readonly remainingMs: number;
  /** The scheduled tick that started this run (EventBridge `time`); absent for a manual invoke. */
  readonly scheduledAt?: number;
  /** Period of the schedule (`SCHEDULE_PERIOD_MS`). */
  readonly tickMs: number;
  /** Kept free before the timeout for the last flush and the lease release. */
  readonly exitReserveMs: number;
  /** The run stops this long before a tick, so the tick's own run finds the lease free. */
  readonly tickMarginMs: number;
}

/**
 * When a scheduled run stops dispatching. It runs as long as its timeout allows, but ends just before a tick of
 * the schedule, so that the tick starts the next run at once: ending mid-minute would leave the lane idle until
 * the following tick (reserved concurrency 1 throttles, and the short event age drops, the ticks that fall inside
 * a run).
 *
 * ```
 * tick          tick          tick          tick
 *  |─────────────|─────────────|──────x──────|     x = now + remainingMs − exitReserveMs
 *  run ───────────────────────▶| stop here (minus tickMarginMs); the next tick's run takes over
 * ```
 * A manual invoke (no `scheduledAt`), or a run with no tick before its hard end, stops at the hard end.
 */
export function runDeadline(inputs: DeadlineInputs): number {
  const hardEnd = inputs.now + inputs.remainingMs - inputs.exitReserveMs;
  if (inputs.scheduledAt === undefined) return hardEnd;
  const ticks = Math.floor((hardEnd + inputs.tickMarginMs - inputs.scheduledAt) / inputs.tickMs);
  const aligned = inputs.scheduledAt + ticks * inputs.tickMs - inputs.tickMarginMs;
  return aligned > inputs.now ? aligned : hardEnd;
}
