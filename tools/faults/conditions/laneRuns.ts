/**
 * A lane on virtual time for condition scenarios: in-memory stores and queues shared by several orchestrator runs (a
 * deploy in between, a run killed), and workers that run the real worker code against an API that answers each call
 * after a latency, recording when it arrived, when it ended and what its body was.
 */
import { parseServiceConfig, type ServiceConfig } from '../../../lib/config';
import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { LedgerStore } from '../../../lib/ports/LedgerStore';
import type { MessageAttribute } from '../../../lib/ports/QueueReceiver';
import { runOrchestrator } from '../../../lib/services/orchestrator/runOrchestrator';
import type { RunSummary } from '../../../lib/services/orchestrator/types';
import { processWorkerEvent } from '../../../lib/services/worker/processWorkerEvent';
import { FakeClock } from '../../memory/FakeClock';
import { MemoryInvoker } from '../../memory/MemoryInvoker';
import { MemoryQueues } from '../../memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../memory/MemoryStores';

/** Virtual start of every run: a Monday, 00:00 UTC, a multiple of every ledger bucket. */
export const LANE_START = Date.UTC(2026, 0, 5);

/** One call as the API saw it. */
export interface ApiCall {
  /** When it arrived. */
  readonly from: number;
  /** When it was answered. */
  readonly to: number;
  readonly body: string;
}

/**
 * A validated configuration of lane `conditions` with small timings (a 5 s worker, flushes every second, no ramp, no
 * arrival margin, no lead, bursts allowed so that anything the ledger does not hold shows), and `extra` over it; its
 * `orchestrator` section is merged over those timings.
 */
export function laneConfig(extra: Readonly<Record<string, unknown>>): ServiceConfig {
  const { orchestrator, ...rest } = extra as { readonly orchestrator?: Readonly<Record<string, number>> };
  return parseServiceConfig({
    lane: 'conditions',
    pacing: {
      rampSeconds: 0,
      pauseJitterMs: 0,
      arrivalMarginMs: 0,
      callAllowanceMs: 0,
      dispatchLeadMs: 0,
      maxDispatchLeadMs: 0,
      batchWindowMs: 0,
      burstFraction: 1,
    },
    orchestrator: {
      leaseTtlMs: 5_000,
      flushIntervalMs: 1_000,
      circuitPollMs: 100,
      visibilityTimeoutMs: 120_000,
      workerTimeoutMs: 5_000,
      idleWaitMs: 200,
      idleStopMs: 900_000,
      invokeBackoffMs: 100,
      ...orchestrator,
    },
    ...rest,
  });
}

/** How a run's API answers: `latencyMs` after a call arrives, with what `answer(body, at)` decides at its arrival. */
export interface LaneApi {
  readonly latencyMs: number;
  readonly answer: (body: string, at: number) => ApiResult;
}

/** Options of one run: its deadline, and a ledger store that stands in for the lane's own (a run killed mid-save). */
export interface RunOptions {
  readonly deadline: number;
  readonly ledger?: (inner: LedgerStore) => LedgerStore;
}

/** The lane's stores, queues and clock, and every call its API saw, over all its runs. */
export class LaneWorld {
  readonly clock = new FakeClock(LANE_START);
  readonly stores: MemoryStores = memoryStores();
  readonly queues = new MemoryQueues({ clock: this.clock });
  readonly calls: ApiCall[] = [];
  private runs = 0;

  constructor(private readonly api: LaneApi) {}

  /** Sends `n` jobs to the main queue, each `{ "id": … }` merged with `body`, with the Number attributes `attributes`. */
  async send(n: number, body: Readonly<Record<string, unknown>> = {}, attributes: Record<string, number> = {}) {
    const numbers: Record<string, MessageAttribute> = Object.fromEntries(
      Object.entries(attributes).map(([name, value]) => [name, { dataType: 'Number', value: String(value) }]),
    );
    for (let i = 0; i < n; i++)
      await this.queues.send('main', { body: JSON.stringify({ id: `j-${i}`, ...body }), attributes: numbers });
  }

  /** Starts a run under `config` (an orchestrator of its own, as after a deploy); it ends at `options.deadline`. */
  start(config: ServiceConfig, options: RunOptions): Promise<RunSummary> {
    const run = ++this.runs;
    const stores = { ...this.stores, ledger: options.ledger?.(this.stores.ledger) ?? this.stores.ledger };
    const invoker = new MemoryInvoker({
      clock: this.clock,
      handler: (event) => processWorkerEvent(event, this.workerDeps(config)),
    });
    let ids = 0;
    return runOrchestrator(
      {
        clock: this.clock,
        stores,
        queues: this.queues,
        invoker,
        config,
        random: () => 0,
        owner: `run-${run}`,
        newId: () => `run-${run}-${++ids}`,
      },
      { deadline: options.deadline },
    );
  }

  /** Runs {@link LaneWorld.start}'s run to its end on the clock. @throws Error when it has not ended soon after its deadline. */
  async run(config: ServiceConfig, options: RunOptions): Promise<RunSummary> {
    let summary: RunSummary | undefined;
    let failure: { readonly error: unknown } | undefined;
    this.start(config, options).then(
      (s) => (summary = s),
      (error: unknown) => (failure = { error }),
    );
    await this.clock.runUntil(() => summary !== undefined || failure !== undefined, options.deadline + 60_000);
    if (failure !== undefined) throw failure.error;
    if (summary === undefined) throw new Error(`the run had not ended by ${options.deadline - LANE_START} ms + 60 s`);
    return summary;
  }

  /** A worker's dependencies under `config`: the API records each call. */
  private workerDeps(config: ServiceConfig) {
    const { clock, calls, api } = this;
    return {
      clock,
      stores: this.stores,
      queues: this.queues,
      config,
      random: () => 0,
      api: {
        async call(body: string): Promise<ApiResult> {
          const from = clock.now();
          const result = api.answer(body, from);
          await clock.sleep(api.latencyMs);
          calls.push({ from, to: clock.now(), body });
          return result;
        },
        probe: async (): Promise<ApiResult> => ({ kind: 'response', status: 200, headers: {} }),
      },
    };
  }
}

/** A ledger store whose saves never answer: a run given it is killed during its first save. */
export function killedAtFirstSave(inner: LedgerStore): LedgerStore {
  return {
    loadLedger: (lane) => inner.loadLedger(lane),
    saveLedger: () => new Promise<never>(() => undefined),
    addSettlements: (lane, ...settlements) => inner.addSettlements(lane, ...settlements),
    pendingSettlements: (lane) => inner.pendingSettlements(lane),
  };
}
