import { StateUnavailableError } from '../../errors';
import { loadCircuit } from '../circuitUpdates';
import { Backoff } from './backoff';
import { guardQueues, guardStores } from './guardedPorts';
import { OrchestratorRun } from './orchestratorRun';
import { rehydrate, runConfig } from './rehydrate';
import { RunContext } from './runContext';
import type { GuardedStores, OrchestratorDeps, RunOptions, RunSummary } from './types';
import type { Lease } from '../../ports/LeaseStore';
import { LanePools } from './lanePools';
import type { PoolHub } from './poolHub';

/** What a lane's run needs: the orchestrator's dependencies, and in a deployment of several lanes the pools' hub. */
export type LaneRunDeps = OrchestratorDeps & {
  /** The pools of the deployment's lanes, which a lane that draws from pools joins (see `ServiceConfig.pools`). */
  readonly pools?: PoolHub;
};

const NOTHING_DONE = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 } as const;

/**
 * One orchestrator run (steps 1–4 of docs/architecture.md): takes the lease, rehydrates the ledger (see `rehydrate`)
 * and the circuit, and hands the lane to {@link OrchestratorRun} until the deadline, which flushes the ledger at exit
 * and releases the lease. Everything the AWS services may throw after the SDK's own retries is absorbed, each by the room it strikes:
 * - a state-store failure, by the state-outage policy (see `StateLink`; what may still be dispatched meanwhile,
 *   `LedgerSync.mayDispatch`); at start, a failed lease, ledger or circuit read is retried as it retries, and at the
 *   deadline the run returns `unavailable`;
 * - a queue failure, by the `Intake`;
 * - quota exhausted for longer than a message's visibility, by the `QuotaGate`;
 * - an invoke that failed or was refused, by the `Dispatcher` (see `Dispatcher.invoke`).
 *
 * Only a lost lease ({@link LeaseLostError}), a corrupt stored item ({@link StateFormatError}: retrying cannot mend
 * it, and a ledger that cannot be read cannot bound a dispatch, so it surfaces as the run's error for the alarms)
 * and genuine bugs end a run early.
 *
 * @throws StateFormatError when a stored ledger or circuit cannot be read; any error that is none of the above.
 */
export async function runOrchestrator(deps: LaneRunDeps, options: RunOptions): Promise<RunSummary> {
  const run = new RunContext(deps, options);
  const { clock, config } = run;
  const stores = guardStores(deps.stores);
  const retry = new Backoff(config.orchestrator.invokeBackoffMs);
  const untilDeadline = <T>(call: () => Promise<T>) => retryUntilDeadline(run, retry, call);

  const acquired = await untilDeadline(() =>
    stores.lease.acquireLease(config.lane, deps.owner, clock.now(), config.orchestrator.leaseTtlMs),
  );
  if (acquired === undefined) return { lease: 'unavailable', ...NOTHING_DONE };
  const lease = acquired.value;
  if (lease === null) return { lease: 'held-elsewhere', ...NOTHING_DONE };
  const saved = await untilDeadline(() => stores.ledger.loadLedger(config.lane));
  const circuit = saved === undefined ? undefined : await untilDeadline(() => loadCircuit(stores.circuit, config.lane));
  if (saved === undefined || circuit === undefined) {
    await releaseUnused(stores, lease);
    return { lease: 'unavailable', ...NOTHING_DONE };
  }
  const pools = await joinPools(deps, stores, options);
  if (typeof pools === 'string') {
    await releaseUnused(stores, lease);
    return { lease: pools, ...NOTHING_DONE };
  }
  const { invoker, newId, random } = deps;
  const ports = { stores, queues: guardQueues(deps.queues), invoker, newId, random };
  const quota = rehydrate(config, saved.value, clock.now());
  // The run goes by the tiers as the operator's override sets them.
  const laneRun = new RunContext({ ...deps, config: runConfig(config, quota) }, options);
  try {
    return await new OrchestratorRun(laneRun, ports, lease, quota, circuit.value, pools).execute();
  } finally {
    await pools.leave();
  }
}

/**
 * The pools the lane draws from, joined (see `PoolHub.join`); none without pools. A lane with pools but no hub (a
 * one-lane deployment cannot name pools) is a wiring bug.
 */
async function joinPools(
  deps: LaneRunDeps,
  stores: GuardedStores,
  options: RunOptions,
): Promise<LanePools | 'held-elsewhere' | 'unavailable'> {
  const { config, clock, owner } = deps;
  if (config.pools === undefined) return LanePools.NONE;
  if (deps.pools === undefined) throw new Error(`lane ${config.lane} draws from pools, and the run has no pool hub`);
  return deps.pools.join({ config, clock, owner, options, stores, random: deps.random });
}

/** Releases `lease`, taken by a run that dispatched nothing: the next run need not wait for it to expire, if the store lets it go. */
async function releaseUnused(stores: GuardedStores, lease: Lease): Promise<void> {
  await stores.lease.releaseLease(lease).catch((error: unknown) => {
    if (!(error instanceof StateUnavailableError)) throw error;
  });
}

/**
 * Calls `call` until it succeeds, backing off with `retry` after each store failure (reported `state-unavailable`, as
 * `StateLink` reports the run's); `undefined` once the deadline comes first (or `shouldStop` says so).
 */
async function retryUntilDeadline<T>(
  run: RunContext,
  retry: Backoff,
  call: () => Promise<T>,
): Promise<{ readonly value: T } | undefined> {
  const { clock, options } = run;
  for (;;) {
    try {
      const value = await call();
      retry.reset();
      return { value };
    } catch (error) {
      if (!(error instanceof StateUnavailableError)) throw error;
      const now = clock.now();
      const retryAt = now + retry.next();
      run.report({ type: 'state-unavailable', at: now, operation: error.operation, error: error.message, retryAt });
      if (retryAt >= options.deadline || (options.shouldStop?.() ?? false)) return undefined;
      await clock.sleep(retryAt - now);
    }
  }
}
