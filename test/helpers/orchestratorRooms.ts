import { FakeClock } from '../../tools/memory/FakeClock';
import { OverrideInForce } from '../../lib/domain/limits/limitOverride';
import { MemoryQueues } from '../../tools/memory/MemoryQueues';
import {
  MemoryCircuitStore,
  MemoryLimitStore,
  MemoryLeaseStore,
  MemoryLedgerStore,
  MemoryState,
} from '../../tools/memory/MemoryStores';
import type { ServiceConfig } from '../../lib/config';
import { Pacer } from '../../lib/domain/pacing/pacer';
import { QuotaLedger, type Settlement } from '../../lib/domain/quota/ledger';
import type { LedgerJSON } from '../../lib/domain/quota/ledgerJSON';
import type { Lease } from '../../lib/ports/LeaseStore';
import type { LaneItemSeen, PendingOptions } from '../../lib/ports/LedgerStore';
import type { QueueReceiver } from '../../lib/ports/QueueReceiver';
import { guardQueues, guardStores } from '../../lib/services/orchestrator/guardedPorts';
import { RunContext, type RunContextDeps } from '../../lib/services/orchestrator/runContext';
import type { OrchestratorEvent, OrchestratorStores, RunPorts, RunQuota } from '../../lib/services/orchestrator/types';
import { LANE, START, testConfig } from './serviceFixtures';

/** Records the flush calls of a run and fails those named in `failing`, as an unavailable store would. */
export class FlushSwitch {
  /** Operations that fail until removed. */
  readonly failing = new Set<string>();
  /** Operations that take effect and then fail, as a write whose answer was lost does, until removed. */
  readonly answerLost = new Set<string>();
  /** The flush calls made, in order (failed ones included). */
  readonly calls: string[] = [];

  /** Records `operation`, and throws if it is failing. */
  check(operation: string): void {
    this.calls.push(operation);
    if (this.failing.has(operation)) throw new Error(`${operation} throttled`);
  }

  /** Runs `call` after {@link FlushSwitch.check}; throws after it took effect if `operation`'s answer is lost. */
  async through<T>(operation: string, call: () => Promise<T>): Promise<T> {
    this.check(operation);
    const result = await call();
    if (this.answerLost.has(operation)) throw new Error(`${operation} timed out after it took effect`);
    return result;
  }
}

/** A memory lease store whose renewals go through a {@link FlushSwitch}. */
class SwitchableLeaseStore extends MemoryLeaseStore {
  constructor(
    state: MemoryState,
    private readonly flushes: FlushSwitch,
  ) {
    super(state);
  }

  override async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    this.flushes.check('renewLease');
    return super.renewLease(lease, now, ttlMs);
  }
}

/** A memory ledger store whose saves and settlement reads go through a {@link FlushSwitch}. */
class SwitchableLedgerStore extends MemoryLedgerStore {
  constructor(
    state: MemoryState,
    private readonly flushes: FlushSwitch,
  ) {
    super(state);
  }

  override async saveLedger(
    lane: string,
    ledger: LedgerJSON,
    fencingToken: number,
    folded?: readonly string[],
  ): Promise<LaneItemSeen | undefined> {
    return this.flushes.through('saveLedger', () => super.saveLedger(lane, ledger, fencingToken, folded));
  }
  override async pendingSettlements(lane: string, options?: PendingOptions): Promise<Settlement[]> {
    this.flushes.check('pendingSettlements');
    return super.pendingSettlements(lane, options);
  }
}

/** The world of one room of a run: its context and guarded ports over memory ones, at START, and what it reported. */
export interface RoomHarness {
  readonly clock: FakeClock;
  /** The orchestrator's stores, in memory; the lease's renewals and the ledger's flush calls go through `flushes`. */
  readonly stores: OrchestratorStores;
  readonly flushes: FlushSwitch;
  readonly queues: MemoryQueues;
  readonly config: ServiceConfig;
  /** What {@link RoomHarness.run} was made of: another run context on it reports to the same `events`. */
  readonly runDeps: RunContextDeps;
  readonly run: RunContext;
  /** The ports of the run: `stores` and `queues` guarded. */
  readonly ports: RunPorts;
  readonly pacer: Pacer;
  /** The run's quota: {@link RoomHarness.pacer} and the ledger it paces. */
  readonly quota: RunQuota;
  readonly events: OrchestratorEvent[];
}

/** A {@link RoomHarness} on {@link testConfig} (or `config`), its queues optionally wrapped by `wrapQueues`. */
export function roomHarness(
  config: ServiceConfig = testConfig(),
  wrapQueues: (queues: MemoryQueues) => QueueReceiver = (q) => q,
): RoomHarness {
  const clock = new FakeClock(START);
  const state = new MemoryState();
  const flushes = new FlushSwitch();
  const stores = {
    lease: new SwitchableLeaseStore(state, flushes),
    ledger: new SwitchableLedgerStore(state, flushes),
    circuit: new MemoryCircuitStore(state),
    limits: new MemoryLimitStore(state),
  };
  const queues = new MemoryQueues({ clock });
  const events: OrchestratorEvent[] = [];
  let ids = 0;
  const runDeps: RunContextDeps = { clock, config, onEvent: (event) => events.push(event) };
  const ports: RunPorts = {
    stores: guardStores(stores),
    queues: guardQueues(wrapQueues(queues)),
    invoker: { invoke: async () => {} },
    newId: () => `id-${++ids}`,
    random: () => 0,
  };
  const ledger = new QuotaLedger(config.quotas, {
    timeZone: config.timeZone,
    arrivalMarginMs: config.pacing.arrivalMarginMs,
  });
  const pacer = new Pacer(ledger, config.pacing);
  const run = new RunContext(runDeps, { deadline: START + 60_000 });
  return {
    clock,
    stores,
    flushes,
    queues,
    config,
    runDeps,
    run,
    ports,
    pacer,
    quota: { ledger, slots: undefined, pacer, override: new OverrideInForce(config.quotas, undefined) },
    events,
  };
}

/** Takes the lane's lease in `h`'s lease store at the current instant. */
export async function takeLease(h: RoomHarness): Promise<Lease> {
  const lease = await h.stores.lease.acquireLease(
    LANE,
    'orchestrator-1',
    h.clock.now(),
    h.config.orchestrator.leaseTtlMs,
  );
  if (lease === null) throw new Error('lease held elsewhere');
  return lease;
}
