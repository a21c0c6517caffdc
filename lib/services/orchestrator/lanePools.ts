import type { Hold } from '../../domain/pacing/pacer';
import type { Reservation } from '../../domain/quota/ledger';
import type { Costs, Tier } from '../../domain/quota/tiers';
import type { PoolRun } from './poolRun';
import type { RunContext } from './runContext';

/**
 * Most rounds of {@link LanePools.slot}'s search for a slot that the lane and every pool agree on: each round moves it
 * on to where one of them has room, so it settles within as many rounds as there are reservations in the way.
 */
const MAX_SLOT_ROUNDS = 1_000;

/**
 * The pools one lane's run draws from (see `ServiceConfig.pools`), as its dispatcher and quota gate see them: a
 * dispatch goes at a slot where the lane's tiers and every pool's have room, in its turn in each pool (see
 * `PoolTurns`), and reserves in all of them at once (no await between: another lane's run cannot take the slot
 * meanwhile); a dispatch that never started gives back to all of them. A lane without pools has {@link LanePools.NONE}.
 */
export class LanePools {
  /** No pools: the lane's own tiers alone bound it. */
  static readonly NONE = new LanePools('', [], () => Promise.resolve());

  /** The pools' runs. */
  private readonly runs: readonly PoolRun[];

  /**
   * @param weighted the pools, each with the lane's weight in it (see `PoolConfig.weight`).
   */
  constructor(
    private readonly lane: string,
    private readonly weighted: readonly { readonly run: PoolRun; readonly weight: number }[],
    /** Tells the pools' hub that the lane's run has ended (see `PoolHub.join`). */
    private readonly left: () => Promise<void>,
  ) {
    this.runs = weighted.map(({ run }) => run);
  }

  /** The lane's run has ended: its claims are withdrawn, and the hub told (see `PoolHub.join`). */
  async leave(): Promise<void> {
    this.withdraw();
    await this.left();
  }

  /**
   * The lane no longer waits for a slot (its circuit or its quota holds its work back, or it has none): its claims
   * are withdrawn, so that the other lanes need not wait for them to lapse.
   */
  withdraw(): void {
    for (const pool of this.runs) pool.turns.withdraw(this.lane);
  }

  /**
   * How far ahead of its slots the lane dispatches, its own lead being `leadMs`: the longest lead of the lanes of its
   * pools (see `PoolTurns.commonLead`), so that every lane reserves in a pool in the order of its slots.
   */
  lead(leadMs: number): number {
    return this.runs.reduce((lead, pool) => Math.max(lead, pool.turns.commonLead(this.lane, leadMs)), leadMs);
  }

  /** Every pool's tiers, pool by pool. */
  get tiers(): readonly Tier[] {
    return this.runs.flatMap((pool) => pool.tiers);
  }

  /**
   * The earliest slot from `at` at which `costs` fit the lane (`laneSlot`, its pacer's `nextSlot`) and every pool;
   * `Infinity` when they never fit one of them. The lane claims it in each pool (see `PoolTurns.claim`), held back by
   * the pool when the pool sets it later than the lane's own tiers would, or has no room either a spacing before
   * (the lanes compete for it there); it withdraws its claim when there is no slot.
   */
  slot(at: number, costs: Costs, laneSlot: (at: number) => number): number {
    const own = laneSlot(at);
    let slot = own;
    if (this.runs.length === 0) return slot;
    for (let round = 0; round < MAX_SLOT_ROUNDS && Number.isFinite(slot); round++) {
      const agreed = this.runs.reduce((latest, pool) => Math.max(latest, pool.nextSlot(latest, costs)), slot);
      if (agreed === slot) break;
      slot = laneSlot(agreed);
    }
    for (const pool of this.runs) {
      if (!Number.isFinite(slot)) {
        pool.turns.withdraw(this.lane);
        continue;
      }
      // Contested: the pool's room, not the lane's own tiers, sets the slot, or would if the lane's were a little sooner.
      pool.turns.claim(this.lane, slot, pool.holdsBack(own - pool.spacing(costs), costs));
    }
    return slot;
  }

