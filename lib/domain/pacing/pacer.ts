import { QuotaExceededError } from '../../errors';
import type { CallSlots } from '../inflight/callSlots';
import { settledUnits, type QuotaLedger, type Reservation, type Settlement } from '../quota/ledger';
import { namedUnits, unitsFor, type Costs, type SteadyRate, type Tier } from '../quota/tiers';
import { ChainGap, DispatchLead } from './dispatchLead';
import { DEFAULT_PACING_SETTINGS, type PacingSettings } from './settings';

/**
 * What holds a message back, and until when (see {@link Pacer.blockedUntil}): a 429 pause, or a tier (its ledger
 * window, or its smoothing).
 */
export type Hold =
  | { readonly kind: 'pause'; readonly until: number }
  | { readonly kind: 'tier'; readonly tier: Tier; readonly until: number };

/** Units a slot given back frees on a tier for smoothing to let through, until its window no longer holds it. */
interface Credit {
  units: number;
  readonly until: number;
}

/**
 * Per tier, the steady rate smoothing holds it to, or `undefined` for a tier that sets no pace: the sliding tiers of
 * the shortest window (all sliding tiers when `spreadLongTiers`). Calendar tiers set none; a longer sliding tier is
 * spent as fast as the shorter ones allow, and the ledger alone bounds its window.
 */
function pacedRates(
  tiers: readonly Tier[],
  spreadLongTiers: boolean,
  limits: readonly number[] = [],
): (SteadyRate | undefined)[] {
  const rates = tiers.map((tier, i) => {
    const rate = tier.steadyRate();
    const limit = limits[i];
    // A learned limit below the configured one paces at its own rate; 0 (another caller spent it all) as one a window.
    return rate === undefined || limit === undefined || limit >= rate.units
      ? rate
      : { units: Math.max(1, limit), perMs: rate.perMs };
  });
  const shortest = Math.min(...rates.map((rate) => rate?.perMs ?? Number.POSITIVE_INFINITY));
  return rates.map((rate) => (spreadLongTiers || rate?.perMs === shortest ? rate : undefined));
}

/** How much of an interval a late dispatch may make up at the next one (see {@link Pacer.dispatch}). */
const LATENESS_MADE_UP = 0.25;

/**
 * Answers "when may the next message of costs c go?" and records each dispatch.
 *
 * The ledger is the hard guarantee (no tier ever exceeded). On top of it, each paced tier (see {@link pacedRates}),
 * of L units per W ms, runs a GCRA (virtual scheduling): a message may go once the tier's theoretical arrival time,
 * less the burst tolerance, has passed, and it pushes that time on by `units · W / (L · ramp)`. With no burst this
 * spaces messages evenly at the shortest tier's rate; a longer tier is spent as fast as that allows, then waits for
 * its window (full use: every job ends no later than under spreading), unless `spreadLongTiers`.
 * A slow-start ramp scales every rate from `rampStartFraction` up to 1; a pause (429) holds everything.
 * A slot given back (see {@link Pacer.settle}) lets its units through smoothing once more, while its window holds it.
 */
export class Pacer {
  private readonly theoreticalArrival: number[];
  /** Per tier: what slots given back left for smoothing to let through (see {@link Pacer.settle}), soonest to expire first. */
  private readonly credits: Credit[][];
  /** Per tier: its steady rate, or `undefined` for a tier that sets no pace (a calendar tier). */
  private rates: readonly (SteadyRate | undefined)[];
  /** One unit of each named unit the tiers count: the least a message can take. */
  private readonly oneOfEach: Costs;
  private rampStartedAt = Number.NEGATIVE_INFINITY;
  private pausedUntilMs = Number.NEGATIVE_INFINITY;
  /** The latest instant a dispatch was reserved at: slots never go back before it (a job may be dispatched ahead). */
  private latestSlot = Number.NEGATIVE_INFINITY;
  /** How long before its slot a job is dispatched: it grows while workers report late starts (see {@link Pacer.settle}). */
  readonly lead: DispatchLead;
  /** How far apart a FIFO group's messages in one batch are slotted: it grows while workers report waits too long (see {@link Pacer.settle}). */
  readonly chainGap: ChainGap;

  constructor(
    readonly ledger: QuotaLedger,
    private readonly settings: PacingSettings = DEFAULT_PACING_SETTINGS,
    /** The cap on calls in progress (`maxInFlight`), if the lane has one: settlements free their dispatch's slot. */
    readonly slots?: CallSlots,
  ) {
    this.theoreticalArrival = ledger.tiers.map(() => Number.NEGATIVE_INFINITY);
    this.credits = ledger.tiers.map(() => []);
    const { dispatchLeadMs, maxDispatchLeadMs, arrivalMarginMs, callAllowanceMs } = settings;
    this.lead = new DispatchLead({
      baseMs: dispatchLeadMs,
      maxMs: maxDispatchLeadMs,
      callWindowMs: arrivalMarginMs - callAllowanceMs,
    });
    this.chainGap = new ChainGap(arrivalMarginMs - callAllowanceMs);
    this.rates = pacedRates(ledger.tiers, settings.spreadLongTiers);
    this.oneOfEach = Object.fromEntries(namedUnits(ledger.tiers).map((unit) => [unit, 1]));
  }

