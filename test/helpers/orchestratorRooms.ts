import { FakeClock } from '../../tools/memory/FakeClock';
import { MemoryQueues } from '../../tools/memory/MemoryQueues';
import { MemoryStateStore } from '../../tools/memory/MemoryStateStore';
import type { ServiceConfig } from '../../lib/config';
import { Pacer } from '../../lib/domain/pacing/pacer';
import { QuotaLedger, type LedgerJSON, type Settlement } from '../../lib/domain/quota/ledger';
import type { Lease } from '../../lib/ports/StateStore';
import type { QueueReceiver } from '../../lib/ports/QueueReceiver';
import { GuardedQueues, GuardedStore } from '../../lib/services/guardedPorts';
import { RunContext } from '../../lib/services/orchestrator/runContext';
import type { OrchestratorEvent } from '../../lib/services/runOrchestrator';
import { LANE, START, testConfig } from './serviceFixtures';

/** A memory store that records the calls of a flush and fails those named in `failing`, as an unavailable store would. */
export class SwitchableStore extends MemoryStateStore {
  /** Operations that fail until removed. */
  readonly failing = new Set<string>();
  /** The flush and circuit calls made, in order (failed ones included). */
  readonly calls: string[] = [];

  private check(operation: string): void {
    this.calls.push(operation);
    if (this.failing.has(operation)) throw new Error(`${operation} throttled`);
  }

  override async saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled?: number): Promise<void> {
    this.check('saveLedger');
    return super.saveLedger(lane, ledger, fencingToken, settled);
  }
  override async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    this.check('renewLease');
    return super.renewLease(lease, now, ttlMs);
  }
  override async pendingSettlements(lane: string): Promise<Settlement[]> {
    this.check('pendingSettlements');
    return super.pendingSettlements(lane);
  }
}

/** The world of one room of a run: a run context on guarded ports over memory ones, at START, with what it reported. */
export interface RoomHarness {
  readonly clock: FakeClock;
  readonly store: SwitchableStore;
  readonly queues: MemoryQueues;
  readonly config: ServiceConfig;
  readonly run: RunContext;
  readonly pacer: Pacer;
  readonly events: OrchestratorEvent[];
}

/** A {@link RoomHarness} on {@link testConfig} (or `config`), its queues optionally wrapped by `wrapQueues`. */
export function roomHarness(config: ServiceConfig = testConfig(), wrapQueues: (queues: MemoryQueues) => QueueReceiver = (q) => q): RoomHarness {
  const clock = new FakeClock(START);
  const store = new SwitchableStore();
  const queues = new MemoryQueues({ clock });
  const events: OrchestratorEvent[] = [];
  let ids = 0;
  const run = new RunContext(
    {
      clock,
      store: new GuardedStore(store),
      queues: new GuardedQueues(wrapQueues(queues)),
      invoker: { invoke: async () => {} },
      config,
      random: () => 0,
      owner: 'orchestrator-1',
      newId: () => `id-${++ids}`,
      onEvent: (event) => events.push(event),
    },
    { deadline: START + 60_000 },
  );
  const pacer = new Pacer(new QuotaLedger(config.quotas, { timeZone: config.timeZone }), config.pacing);
  return { clock, store, queues, config, run, pacer, events };
}

/** Takes the lane's lease in `h`'s store at the current instant. */
export async function takeLease(h: RoomHarness): Promise<Lease> {
  const lease = await h.store.acquireLease(LANE, 'orchestrator-1', h.clock.now(), h.config.orchestrator.leaseTtlMs);
  if (lease === null) throw new Error('lease held elsewhere');
  return lease;
}
