/**
 * WIP (branch pools-wip): not used by the dispatcher yet.
 *
 * A pool's part in one orchestrator invocation (see `ServiceConfig.pools`): its lease, its ledger and the allowance
 * its saved ledger holds, kept as a lane's run keeps them (`LedgerSync`: fenced saves, folded settlements, an
 * allowance saved before it is used), for every lane run of the invocation that draws from it. A pool's state is a
 * lane's, named {@link poolStateName}: a successor that rehydrates it after a crash counts whatever was dispatched
 * within its saved allowance, as for a lane.
 */
import type { PoolConfig, ServiceConfig } from '../../config';
import type { Hold } from '../../domain/pacing/pacer';
import type { Reservation } from '../../domain/quota/ledger';
import { unitsFor, type Costs } from '../../domain/quota/tiers';
import { StateUnavailableError } from '../../errors';
import type { Clock } from '../../ports/Clock';
import { LedgerSync, type FlushOptions } from './ledgerSync';
import { rehydrate } from './rehydrate';
import { RunContext } from './runContext';
import { StateLink } from './stateLink';
import type { GuardedStores, OrchestratorEvent, RunOptions, RunQuota } from './types';

/** The state name of pool `pool`: `pool:<name>`, which no lane's name can be (a lane's has no ':'). */
export function poolStateName(pool: string): string {
  return `pool:${pool}`;
}

/** What a pool run needs. */
export interface PoolRunDeps {
  /** The settings of a lane that draws from the pool: its orchestrator's, pacing's and time zone's are the pool's. */
  readonly config: ServiceConfig;
  readonly pool: PoolConfig;
  readonly stores: Pick<GuardedStores, 'lease' | 'ledger'>;
  readonly clock: Clock;
  readonly owner: string;
  readonly onEvent?: (event: OrchestratorEvent) => void;
}

/** A pool's quota while lane runs draw from it (see the module's comment). */
export class PoolRun {
  private flushing: Promise<boolean> | undefined;

  private constructor(
    private readonly run: RunContext,
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
    const config: ServiceConfig = {
      ...deps.config,
      lane: poolStateName(pool.name),
      quotas: pool.quotas,
    };
    delete (config as { maxInFlight?: number }).maxInFlight;
    delete (config as { pools?: unknown }).pools;
    const run = new RunContext(
      { clock, config, ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }) },
      options,
    );
    try {
      const lease = await stores.lease.acquireLease(config.lane, owner, clock.now(), config.orchestrator.leaseTtlMs);
      if (lease === null) return 'held-elsewhere';
      const saved = await stores.ledger.loadLedger(config.lane);
      const quota = rehydrate(config, saved, clock.now());
      const sync = new LedgerSync(run, new StateLink(run), stores, quota, lease);
      return new PoolRun(run, sync, quota);
    } catch (error) {
      if (error instanceof StateUnavailableError) return 'unavailable';
      throw error;
    }
  }

  /** Units per tier of the pool that `costs` take. */
  units(costs: Costs): number[] {
    return this.run.config.quotas.map((tier) => unitsFor(tier, costs));
  }

  /** The earliest slot from `at` at which `costs` fit the pool's tiers. */
  nextSlot(at: number, costs: Costs): number {
    return this.quota.pacer.nextSlot(at, costs);
  }

  /** What holds `costs` back at `now`, if anything. */
  blockedUntil(now: number, costs: Costs): Hold | undefined {
    return this.quota.pacer.blockedUntil(now, costs);
  }

  /** Whether the saved allowance covers `count` dispatches of `costs` at `slot`, and the lease lets them go. */
  covers(slot: number, costs: Costs, count = 1): boolean {
    const units = this.units(costs).map((u) => u * count);
    return this.sync.covers(slot, { units, slots: 0 }) && this.sync.mayDispatch(slot, this.sync.allowed(slot, units));
  }

  /** Flushes the pool (at most one flush at a time, whichever lane asks); false when the store failed. */
  flush(options?: FlushOptions): Promise<boolean> {
    this.flushing ??= this.sync.tryFlush(options).finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  /** Whether a flush is due at `now` (see `LedgerSync.flushDue`). */
  flushDue(now: number): boolean {
    return this.sync.flushDue(now);
  }

  /** Reserves `costs` at `slot` in the pool, counted against its saved allowance. */
  reserve(slot: number, costs: Costs): Reservation {
    this.sync.use(this.units(costs));
    return this.quota.pacer.dispatch(slot, costs);
  }

  /** Gives back a reservation whose dispatch never started. */
  giveBack(reservation: Reservation): void {
    this.quota.pacer.settle({ reservation, actual: null }, this.run.clock.now());
    this.sync.giveBack(this.units(reservation.costs));
  }

  /** The final flush, then the lease's release once it saved. */
  async close(): Promise<void> {
    await this.flushing;
    if (await this.sync.tryFlush({ final: true })) await this.sync.releaseLease().catch(() => undefined);
  }
}