  /**
   * Paces and counts each tier at `limits` (in configured order) where it is below its configured limit: the limits
   * in force the lane learnt from the API (see `QuotaLedger.limitTo`). Smoothing's schedule carries on from where it
   * is, at the new rates.
   */
  limitTo(limits: readonly number[]): void {
    this.ledger.limitTo(limits);
    this.rates = pacedRates(this.ledger.tiers, this.settings.spreadLongTiers, limits);
  }

  /** Rate fraction the slow-start ramp allows at `now` (1 when no ramp is under way). */
  rampFraction(now: number): number {
    const { rampStartFraction, rampSeconds } = this.settings;
    const elapsed = now - this.rampStartedAt;
    if (rampSeconds === 0 || elapsed >= rampSeconds * 1000) return 1;
    return rampStartFraction + (1 - rampStartFraction) * (Math.max(0, elapsed) / (rampSeconds * 1000));
  }

  /** Instant until which dispatch is paused (a 429's `Retry-After` plus jitter); in the past when not paused. */
  get pausedUntil(): number {
    return this.pausedUntilMs;
  }

  /** The latest instant a dispatch was reserved at: no slot goes before it. */
  get lastSlot(): number {
    return this.latestSlot;
  }

  /**
   * Earliest whole-ms instant >= `now`, and no earlier than the last dispatch's slot, at which a message of `costs`
   * may go: when every tier has room, smoothing allows it, and no pause holds. `Infinity` when its units exceed a
   * tier's limit and so can never go.
   */
  nextSlot(now: number, costs: Costs): number {
    const fraction = this.rampFraction(now);
    // Smoothing may push the slot to where the ledger refuses it (a calendar boundary's margin, a window that fills
    // up), and a credit that lets a message through smoothing may expire as the slot moves on: the slot moves on
    // until the ledger and every tier agree.
    for (let at = Math.ceil(Math.max(now, this.latestSlot, this.pausedUntilMs)); ;) {
      const fit = this.ledger.earliestFit(at, costs).at;
      if (!Number.isFinite(fit)) return fit;
      const next = Math.ceil(
        Math.max(fit, ...this.ledger.tiers.map((tier, i) => this.smoothedAt(tier, i, costs, fraction, at))),
      );
      if (next === at) return at;
      at = next;
    }
  }

  /**
   * What holds a message of `costs` back at `now` (by default one of each unit) ({@link Pacer.nextSlot} with its cause), or `undefined` when it
   * may go at `now`. The pause wins a tie; among tiers, the ledger's fit before smoothing. Reads only.
   */
  blockedUntil(now: number, costs: Costs = this.oneOfEach): Hold | undefined {
    const until = this.nextSlot(now, costs);
    if (until <= now) return undefined;
    const { tiers } = this.ledger;
    const fit = this.ledger.earliestFit(now, costs);
    const fraction = this.rampFraction(now);
    const tier =
      (Math.ceil(fit.at) >= until ? tiers[fit.tier] : undefined) ??
      tiers.find((t, i) => Math.ceil(this.smoothedAt(t, i, costs, fraction, until)) >= until);
    return Math.ceil(this.pausedUntilMs) >= until || tier === undefined
      ? { kind: 'pause', until }
      : { kind: 'tier', tier, until };
  }

  /**
   * When smoothing lets a message of `costs` through `tier` (the `i`-th) at ramp `fraction`; -Infinity if it sets no
   * pace, or if the credits still valid at `at` cover the message.
   */
  private smoothedAt(tier: Tier, i: number, costs: Costs, fraction: number, at: number): number {
    const rate = this.rates[i];
    const uncredited = unitsFor(tier, costs) - this.credit(i, at);
    if (rate === undefined || uncredited <= 0) return Number.NEGATIVE_INFINITY;
    // A burst counts this message too: its own interval comes out of the tolerance, so burstFraction · limit units
    // (not one message more) may go back to back.
    const tolerance = Math.max(0, this.settings.burstFraction * rate.perMs - this.interval(uncredited, rate, fraction));
    return (this.theoreticalArrival[i] ?? 0) - tolerance;
  }

  /** How far `units` push the theoretical arrival time of a tier of steady `rate`, at ramp `fraction`. */
  private interval(units: number, rate: SteadyRate, fraction: number): number {
    return (units * (rate.perMs + this.settings.arrivalMarginMs)) / (rate.units * fraction);
  }

