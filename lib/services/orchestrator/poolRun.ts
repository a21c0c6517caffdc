import type { PoolConfig, ServiceConfig } from '../../config';
import type { Hold } from '../../domain/pacing/pacer';
import type { Reservation } from '../../domain/quota/ledger';
import { poolStateName } from '../../domain/quota/poolSettlements';
import { PoolTurns } from '../../domain/quota/poolTurns';
import { unitsFor, type Costs, type Tier } from '../../domain/quota/tiers';
import { LeaseLostError, StateUnavailableError } from '../../errors';
import type { Clock } from '../../ports/Clock';
import { LedgerSync, type FlushOptions } from './ledgerSync';
import { rehydrate } from './rehydrate';
import { RunContext } from './runContext';
import { StateLink } from './stateLink';
import type { GuardedStores, OrchestratorEvent, RunOptions, RunQuota } from './types';

/** The stores a pool run uses: the pool's lease, and its ledger and settlements. */
export type PoolStores = Pick<GuardedStores, 'lease' | 'ledger'>;

/** What a pool run needs. */
export interface PoolRunDeps {
  /** The settings of a lane that draws from the pool: its orchestrator's, pacing's and time zone's are the pool's. */
  readonly config: ServiceConfig;
  readonly pool: PoolConfig;
  readonly stores: PoolStores;
  readonly clock: Clock;
  /** The lease owner: the invocation's, as its lanes'. */
  readonly owner: string;
  readonly onEvent?: (event: OrchestratorEvent) => void;
}

/**
 * A pool's part in one orchestrator invocation (see `ServiceConfig.pools`): its lease, its ledger and the allowance
 * its saved ledger holds, kept as a lane's run keeps them (`LedgerSync`: fenced saves, folded settlements, an
 * allowance saved before it is used), for every lane run of the invocation that draws from it (see `PoolHub`). A
 * pool's state is a lane's, named `poolStateName`: a successor that rehydrates it after a crash counts whatever was
 * dispatched within its saved allowance, as for a lane.
 */
export class PoolRun {
  /** Whose turn it is to reserve, among the lanes that draw from the pool. */
  readonly turns = new PoolTurns();
  private flushing: Promise<boolean> | undefined;

  private constructor(
    readonly name: string,
    private readonly run: RunContext,
    private readonly link: StateLink,
    private readonly sync: LedgerSync,
    private readonly quota: RunQuota,
  ) {}