  /** What holds `costs` back at `now` in the lane (`laneHold`) or a pool: the one that holds longest. */
  blockedUntil(now: number, laneHold: Hold | undefined, costs?: Costs): Hold | undefined {
    return this.runs.reduce<Hold | undefined>((latest, pool) => {
      const hold = pool.blockedUntil(now, costs);
      return hold !== undefined && (latest === undefined || hold.until > latest.until) ? hold : latest;
    }, laneHold);
  }

  /** The units used of each pool's tiers at `now` (see `QuotaLedger.usage`). */
  usage(now: number): ReturnType<PoolRun['usage']> {
    return this.runs.flatMap((pool) => pool.usage(now));
  }

  /**
   * Whether every pool may reserve `count` dispatches of `costs` at `slot` (see `PoolRun.ready`), and it is the lane's
   * turn there at `now` (see {@link LanePools.turnBound}).
   */
  ready(slot: number, costs: Costs, now: number, count = 1): boolean {
    return this.runs.every((pool) => pool.ready(slot, costs, count) && this.inTurn(pool, slot, costs, now));
  }

  /**
   * Whether the lane may take `slot` for `costs` in `pool` at `now`: far enough (the pool's spacing) before the claim
   * of a lane whose turn comes first and whom the pool holds back (see `PoolTurns`) not to push it back.
   */
  private inTurn(pool: PoolRun, slot: number, costs: Costs, now: number): boolean {
    return slot < pool.turns.bound(this.lane, now) - pool.spacing(costs);
  }

  /**
   * Makes the pools that are not {@link LanePools.ready} for `count` dispatches of `costs` at `slot` ready, as far as
   * it can: where it is another lane's turn, it waits for that lane (see `PoolTurns`); a pool that another lane's run
   * has since filled at `slot` needs nothing (the slot is looked for afresh); one whose store failed lately is waited
   * for; the others flush, their saved allowance reaching `slot` and holding the dispatches. One that a flush cannot
   * make ready (the slot is in the next window of a calendar tier) is waited out until its next flush.
   */
  async prepare(run: RunContext, slot: number, costs: Costs, count: number): Promise<void> {
    for (const pool of this.runs) {
      const now = run.clock.now();
      // Another lane's turn: look again once it has taken its slot, withdrawn, or let its claim lapse.
      if (!this.inTurn(pool, slot, costs, now))
        return Promise.race([pool.turns.whenChanged(), run.sleepUntil(pool.turns.bound(this.lane, now) + 1)]);
      if (pool.ready(slot, costs, count) || pool.nextSlot(slot, costs) !== slot) continue;
      if (pool.waiting(now)) return run.sleepUntil(pool.nextStoreCallAt());
      const need = { units: pool.units(costs).map((u) => u * count), slots: 0 };
      if ((await pool.flush({ need, until: slot })) && !pool.ready(slot, costs, count))
        return run.sleepUntil(Math.min(slot, pool.nextStoreCallAt()));
    }
  }

  /** Reserves `costs` at `slot` in every pool (see {@link LanePools.ready}): each pool's windows, by pool. */
  reserve(slot: number, costs: Costs): Reservation['pools'] {
    if (this.runs.length === 0) return undefined;
    return Object.fromEntries(
      this.weighted.map(({ run, weight }) => [run.name, run.reserve(this.lane, slot, costs, weight).windows]),
    );
  }

  /** Gives `reservation`'s part in every pool back: its dispatch never started. */
  giveBack(reservation: Reservation): void {
    for (const pool of this.runs) {
      const windows = reservation.pools?.[pool.name];
      if (windows !== undefined) pool.giveBack({ at: reservation.at, costs: reservation.costs, windows });
    }
  }

  /** Flushes each pool whose flush is due at `now` (see `PoolRun.flushDue`). */
  async flushIfDue(now: number): Promise<void> {
    for (const pool of this.runs) if (pool.flushDue(now)) await pool.flush();
  }
}
