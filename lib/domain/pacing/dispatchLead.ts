/** Over how many of the latest dispatches workers' late starts are weighed (see {@link DispatchLead}). */
export const LEAD_SAMPLE_DISPATCHES = 1000;

/** Share of dispatches whose worker may still start too late once the lead has grown to fit the others. */
export const LATE_SHARE_TOLERATED = 0.01;

/** Share of dispatches whose worker may start too late for the earliest slot of a run behind its schedule. */
export const LATE_SHARE_TYPICAL = 0.2;

/**
 * How much more than a late worker needed the lead takes: late starts are seen only above the lead, so the next one
 * is likely later than the latest; with a quarter more, a few late starts rather than one per new latest bring the
 * lead over the slow tail (cold starts of up to 1.5 s).
 */
export const LEAD_HEADROOM = 1.25;

/** What a {@link DispatchLead} is made of, in ms. */
export interface DispatchLeadSettings {
  /** The configured lead (`PacingSettings.dispatchLeadMs`), and the least. */
  readonly baseMs: number;
  /** The most the lead grows to (`PacingSettings.maxDispatchLeadMs`). */
  readonly maxMs: number;
  /** How long after its slot a worker may still start its call (`callBy − slot`). */
  readonly callWindowMs: number;
}

/**
 * How long before its slot a job is dispatched, grown from the start delays of workers that started too late.
 *
 * A worker that starts after its `callBy` gives its slot back, and a slot given back is lost to a sliding tier that
 * runs full: its windows cannot take one call more later. So the lead follows the late starts: over the latest
 * {@link LEAD_SAMPLE_DISPATCHES} dispatches, it is the least lead, from the configured one up to the most, that would
 * have let all but {@link LATE_SHARE_TOLERATED} of them start in time, with {@link LEAD_HEADROOM}. It grows at the
 * first late starts and falls back once they have left the sample (cold starts are over). Pure: dispatches and
 * reports come in as calls.
 */
export class DispatchLead {
  /** Dispatches counted so far. */
  private dispatches = 0;
  /** The leads late workers would have needed, with the dispatch count each was reported at. */
  private needed: { readonly at: number; readonly ms: number }[] = [];

  constructor(private readonly settings: DispatchLeadSettings) {}

  /** The lead for the next dispatch, ms. */
  get ms(): number {
    return this.leadLetting(LATE_SHARE_TOLERATED);
  }

  /**
   * The lead that would have let all but a fifth ({@link LATE_SHARE_TYPICAL}) of the latest dispatches start in
   * time, ms: where a run behind its schedule takes its earliest slot (see `Dispatcher`). Above the configured lead
   * only while more workers than that start late (a slow state table makes every claim late), not for a tail of cold
   * starts: a slot skipped for those would be lost.
   */
  get typicalMs(): number {
    return this.leadLetting(LATE_SHARE_TYPICAL);
  }

  /** The least lead, from the configured one up to the most, that would have let all but `lateShare` start in time. */
  private leadLetting(lateShare: number): number {
    const { baseMs, maxMs } = this.settings;
    const tolerated = Math.floor(lateShare * Math.min(this.dispatches, LEAD_SAMPLE_DISPATCHES));
    const largestFirst = this.needed.map((late) => late.ms).sort((a, b) => b - a);
    return Math.min(maxMs, Math.max(baseMs, largestFirst[tolerated] ?? 0));
  }

  /** Counts a dispatch whose worker starts its job itself (not one chained behind another in its batch). */
  dispatched(): void {
    this.dispatches++;
    if (this.needed[0] !== undefined && this.needed[0].at <= this.dispatches - LEAD_SAMPLE_DISPATCHES) {
      this.needed = this.needed.filter((late) => late.at > this.dispatches - LEAD_SAMPLE_DISPATCHES);
    }
  }

  /**
   * Takes in a worker that started `startDelayMs` after its event was sent, too late to call: it needed a lead of
   * its start delay less the call window, and the lead counts {@link LEAD_HEADROOM} times that.
   */
  startedLate(startDelayMs: number): void {
    this.needed.push({
      at: this.dispatches,
      ms: Math.ceil((startDelayMs - this.settings.callWindowMs) * LEAD_HEADROOM),
    });
  }
}

/** The gap a FIFO group's messages in one batch start from, ms: about a fast API's answer (see {@link ChainGap}). */
export const INITIAL_CHAIN_GAP_MS = 100;

/**
 * How far apart the slots of one FIFO group's messages in a batch are, learned as the lead is: the worker calls each
 * only once the one before has ended, and one that could start only `chainGapMs` after the slot of the one before
 * (a slow answer) and so past its `callBy`, gives its slot back. The gap then grows, over the latest
 * {@link LEAD_SAMPLE_DISPATCHES} messages that waited for another, to what all but {@link LATE_SHARE_TOLERATED} of
 * them needed, with {@link LEAD_HEADROOM}; it starts at, and falls back to, {@link INITIAL_CHAIN_GAP_MS}.
 */
export class ChainGap extends DispatchLead {
  constructor(callWindowMs: number) {
    super({ baseMs: INITIAL_CHAIN_GAP_MS, maxMs: Number.POSITIVE_INFINITY, callWindowMs });
  }

  /** Takes in a message that could start only `chainGapMs` after the slot of the one before it, too late to call. */
  waitedTooLong(chainGapMs: number): void {
    this.startedLate(chainGapMs);
  }
}
