import type { CircuitJSON } from '../../lib/domain/breaker/circuit';
import { FakeClock } from '../memory/FakeClock';
import { MemoryInvoker } from '../memory/MemoryInvoker';
import { MemoryQueues } from '../memory/MemoryQueues';
import { MemoryCircuitStore, memoryStores } from '../memory/MemoryStores';
import { READ_ORDER, type MessageAttribute } from '../../lib/ports/QueueReceiver';
import { processWorkerEvent } from '../../lib/services/processJob';
import { runOrchestrator, type OrchestratorEvent } from '../../lib/services/runOrchestrator';
import { buildJobs } from './jobs';
import { seededRandom } from './random';
import { InvokeTiming } from './startDelays';
import { buildReport, type CircuitChange, type Report } from './report';
import { outageTimes, type Scenario } from './scenario';
import { VirtualApi } from './virtualApi';

/** Everything a simulation produced: the report and the raw timelines tests check it against. */
export interface SimulationResult {
  readonly report: Report;
  /** Start instant of the run (epoch ms on the virtual clock). */
  readonly start: number;
  readonly circuitChanges: readonly CircuitChange[];
  readonly orchestratorEvents: readonly OrchestratorEvent[];
  readonly api: VirtualApi;
  readonly queues: MemoryQueues;
}

/** Virtual start instant: a fixed Monday, so runs are the same everywhere. */
export const SIMULATION_START = Date.UTC(2026, 0, 5);

/** A circuit store that also records each circuit status it accepts, with the instant. */
class RecordingStore extends MemoryCircuitStore {
  /** Starts with the closed circuit every lane begins with. */
  readonly changes: CircuitChange[];

  constructor(private readonly clock: FakeClock) {
    super();
    this.changes = [{ at: clock.now(), status: 'closed' }];
  }

  override async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    const written = await super.saveCircuit(lane, next);
    const last = this.changes[this.changes.length - 1];
    if (written && last?.status !== next.state.status) this.changes.push({ at: this.clock.now(), status: next.state.status });
    return written;
  }
}

/**
 * Runs a scenario on virtual time: the real orchestrator loop and worker services on the in-memory ports, against
 * a {@link VirtualApi} that enforces the quotas on its own counters. Ticks fire every `tickSeconds`; each run stops
 * `stopMarginMs` before the next. Deterministic for a given scenario: same seed, same report.
 */
export async function runSimulation(scenario: Scenario): Promise<SimulationResult> {
  const start = SIMULATION_START;
  const clock = new FakeClock(start);
  const random = seededRandom(scenario.seed);
  const { config } = scenario;
  const jobs = buildJobs(scenario, random);
  const costs = new Map(jobs.map((job) => [job.body, job.cost]));
  const api = new VirtualApi({
    clock,
    tiers: config.quotas,
    latencyMs: scenario.api.latencyMs,
    outages: outageTimes(scenario.api.outages, start),
    costOf: (body) => costs.get(body) ?? 1,
  });
  const circuit = new RecordingStore(clock);
  const stores = { ...memoryStores(), circuit };
  const queues = new MemoryQueues({ clock, maxReceiveCount: Math.max(10, config.retry.maxAttempts + 5) });
  const invoker = new MemoryInvoker({
    clock,
    timing: new InvokeTiming(scenario.invokeTiming, seededRandom(scenario.seed + 1)),
    handler: (event) => processWorkerEvent(event, { clock, stores, queues, api, config, random }),
  });
  for (const job of jobs) {
    const attributes: Record<string, MessageAttribute> = job.cost === 1 ? {} : { cost: { dataType: 'Number', value: String(job.cost) } };
    await queues.send(job.queue, { body: job.body, attributes, ...(job.groupId === undefined ? {} : { groupId: job.groupId }) });
  }

  const events: OrchestratorEvent[] = [];
  let ids = 0;
  const allEnded = () => READ_ORDER.every((q) => queues.depth(q) === 0) && invoker.idle();
  let endedAt: number | undefined;
  const drive = async () => {
    const tickMs = scenario.tickSeconds * 1000;
    for (let tick = 0; !allEnded() && clock.now() - start < scenario.maxSeconds * 1000; tick++) {
      const tickAt = start + tick * tickMs;
      if (clock.now() < tickAt) await clock.sleep(tickAt - clock.now());
      await runOrchestrator(
        { clock, stores, queues, invoker, config, random, owner: `orchestrator-${tick}`, newId: () => `id-${++ids}`, onEvent: (e) => events.push(e) },
        { deadline: tickAt + tickMs - scenario.stopMarginMs, shouldStop: allEnded },
      );
    }
    endedAt = clock.now();
  };
  const driving = drive();
  await clock.runUntil(() => endedAt !== undefined, start + scenario.maxSeconds * 1000 + scenario.tickSeconds * 1000);
  await driving;

  return {
    report: buildReport({
      scenario,
      jobs,
      api: api.report(),
      succeededIds: new Set(api.succeededIds()),
      deadLetterBodies: READ_ORDER.flatMap((q) => queues.messages(`${q}-dlq`).map((m) => m.body)),
      circuitChanges: circuit.changes,
      invocations: invoker.invocations,
      start,
      durationMs: (endedAt ?? clock.now()) - start,
    }),
    start,
    circuitChanges: circuit.changes,
    orchestratorEvents: events,
    api,
    queues,
  };
}