  /**
   * Records a dispatch whose call is counted at slot `now` (a job dispatched ahead of its slot passes the slot):
   * charges the ledger and advances smoothing. A `chained` one, a FIFO message its worker calls only once the one
   * before it in its batch has ended, is not counted toward the lead: its wait is a chain gap, not a start delay.
   * @throws QuotaExceededError when `now` is before {@link Pacer.nextSlot}; nothing is recorded then.
   */
  dispatch(now: number, costs: Costs, chained = false): Reservation {
    const slot = this.nextSlot(now, costs);
    if (slot > now) throw new QuotaExceededError(this.ledger.earliestFit(now, costs).tier, slot);
    const reservation = this.ledger.reserve(now, costs);
    this.latestSlot = now;
    if (!chained) this.lead.dispatched();
    const fraction = this.rampFraction(now);
    this.ledger.tiers.forEach((tier, i) => {
      const rate = this.rates[i];
      if (rate === undefined) return;
      // What credits cover takes the place of what was given back: the schedule moves on by the rest only, so a tier
      // whose calls hand back part of their estimates is paced at what they use.
      const units = unitsFor(tier, costs);
      const credited = Math.min(units, this.credit(i, now));
      this.spendCredit(i, credited, now);
      if (credited === units) return;
      const interval = this.interval(units - credited, rate, fraction);
      // A dispatch a little late for its slot (a timer firing late, a slow request before it) keeps the schedule, so
      // the next one makes the lateness up: otherwise every late wake-up would cost the lane that much of its rate.
      // Up to a quarter of an interval is made up; beyond that the lane was idle and the schedule restarts from now.
      // Slots are whole ms: a tier that takes more than one message a ms restarts from the ms before, or the rest of
      // `now`'s ms would go unused (and two tiers that restarted in turn, a lane's and its pool's, would push each
      // other's next slot a ms on at every dispatch: one message a ms).
      const tat = this.theoreticalArrival[i] ?? Number.NEGATIVE_INFINITY;
      const restart = interval < 1 ? now - 1 : now;
      this.theoreticalArrival[i] = (tat >= now - Math.max(1, interval * LATENESS_MADE_UP) ? tat : restart) + interval;
    });
    return reservation;
  }

  /**
   * Settles `settlement` in the ledger at `now`. What it hands back (a whole reservation when no call reached the API,
   * the unused part of a call's estimate otherwise) also stays on every smoothed tier as a credit, valid while the
   * tier's window still holds the slot it came from: a message the credits cover goes through smoothing at once (the
   * ledger still bounds every window), so that quota given back early enough (an invoke throttled, a late start
   * folded in while its window lasts, as a minute tier's is, the output tokens an LLM call did not use) is taken, not
   * lost. A settlement naming its dispatch frees the dispatch's call slot (see {@link CallSlots}): its call has ended, or
   * never started. A worker's late start also lengthens the lead, which is what keeps a per-second tier full, and a FIFO
   * message that waited too long for the one before it in its batch widens the chain gap.
   */
  settle(settlement: Settlement, now: number): void {
    this.ledger.settle(settlement);
    if (settlement.id !== undefined) this.slots?.release(settlement.id);
    if (settlement.startDelayMs !== undefined) this.lead.startedLate(settlement.startDelayMs);
    if (settlement.chainGapMs !== undefined) this.chainGap.waitedTooLong(settlement.chainGapMs);
    const { reservation } = settlement;
    this.ledger.tiers.forEach((tier, i) => {
      const rate = this.rates[i];
      const credits = this.credits[i];
      const units = unitsFor(tier, reservation.costs) - settledUnits(tier, settlement);
      if (rate === undefined || credits === undefined || units <= 0 || reservation.at + rate.perMs <= now) return;
      credits.push({ units, until: reservation.at + rate.perMs });
      credits.sort((a, b) => a.until - b.until);
    });
  }

  /** The units of the `i`-th tier's credits still valid at `at`. */
  private credit(i: number, at: number): number {
    return (this.credits[i] ?? []).reduce((sum, credit) => sum + (credit.until > at ? credit.units : 0), 0);
  }

  /** Spends `units` of the `i`-th tier's credits valid at `at`, soonest to expire first, and drops the expired ones. */
  private spendCredit(i: number, units: number, at: number): void {
    const credits = (this.credits[i] ?? []).filter((credit) => credit.until > at);
    let left = units;
    while (left > 0 && credits[0] !== undefined) {
      const spent = Math.min(left, credits[0].units);
      credits[0].units -= spent;
      left -= spent;
      if (credits[0].units === 0) credits.shift();
    }
    this.credits[i] = credits;
  }

  /** Starts a slow-start ramp at `now` (after the circuit closes). */
  startRamp(now: number): void {
    this.rampStartedAt = now;
  }

  /**
   * Holds all dispatch until `until` plus up to `pauseJitterMs` of jitter; a later pause extends an earlier one.
   * @param random injected randomness in [0, 1)
   */
  pause(until: number, random: () => number): void {
    this.pausedUntilMs = Math.max(this.pausedUntilMs, until + Math.floor(random() * this.settings.pauseJitterMs));
  }
}
