import type { Hold, Pacer } from '../../domain/pacing/pacer';
import { tierLabel } from '../../domain/quota/tiers';
import { LanePools } from './lanePools';
import type { RunContext } from './runContext';

export { tierLabel };

/** What holds work back, as named in events and logs: a tier's label, or `429` for a `Retry-After` pause. */
export function holdLabel(hold: Hold): string {
  return hold.kind === 'pause' ? '429' : tierLabel(hold.tier);
}

/** SQS keeps a message invisible at most 12 hours from its receive; a minute is kept spare for clock skew. */
const MAX_HIDE_FROM_RECEIVE_MS = 43_200_000 - 60_000;

/**
 * Receives only what can be sent while it is held. SQS counts every receive (and redrives a message to its DLQ
 * after `maxReceiveCount`, a last guard the service's own count of attempts must not reach), so a message received
 * and then handed back unsent loses one of its receives for nothing. A received message is sendable while its visibility still covers a
 * worker's run (`visibilityTimeoutMs − workerTimeoutMs` after its receive) and the run is still going (its deadline).
 *
 * **Quota exhaustion.** Before each receive the gate asks the pacer when one unit could go next (every tier and the
 * 429 pause): if that is after the run's end or after a message received now would have to go, it stays shut, and
 * the run receives nothing, hands back what is buffered (visibility 0: no receive is taken, none given back) and
 * waits. While that instant is beyond a message's visibility, the quota is *exhausted*: the gate reports
 * `quota-exhausted` (the tier, until when) once per episode (each run that finds it so reports it again), and
 * `quota-available` when it ends. A received head whose cost does not fit in time is hidden until its slot, at most
 * 12 hours after its receive (see {@link QuotaGate.hideMs}), and reported `message-held` (see `Dispatcher`).
 */
export class QuotaGate {
  /** The exhaustion under way: what holds the quota, until when, and since when. */
  private episode: { readonly tier: string; readonly until: number; readonly since: number } | undefined;

  /** `pools`: those the lane draws from, which hold its work back as its own tiers do. */
  constructor(
    private readonly run: RunContext,
    private readonly pacer: Pacer,
    private readonly pools: LanePools = LanePools.NONE,
  ) {}

  /** How long after its receive a message may still be sent: its visibility less a worker's run. */
  private get coverageMs(): number {
    const { settings } = this.run;
    return settings.visibilityTimeoutMs - settings.workerTimeoutMs;
  }

  /**
   * How long before its {@link QuotaGate.sendBy} a message's first unit must be able to go, while `hold` holds the
   * quota, for the gate to let it in: half its coverage for a spent calendar tier, none otherwise. The first slot of
   * a calendar tier's new window needs an allowance that can only be saved once the window has begun (see
   * `QuotaLedger.allowanceEnd`); a message received with no time to spare would find its slot, after that flush, past
   * its coverage, and be left to reappear: one receive spent for nothing. A tier that sets a pace needs no slack (its
   * allowance is saved ahead), and must get none: a message held for its next slot would be handed back unsent.
   */
  private slackMs(hold: Hold): number {
    return hold.kind === 'tier' && hold.tier.kind === 'calendar' ? this.coverageMs / 2 : 0;
  }

  /** The latest instant at which a message received at `receivedAt` may be sent in this run. */
  sendBy(receivedAt: number): number {
    return Math.min(receivedAt + this.coverageMs, this.run.options.deadline);
  }

  /**
   * Whether a receive at `now` may be taken: `undefined` if one unit could be sent before the run's end and before
   * {@link QuotaGate.sendBy} of a message received now, with the slack a spent calendar tier needs (see
   * {@link QuotaGate.slackMs}), else the instant from which it could be (the deadline, when only the run's end is in
   * the way). Starts and ends the exhaustion episodes.
   */
  shutUntil(now: number): number | undefined {
    const hold = this.pools.blockedUntil(now, this.pacer.blockedUntil(now));
    const exhausted = hold !== undefined && hold.until > now + this.coverageMs;
    if (exhausted) this.exhausted(now, hold);
    else this.available(now);
    if (hold === undefined) return undefined;
    const slack = this.slackMs(hold);
    if (hold.until <= Math.min(now + this.coverageMs - slack, this.run.options.deadline)) return undefined;
    // Unless the run's end comes first, the gate opens once a message received then leaves the slack.
    const opensAt = hold.until - this.coverageMs + slack;
    return exhausted || hold.until <= this.run.options.deadline ? opensAt : this.run.options.deadline;
  }

  /**
   * How long to hide a message received at `receivedAt` whose slot `slot` comes after {@link QuotaGate.sendBy}:
   * until its slot, so that no run receives it before it can be sent, within the 12 hours SQS allows.
   */
  hideMs(receivedAt: number, slot: number, now: number): number {
    return Math.max(0, Math.min(slot - now, receivedAt + MAX_HIDE_FROM_RECEIVE_MS - now));
  }

  /**
   * How many messages one receive may take, as far as the tiers that set no pace go (their quota only comes back when
   * their window ends): as many as the one with the least room left could send at one unit each, so that a calendar
   * tier near its limit leaves no batch unsent. Those that set a pace bound the batch by their rate (see `Intake`).
   */
  room(now: number): number {
    const capped = [...this.pacer.ledger.usage(now), ...this.pools.usage(now)].filter(
      ({ tier }) => tier.steadyRate() === undefined,
    );
    return Math.min(...capped.map(({ tier, used }) => Math.floor(tier.limit - used)));
  }

  private exhausted(now: number, hold: Hold): void {
    const tier = holdLabel(hold);
    if (this.episode?.tier === tier && this.episode.until === hold.until) return;
    this.episode = { tier, until: hold.until, since: this.episode?.since ?? now };
    this.run.report({
      type: 'quota-exhausted',
      at: now,
      tier,
      kind: hold.kind === 'pause' ? 'pause' : hold.tier.kind,
      until: hold.until,
    });
  }

  private available(now: number): void {
    if (this.episode === undefined) return;
    this.run.report({
      type: 'quota-available',
      at: now,
      tier: this.episode.tier,
      exhaustedMs: now - this.episode.since,
    });
    this.episode = undefined;
  }
}