  /**
   * Takes the pool's lease and rehydrates its ledger.
   * @returns the run, `held-elsewhere` when another orchestrator holds the lease, `unavailable` when the store failed.
   * @throws StateFormatError when the stored ledger cannot be read.
   */
  static async open(deps: PoolRunDeps, options: RunOptions): Promise<PoolRun | 'held-elsewhere' | 'unavailable'> {
    const { pool, clock, stores, owner } = deps;
    const config = poolSettings(deps.config, pool);
    const run = new RunContext(
      { clock, config, ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }) },
      options,
    );
    const { leaseTtlMs } = config.orchestrator;
    try {
      const lease = await stores.lease.acquireLease(config.lane, owner, clock.now(), leaseTtlMs);
      if (lease === null) return 'held-elsewhere';
      const quota = rehydrate(config, await stores.ledger.loadLedger(config.lane), clock.now());
      const link = new StateLink(run);
      return new PoolRun(pool.name, run, link, new LedgerSync(run, link, stores, quota, lease), quota);
    } catch (error) {
      if (error instanceof StateUnavailableError) return 'unavailable';
      throw error;
    }
  }

  /** The pool's tiers. */
  get tiers(): readonly Tier[] {
    return this.run.config.quotas;
  }

  /** Units per tier of the pool that `costs` take. */
  units(costs: Costs): number[] {
    return this.tiers.map((tier) => unitsFor(tier, costs));
  }

  /** The earliest slot from `at` at which `costs` fit the pool's tiers (see `Pacer.nextSlot`). */
  nextSlot(at: number, costs: Costs): number {
    return this.quota.pacer.nextSlot(at, costs);
  }

  /**
   * How far apart the pool's pace sets two dispatches of `costs` (the slowest of its steady tiers, with the arrival
   * margin): a lane may take a slot this far before another lane's claim without pushing the claim back.
   */
  spacing(costs: Costs): number {
    const { arrivalMarginMs } = this.run.config.pacing;
    return Math.max(
      0,
      ...this.tiers.map((tier) => {
        const rate = tier.steadyRate();
        return rate === undefined ? 0 : (unitsFor(tier, costs) * (rate.perMs + arrivalMarginMs)) / rate.units;
      }),
    );
  }

  /** What holds `costs` back at `now`, if anything (see `Pacer.blockedUntil`). */
  blockedUntil(now: number, costs?: Costs): Hold | undefined {
    return this.quota.pacer.blockedUntil(now, costs);
  }

  /** The units used of each tier at `now`. */
  usage(now: number): ReturnType<RunQuota['ledger']['usage']> {
    return this.quota.ledger.usage(now);
  }

  /**
   * Whether `count` dispatches of `costs` may be reserved at `slot`: they fit the pool's tiers there, and its saved
   * allowance and its lease cover them.
   */
  ready(slot: number, costs: Costs, count = 1): boolean {
    const units = this.units(costs).map((u) => u * count);
    return (
      this.nextSlot(slot, costs) === slot &&
      this.sync.covers(slot, { units, slots: 0 }) &&
      this.sync.mayDispatch(slot, this.sync.allowed(slot, units))
    );
  }

  /** Whether the store is left alone at `now`: a failed call's back-off has not run out. */
  waiting(now: number): boolean {
    return this.link.waiting(now);
  }

  /** When the pool's store is next called (see `LedgerSync.nextStoreCallAt`). */
  nextStoreCallAt(): number {
    return this.sync.nextStoreCallAt();
  }

  /**
   * Flushes the pool, one flush at a time whichever lane asks (a second caller shares the first's), and ends an outage
   * once one succeeds. @returns false when the store failed.
   * @throws LeaseLostError when another orchestrator took the pool's lease over.
   */
  flush(options?: FlushOptions): Promise<boolean> {
    this.flushing ??= this.sync
      .tryFlush(options)
      .then((flushed) => {
        if (flushed) this.link.recovered();
        return flushed;
      })
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /** Whether a flush is due at `now` (see `LedgerSync.flushDue`), and the store is not being left alone. */
  flushDue(now: number): boolean {
    return !this.link.waiting(now) && this.sync.flushDue(now);
  }

  /**
   * Reserves `costs` at `slot` in the pool for lane `lane` (see {@link PoolRun.ready}), counted against its saved
   * allowance and in the lanes' turns at the lane's `weight` (its share: the largest part of a tier's limit it takes).
   */
  reserve(lane: string, slot: number, costs: Costs, weight = 1): Reservation {
    const units = this.units(costs);
    const reservation = this.quota.pacer.dispatch(slot, costs);
    this.sync.use(units);
    this.turns.reserved(lane, Math.max(...units.map((u, i) => u / (this.tiers[i]?.limit ?? 1))), weight);
    return reservation;
  }

  /** Gives back the pool's part of a reservation (`reservation.at`, `reservation.costs`, the pool's `windows`) whose dispatch never started. */
  giveBack(reservation: Reservation): void {
    this.quota.pacer.settle({ reservation, actual: null }, this.run.clock.now());
    this.sync.giveBack(this.units(reservation.costs));
  }

  /** The final flush, after any under way, then the lease's release once it saved. */
  async close(): Promise<void> {
    try {
      await this.flushing;
      if (await this.sync.tryFlush({ final: true })) await this.link.attempt(() => this.sync.releaseLease());
    } catch (error) {
      // Another orchestrator took the lease over: what it saved stands, and the lanes' runs have ended on it.
      if (!(error instanceof LeaseLostError)) throw error;
    }
  }
}

/**
 * The settings a pool's run goes by: `lane`'s (its orchestrator's, pacing's, time zone's and units'), with the pool's
 * name and tiers, no cap on calls in flight and no pools of its own.
 */
function poolSettings(lane: ServiceConfig, pool: PoolConfig): ServiceConfig {
  const config: { -readonly [K in keyof ServiceConfig]: ServiceConfig[K] } = {
    ...lane,
    lane: poolStateName(pool.name),
    quotas: pool.quotas,
  };
  delete config.maxInFlight;
  delete config.pools;
  return config;
}
