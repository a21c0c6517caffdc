import type { PoolConfig, ServiceConfig } from '../../config';
import type { Hold } from '../../domain/pacing/pacer';
import type { Reservation } from '../../domain/quota/ledger';
import { poolStateName } from '../../domain/quota/poolSettlements';
import { PoolTurns } from '../../domain/quota/poolTurns';
import { unitsFor, type Costs, type Tier } from '../../domain/quota/tiers';
import { LeaseLostError, StateUnavailableError } from '../../errors';
import type { Clock } from '../../ports/Clock';
import { loadCircuit } from '../circuitUpdates';
import { LedgerSync, type FlushOptions } from './ledgerSync';
import { rehydrate, runConfig } from './rehydrate';
import { RunContext } from './runContext';
import { StateLink } from './stateLink';
import type { GuardedStores, OrchestratorEvent, RunOptions, RunQuota } from './types';

/** The stores a pool run uses: the pool's lease, its ledger and settlements, and its 429 pause (its circuit item). */
export type PoolStores = Pick<GuardedStores, 'lease' | 'ledger' | 'circuit' | 'limits'>;

/** What a pool run needs. */
export interface PoolRunDeps {
  /** The settings of a lane that draws from the pool: its orchestrator's, pacing's and time zone's are the pool's. */
  readonly config: ServiceConfig;
  readonly pool: PoolConfig;
  readonly stores: PoolStores;
  readonly clock: Clock;
  /** The lease owner: the invocation's, as its lanes'. */
  readonly owner: string;
  /** Randomness in [0, 1) for the jitter of a 429 pause. */
  readonly random: () => number;
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
    private readonly deps: PoolRunDeps,
    private readonly run: RunContext,
    private readonly link: StateLink,
    private readonly sync: LedgerSync,
    private readonly quota: RunQuota,
  ) {}

  /** The pool's name. */
  get name(): string {
    return this.deps.pool.name;
  }

  /**
   * Takes the pool's lease and rehydrates its ledger.
   * @returns the run, `held-elsewhere` when another orchestrator holds the lease, `unavailable` when the store failed.
   * @throws StateFormatError when the stored ledger cannot be read.
   */
  static async open(deps: PoolRunDeps, options: RunOptions): Promise<PoolRun | 'held-elsewhere' | 'unavailable'> {
    const { pool, clock, stores, owner } = deps;
    const config = poolSettings(deps.config, pool);
    const { leaseTtlMs } = config.orchestrator;
    try {
      const lease = await stores.lease.acquireLease(config.lane, owner, clock.now(), leaseTtlMs);
      if (lease === null) return 'held-elsewhere';
      const quota = rehydrate(config, await stores.ledger.loadLedger(config.lane), clock.now());
      // The pool goes by its tiers as the operator's override sets them.
      const run = new RunContext(
        { clock, config: runConfig(config, quota), ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }) },
        options,
      );
      const link = new StateLink(run);
      return new PoolRun(deps, run, link, new LedgerSync(run, link, stores, quota, lease), quota);
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
   * Whether the pool's room (its tiers, or its 429 pause) sets the slot of a dispatch of `costs` from `at` later: not
   * merely the order of its slots, which never go back before the latest reserved (another lane's reservation a
   * millisecond later is no contest for the pool).
   */
  holdsBack(at: number, costs: Costs): boolean {
    const from = Math.ceil(Math.max(at, this.quota.pacer.lastSlot));
    return this.nextSlot(from, costs) > from;
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
   * Flushes the pool, one flush at a time whichever lane asks (a second caller shares the first's), then, for a pool
   * whose `rateLimitScope` is `pool`, reads the 429 pause its lanes' workers wrote (see {@link PoolRun.readPause});
   * ends an outage once both succeed. @returns false when the store failed.
   * @throws LeaseLostError when another orchestrator took the pool's lease over.
   */
  flush(options?: FlushOptions): Promise<boolean> {
    this.flushing ??= this.flushAndRead(options).finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushAndRead(options?: FlushOptions): Promise<boolean> {
    const synced = (await this.sync.tryFlush(options)) && (await this.readPause());
    if (synced) this.link.recovered();
    return synced;
  }

  /**
   * Reads the pool's 429 pause, if its `rateLimitScope` is `pool`: a worker of any of its lanes that got a 429 wrote
   * it to the pool's circuit item (see `reportFailure`), and no lane reserves in the pool until it ends. A pool reads
   * it at each flush, about every `flushIntervalMs`. @returns false when the store failed.
   */
  private async readPause(): Promise<boolean> {
    if (this.deps.pool.rateLimitScope !== 'pool') return true;
    const read = await this.link.attempt(() => loadCircuit(this.deps.stores.circuit, this.run.config.lane));
    if (read !== undefined) this.quota.pacer.pause(read.value.pausedUntil, this.deps.random);
    return read !== undefined;
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
    // What the API's answers say is recorded per lane: a pool learns nothing of its own.
    limits: { ...lane.limits, learn: 'off' },
  };
  delete config.maxInFlight;
  delete config.pools;
  return config;
}
