import type { Pacer } from '../../domain/pacing/pacer';
import { handedBack } from '../../domain/quota/handBack';
import type { Settlement } from '../../domain/quota/ledger';
import { addCosts, tierLabel } from '../../domain/quota/tiers';
import type { Lease } from '../../ports/LeaseStore';
import { MAX_FOLDED_PER_SAVE, MAX_PENDING_SETTLEMENTS } from '../../ports/LedgerStore';
import { RunLimits } from './limitsInForce';
import { RunAllowance, type Amount } from './runAllowance';
import type { RunContext } from './runContext';
import type { StateLink } from './stateLink';
import type { GuardedStores, RunQuota } from './types';

/**
 * Most ledger saves per flush, each folding a read of at most {@link MAX_PENDING_SETTLEMENTS} settlements: a flush
 * folds about 2 500 settlements, and a backlog beyond waits for the next flush rather than keep the lease from being
 * renewed.
 */
const MAX_SAVES_PER_FLUSH = 10;

/**
 * What the last flush left, and so what the next one does:
 * - `synced`: it succeeded (or none has run yet); the next is due on schedule.
 * - `unsaved`: it failed before saving the ledger; the next is due at once and saves.
 * - `saved-unrenewed`: it saved the ledger but its lease renewal (or a further save) failed; the next is due at once
 *   and, unless final, only renews: the saved ledger stands.
 *
 * Any but `synced` comes with a state outage (see {@link StateLink}), which cannot end before a flush succeeds.
 */
type LedgerSyncState = 'synced' | 'unsaved' | 'saved-unrenewed';

/** A flush that needs no more than the allowance it grants anyway. */
const NOTHING_NEEDED: Amount = { units: [], slots: 0 };

/** Options of a flush. */
export interface FlushOptions {
  /** The run's last flush: it saves no allowance. */
  readonly final?: boolean;
  /** What the saved allowance must hold at least: a message about to go, and those that may go in its batch. */
  readonly need?: Amount;
  /**
   * The instant the saved allowance must reach at least: the slot of a message about to go, which the lead and a
   * batch's window can put further ahead than `2 × flushIntervalMs`. It never reaches past the current window of a
   * calendar tier (see `QuotaLedger.allowanceEnd`).
   */
  readonly until?: number;
}

/**
 * What a flush saves and folds the workers' reports into: the run's ledger and call slots, reached directly, and the
 * pacer, which settles a report in both and keeps what it hands back for smoothing (see `Pacer.settle`).
 */
export type SyncedQuota = Pick<RunQuota, 'ledger' | 'slots' | 'limits' | 'override'> & {
  readonly pacer: Pick<Pacer, 'settle' | 'limitTo'>;
};

/**
 * The stores a ledger sync uses: the ledger, the lease it renews and releases, and the limit readings it learns
 * from.
 */
export type SyncedStores = Pick<GuardedStores, 'lease' | 'ledger' | 'limits'>;

/**
 * Keeps the saved ledger and the lease in step with the run: folds workers' settlements, saves the ledger with the
 * run's allowance, renews the lease, and says what the allowance and the lease let go.
 */
export class LedgerSync {
  private state: LedgerSyncState = 'synced';
  private lastFlushAt: number;
  /** What the last saved ledger holds for this run, and what has been used of it since. */
  private allowance: RunAllowance;
  /** When the workers' reports were last read, by a flush or to free call slots (see {@link LedgerSync.readReports}). */
  private reportsReadAt: number;
  /** Units handed back by the settlements folded since the last `flushed` event. */
  private handedBackUnreported: Record<string, number> = {};
  /**
   * Ids of the settlements read since the last save that succeeded, all folded into the in-memory ledger (or skipped
   * as copies), which the next save names as folded. A save that fails leaves them pending, and the next read does
   * not fold them again (see {@link LedgerSync.fold}).
   */
  private readonly unsaved = new Set<string>();
  /** Whether the run has read the workers' reports yet: its first read is strongly consistent. */
  private readBefore = false;
  /** Settlements folded since the last `flushed` event (a failed flush may have folded some). */
  private foldedUnreported = 0;
  /** Ids of the settlements this run folded, with when, for {@link FOLDED_IDS_KEPT_FOR_WORKER_TIMEOUTS} worker timeouts. */
  private readonly foldedIds = new Map<string, number>();
  /** The limits in force below the run's tiers: learnt at each flush, and overridden by an operator. */
  private readonly limits: RunLimits;

