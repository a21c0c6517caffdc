import type { ServiceConfig } from '../../config';
import type { Clock } from '../../ports/Clock';
import { LanePools } from './lanePools';
import { PoolRun, type PoolStores } from './poolRun';
import type { RunOptions } from './types';

/** What a lane's run joins its pools with. */
export interface PoolJoin {
  /** The lane's settings: its `pools` are joined, and its orchestrator's settings are theirs. */
  readonly config: ServiceConfig;
  readonly clock: Clock;
  /** The invocation's lease owner. */
  readonly owner: string;
  /** Randomness in [0, 1) for the jitter of a 429 pause. */
  readonly random: () => number;
  readonly options: RunOptions;
  /** The lane's stores: a pool opened for it is read and saved through them (they know its settlement shards). */
  readonly stores: PoolStores;
}

/** An open pool, and how many lane runs draw from it. */
interface OpenPool {
  readonly run: Promise<PoolRun | 'held-elsewhere' | 'unavailable'>;
  users: number;
}

/**
 * The pools of one orchestrator's lanes (see `ServiceConfig.pools`): a pool is opened (its lease taken, its ledger
 * rehydrated: see `PoolRun.open`) when the first lane run that draws from it starts, shared by every lane run of the
 * invocation that does, and closed (its final flush, its lease released) once the last of them has ended.
 */
export class PoolHub {
  private readonly open = new Map<string, OpenPool>();

  /**
   * Joins the pools of `join.config`, opening those not open yet.
   * @returns the lane's pools, which it leaves when its run ends (see `LanePools.leave`); `held-elsewhere` when
   * another orchestrator holds a pool's lease, `unavailable` when the store failed (the pools joined are left).
   * @throws StateFormatError when a pool's stored ledger cannot be read.
   */
  async join(join: PoolJoin): Promise<LanePools | 'held-elsewhere' | 'unavailable'> {
    const pools = join.config.pools ?? [];
    if (pools.length === 0) return LanePools.NONE;
    const joined: string[] = [];
    const runs: { run: PoolRun; weight: number }[] = [];
    for (const pool of pools) {
      const open = this.opened(join, pool.name);
      joined.push(pool.name);
      const run = await open.run;
      if (typeof run === 'string') {
        if (this.open.get(pool.name) === open) this.open.delete(pool.name);
        await this.leave(joined);
        return run;
      }
      runs.push({ run, weight: pool.weight ?? 1 });
    }
    return new LanePools(join.config.lane, runs, () => this.leave(joined));
  }

  /** The open pool `name`, opened now if it is not, with one more user. */
  private opened({ config, clock, owner, options, stores, random }: PoolJoin, name: string): OpenPool {
    let open = this.open.get(name);
    if (open === undefined) {
      const pool = config.pools?.find((p) => p.name === name);
      if (pool === undefined) throw new Error(`lane ${config.lane} names no pool ${name}`);
      open = { run: PoolRun.open({ config, pool, stores, clock, owner, random }, options), users: 0 };
      this.open.set(name, open);
    }
    open.users++;
    return open;
  }

  /** One user fewer of each pool of `names`; a pool left by its last is closed. */
  private async leave(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const open = this.open.get(name);
      if (open === undefined || --open.users > 0) continue;
      this.open.delete(name);
      const run = await open.run;
      if (typeof run !== 'string') await run.close();
    }
  }
}