  constructor(
    private readonly run: RunContext,
    private readonly link: StateLink,
    private readonly stores: SyncedStores,
    private readonly quota: SyncedQuota,
    private lease: Lease,
  ) {
    this.allowance = RunAllowance.none(run.config.quotas.length);
    this.limits = new RunLimits(run, stores, quota);
    this.limits.reportStart();
    this.lastFlushAt = run.clock.now();
    this.reportsReadAt = this.lastFlushAt;
  }

  /** When the workers' reports (the pending settlements) were last read. */
  get lastReportsReadAt(): number {
    return this.reportsReadAt;
  }

  /**
   * Reads the workers' reports between flushes and folds them in, so that the slots of calls that have ended are
   * free at once (the next save names them). When the ids read since the last save leave no room for a full read, it
   * flushes instead, which saves them and reads on. A failure is left to the next flush.
   */
  async readReports(): Promise<void> {
    if (!this.roomToRead()) await this.tryFlush();
    else await this.link.attempt(() => this.foldSettlements());
  }

  /** Whether a flush is due at `now`: after a failed one, on schedule, and in any case before the lease could expire. */
  flushDue(now: number): boolean {
    const { flushIntervalMs } = this.run.settings;
    return (
      this.state !== 'synced' ||
      now - this.lastFlushAt >= flushIntervalMs ||
      now >= this.lease.expiresAt - flushIntervalMs
    );
  }

  /** When the store is next called: the next try during an outage, else the next flush. */
  nextStoreCallAt(): number {
    const side = this.link.side;
    return side.kind === 'outage' ? side.retryAt : this.lastFlushAt + this.run.settings.flushIntervalMs;
  }

  /**
   * Folds in what the workers recorded of the API's limits now, between flushes (see `RunLimits.learn`): after a 429,
   * whose answer may have announced a lower limit. Not during a state outage: the next flush does it.
   */
  async learnNow(now: number): Promise<void> {
    if (this.link.side.kind === 'in-sync') await this.limits.learn(now);
  }

  /** {@link LedgerSync.flush} under {@link StateLink.attempt}; false when the store failed. */
  async tryFlush(options?: FlushOptions): Promise<boolean> {
    const flushed = (await this.link.attempt(() => this.flush(options))) !== undefined;
    if (!flushed && this.state === 'synced') this.state = 'unsaved';
    return flushed;
  }

  /** Releases the lease, so that the next run need not wait for it to expire. */
  releaseLease(): Promise<void> {
    return this.stores.lease.releaseLease(this.lease);
  }

  /** For each tier, whether `units` fit what is left at `now` of the allowance the last saved ledger holds. */
  allowed(now: number, units: readonly number[]): boolean[] {
    return this.allowance.allows(now, units);
  }

  /** Whether `amount` fits what is left at `at` of the saved allowance, on every tier and in call slots. */
  covers(at: number, amount: Amount): boolean {
    return this.allowed(at, amount.units).every(Boolean) && this.slotAllowed(at, amount.slots);
  }

  /**
   * Whether a message whose units fit the saved allowance on the tiers marked in `allowed` may go at `now`: never on
   * an expired lease, and during a state outage (see the state-outage policy of {@link StateLink}) only as
   * `orchestrator.stateOutage` allows. Under `pace-in-memory` (the default), it goes only if, for every tier, either
   * - its units fit the allowance the last *saved* ledger holds (see {@link LedgerSync.flush}), which a successor
   *   counts; or
   * - the tier slides and `now + arrivalMarginMs + window <= lease.expiresAt`: a successor may only dispatch from the
   *   expiry of the last renewed lease, so no window of its dispatches can hold this one.
   *
   * Day, month and long sliding tiers therefore never go past quota already reserved, short tiers keep being paced on
   * the in-memory ledger, and nothing goes at or after `lease.expiresAt` (a renewal that succeeds later resumes the
   * run; one that finds the lease taken over ends it). Under `pause`, nothing is dispatched from the first failed
   * state call until recovery.
   */
  mayDispatch(now: number, allowed: readonly boolean[]): boolean {
    if (now >= this.lease.expiresAt) return false;
    if (this.link.side.kind === 'in-sync') return true;
    if (this.run.settings.stateOutage === 'pause') return false;
    const { config } = this.run;
    // A successor dispatches from lease.expiresAt on: a sliding window that closes by then (allowing for this call to
    // arrive up to arrivalMarginMs late) cannot hold its calls too.
    const closesBy = now + config.pacing.arrivalMarginMs;
    return config.quotas.every((tier, i) => allowed[i] === true || tier.windowClosesBy(closesBy, this.lease.expiresAt));
  }

  /** Whether `count` more call slots, at `slot`, fit what is left of the saved allowance; always without a cap on calls in flight. */
  slotAllowed(slot: number, count: number): boolean {
    return this.quota.slots === undefined || this.allowance.allowsSlots(slot, count);
  }

  /** Counts `units` per tier, and a call slot, as used of the allowance: one dispatch. */
  use(units: readonly number[]): void {
    this.allowance = this.allowance.use(units);
  }

  /** Gives back what {@link LedgerSync.use} counted for a dispatch that never started. */
  giveBack(units: readonly number[]): void {
    this.allowance = this.allowance.giveBack(units);
  }

  /**
   * Folds in workers' settlements, saves the ledger and renews the lease, all fenced by the lease token. Each save
   * also removes the settlements folded into it, so that a run killed at any instant leaves every settlement either
   * in the saved ledger or pending for its successor. A backlog larger than one save takes further saves, at most
   * {@link MAX_SAVES_PER_FLUSH} in all; the rest waits for the next flush.
   *
   * Unless `final`, the saved ledger also holds a fresh allowance for the next `2 × flushIntervalMs`, or up to
   * `until` and a flush interval past it (see {@link allowanceSpanMs}), in units and in call slots (see
   * {@link RunAllowance.next}). A run killed before its next flush can only
   * have dispatched within that allowance, which its successor counts. The allowance takes effect only once the save
   * succeeded. A save that fails may still have landed, so until a later one succeeds the run keeps within both the
   * previous allowance and the attempted one (see {@link RunAllowance.boundBy}).
   * After a save whose lease renewal (or further save) failed, the next flush (unless final) only renews: the saved
   * ledger stands.
   */
  private async flush({ final = false, need = NOTHING_NEEDED, until }: FlushOptions = {}): Promise<void> {
    if (this.state === 'saved-unrenewed' && !final) return this.renew();
    let more = await this.foldSettlements();
    const now = this.run.clock.now();
    const granted = final
      ? undefined
      : this.allowance.next(
          this.quota.ledger.allowanceEnd(now, allowanceSpanMs(now, until, this.run.settings.flushIntervalMs)),
          need,
        );
    await this.limits.learn(now);
    try {
      await this.save(granted);
    } catch (error) {
      this.allowance = this.allowance.boundBy(granted);
      throw error;
    }
    if (granted !== undefined) this.allowance = granted;
    this.state = 'saved-unrenewed';
    for (let saves = 1; more && saves < MAX_SAVES_PER_FLUSH; saves++) {
      more = await this.foldSettlements();
      if (this.unsaved.size === 0) break;
      await this.save(granted);
    }
    await this.renew();
  }

  /**
   * Saves the ledger holding the units of `allowance`, and on a lane with `maxInFlight` the calls in progress holding
   * its call slots, naming the settlements read since the last save (folded into it) as folded; takes the operator's
   * override the save found (see `RunLimits.overrideSeen`).
   */
  private async save(allowance: RunAllowance | undefined): Promise<void> {
    const { ledger, slots, limits } = this.quota;
    const snapshot = ledger.snapshot(allowance && { until: allowance.until, units: allowance.granted.units });
    const heldSlots = allowance && { until: allowance.until, count: allowance.granted.slots };
    const saved = {
      ...snapshot,
      ...(slots === undefined ? {} : { slots: slots.toJSON(heldSlots) }),
      ...(limits === undefined ? {} : { learned: limits.toJSON() }),
    };
    const folded = [...this.unsaved];
    const seen = await this.stores.ledger.saveLedger(this.run.config.lane, saved, this.lease.token, folded);
    for (const id of folded) this.unsaved.delete(id);
    if (seen !== undefined) this.limits.overrideSeen(this.run.clock.now(), seen.override);
  }

  /**
   * Renews the lease once less than half its lifetime is left (a flush is due at least every `flushIntervalMs`, at
   * most a third of it). Before that, the fenced save just made says the lease is current, and a renewal would only
   * cost a write of the lane item.
   */
  private async renew(): Promise<void> {
    const now = this.run.clock.now();
    const { leaseTtlMs } = this.run.settings;
    if (now >= this.lease.expiresAt - leaseTtlMs / 2)
      this.lease = await this.stores.lease.renewLease(this.lease, now, leaseTtlMs);
    this.state = 'synced';
    this.lastFlushAt = now;
    const learned = this.quota.limits?.describe(now);
    const usage = this.quota.ledger.usage(now).map(({ tier, used }, i) => {
      const inForce = learned?.[i];
      return {
        tier: tierLabel(tier),
        kind: tier.kind,
        used,
        limit: tier.limit,
        ...(inForce === undefined || inForce.limit === tier.limit
          ? {}
          : { learned: { limit: inForce.limit, source: inForce.source, since: inForce.since } }),
      };
    });
    const { slots } = this.quota;
    this.run.report({
      type: 'flushed',
      at: now,
      settlements: this.foldedUnreported,
      handedBack: this.handedBackUnreported,
      usage,
      ...(slots === undefined ? {} : { inFlight: slots.inFlight(now) }),
    });
    this.foldedUnreported = 0;
    this.handedBackUnreported = {};
  }

  /**
   * Settles `settlement` in the ledger, unless a settlement of the same id was folded lately: then it is a second copy
   * of one write (an append retried after it landed), and the save that follows removes it unapplied.
   */
  private fold(settlement: Settlement): void {
    const now = this.run.clock.now();
    const keptMs = FOLDED_IDS_KEPT_FOR_WORKER_TIMEOUTS * this.run.settings.workerTimeoutMs;
    for (const [id, at] of this.foldedIds) {
      if (at > now - keptMs) break;
      this.foldedIds.delete(id);
    }
    if (settlement.id !== undefined) {
      if (this.foldedIds.has(settlement.id)) return;
      this.foldedIds.set(settlement.id, now);
    }
    this.quota.pacer.settle(settlement, now);
    if (settlement.actual !== null) addCosts(this.handedBackUnreported, handedBack(settlement));
  }

  /** Whether the next save has room for the ids of one more full read. */
  private roomToRead(): boolean {
    return this.unsaved.size <= MAX_FOLDED_PER_SAVE - MAX_PENDING_SETTLEMENTS;
  }

  /**
   * Reads pending settlements and folds into the ledger those not folded before. While the ids read since the last
   * save leave no room for a full read in the next save, it reads nothing: the next save comes first.
   * @returns whether more may be pending: the read came back full, or there was no room for it.
   */
  private async foldSettlements(): Promise<boolean> {
    if (!this.roomToRead()) return true;
    this.reportsReadAt = this.run.clock.now();
    const pending = await this.stores.ledger.pendingSettlements(this.run.config.lane, {
      first: !this.readBefore,
      skip: this.unsaved,
    });
    this.readBefore = true;
    for (const settlement of pending) {
      // The store names every settlement it returns.
      const id = settlement.id as string;
      if (this.unsaved.has(id)) continue;
      this.unsaved.add(id);
      this.fold(settlement);
      this.foldedUnreported++;
    }
    return pending.length === MAX_PENDING_SETTLEMENTS;
  }
}

/**
 * For how many worker timeouts a folded settlement's id is remembered. A worker records its settlement, and the SDK
 * and the worker retry that append, only while the worker runs, so within one worker timeout of the first copy
 * landing, which is before it is folded:
 *
 *   worker starts ── copy 1 lands (answer lost) ── run folds copy 1 ── retry lands copy 2 ── worker times out
 *                                                   └──────── copy 2 skipped: its id is remembered ────────┘
 *
 * Twice that, for the clocks of the worker and the orchestrator, which run on different hosts.
 */
const FOLDED_IDS_KEPT_FOR_WORKER_TIMEOUTS = 2;

/**
 * How far ahead of `now` a flush grants its allowance: `2 × flushIntervalMs`, or, asked to reach the slot `until`,
 * that slot and a flush interval more. A slot is taken the dispatch lead ahead of the instant it is taken, so the
 * next head's slot lies a little further on than this one's: an allowance that ended at `until` would miss it, and a
 * lead grown past twice the flush interval (a slow table) would then flush again for every slot, dispatching nothing.
 */
export function allowanceSpanMs(now: number, until: number | undefined, flushIntervalMs: number): number {
  return Math.max(2 * flushIntervalMs, until === undefined ? 0 : until - now + flushIntervalMs);
}
