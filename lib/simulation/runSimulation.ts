import type { CircuitJSON } from '../domain/breaker/circuit';
import type { JsonValue } from '../domain/json';
import { isSliding, slidingWindowMs, unitsFor } from '../domain/quota/tiers';
import { FakeClock } from '../adapters/memory/FakeClock';
import { MemoryInvoker } from '../adapters/memory/MemoryInvoker';
import { MemoryQueues } from '../adapters/memory/MemoryQueues';
import { MemoryStateStore } from '../adapters/memory/MemoryStateStore';
import { READ_ORDER, type MessageAttribute } from '../ports/QueueReceiver';
import { processWorkerEvent } from '../services/processJob';
import { runOrchestrator, type OrchestratorEvent } from '../services/runOrchestrator';
import { seededRandom } from './random';
import type { Scenario } from './scenario';
import { VirtualApi } from './virtualApi';

/** The report of a local run: DESIGN's "Local run" contract, field for field. */
export interface Report {
  readonly jobs: number;
  readonly succeeded: number;
  readonly deadLettered: number;
  /** Jobs neither succeeded nor dead-lettered when the run ended. */
  readonly lost: number;
  /** Successful API calls beyond the first per job. */
  readonly duplicates: number;
  /** Job calls that reached the API (health probes excluded). */
  readonly apiCalls: number;
  /** Job calls the API refused with 429 for exceeding its quota. */
  readonly rejectedByApi: number;
  /** `idealSeconds / durationSeconds`: how much of the quota the run used while it had work. */
  readonly utilization: number;
  /** Worker starts (jobs and health checks) per job. */
  readonly invocationsPerJob: number;
  readonly circuitOpened: number;
  readonly circuitClosed: number;
  readonly fifoOrderViolations: number;
  /** From the start until every job had ended. */
  readonly durationSeconds: number;
  /** The tightest tier's time for all job calls at its full rate, plus the time the API was down. */
  readonly idealSeconds: number;
}

/** A circuit status as written to the store, for timelines. */
export interface CircuitChange {
  readonly at: number;
  readonly status: CircuitJSON['state']['status'];
}

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

/** A store that also records each circuit status it accepts, with the instant. */
class RecordingStore extends MemoryStateStore {
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

interface JobSpec {
  readonly queue: 'main' | 'fifo';
  readonly body: string;
  readonly cost: number;
  readonly groupId?: string;
}

/** The scenario's backlog: FIFO jobs spread over groups with rising `seq`, then standard, poison and malformed ones. */
function buildJobs(scenario: Scenario, random: () => number): JobSpec[] {
  const { count, fifo, fifoGroups, poison, malformed, costMin, costMax } = scenario.jobs;
  const cost = () => costMin + Math.floor(random() * (costMax - costMin + 1));
  const jobs: JobSpec[] = [];
  for (let i = 0; i < count; i++) {
    const id = `job-${i + 1}`;
    if (i < fifo) {
      const group = `g-${(i % fifoGroups) + 1}`;
      jobs.push({ queue: 'fifo', body: JSON.stringify({ id, group, seq: Math.floor(i / fifoGroups) }), cost: cost(), groupId: group });
    } else if (i < fifo + poison) {
      jobs.push({ queue: 'main', body: JSON.stringify({ id, poison: true }), cost: cost() });
    } else if (i < fifo + poison + malformed) {
      jobs.push({ queue: 'main', body: `{not json: ${id}`, cost: 1 });
    } else {
      jobs.push({ queue: 'main', body: JSON.stringify({ id }), cost: cost() });
    }
  }
  return jobs;
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
    outages: scenario.api.outages.map((o) => ({ startMs: start + o.atSeconds * 1000, endMs: start + (o.atSeconds + o.forSeconds) * 1000 })),
    costOf: (body: JsonValue) => costs.get(JSON.stringify(body)) ?? 1,
  });
  const store = new RecordingStore(clock);
  const queues = new MemoryQueues({ clock, maxReceiveCount: Math.max(10, config.retry.maxAttempts + 5) });
  const invoker = new MemoryInvoker({
    clock,
    latencyMs: scenario.invokeLatencyMs,
    handler: (event) => processWorkerEvent(event, { clock, store, queues, api, config, random }),
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
        { clock, store, queues, invoker, config, random, owner: `orchestrator-${tick}`, newId: () => `id-${++ids}`, onEvent: (e) => events.push(e) },
        { deadline: tickAt + tickMs - scenario.stopMarginMs, shouldStop: allEnded },
      );
    }
    endedAt = clock.now();
  };
  const driving = drive();
  await clock.runUntil(() => endedAt !== undefined, start + scenario.maxSeconds * 1000 + scenario.tickSeconds * 1000);
  await driving;

  return {
    report: buildReport(scenario, jobs, api, queues, store.changes, invoker.invocations, (endedAt ?? clock.now()) - start),
    start,
    circuitChanges: store.changes,
    orchestratorEvents: events,
    api,
    queues,
  };
}

function buildReport(
  scenario: Scenario,
  jobs: readonly JobSpec[],
  api: VirtualApi,
  queues: MemoryQueues,
  changes: readonly CircuitChange[],
  invocations: number,
  durationMs: number,
): Report {
  const apiReport = api.report();
  const succeededIds = new Set(api.succeededIds());
  const deadLetters = READ_ORDER.flatMap((q) => queues.messages(`${q}-dlq`).map((m) => m.body));
  const deadBodies = new Set(deadLetters);
  const ended = jobs.filter((job) => deadBodies.has(job.body) || succeededIds.has(idOf(job.body) ?? '')).length;
  const outageSeconds = scenario.api.outages.reduce((sum, o) => sum + o.forSeconds, 0);
  const durationSeconds = durationMs / 1000;
  const idealSeconds = idealCallSeconds(scenario, jobs) + outageSeconds;
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    jobs: jobs.length,
    succeeded: succeededIds.size,
    deadLettered: deadLetters.length,
    lost: jobs.length - ended,
    duplicates: apiReport.duplicates,
    apiCalls: apiReport.apiCalls,
    rejectedByApi: apiReport.rejectedByApi,
    utilization: round(durationSeconds === 0 ? 0 : idealSeconds / durationSeconds),
    invocationsPerJob: round(invocations / jobs.length),
    circuitOpened: changes.filter((c, i) => c.status === 'open' && changes[i - 1]?.status !== 'half-open').length,
    circuitClosed: changes.filter((c, i) => i > 0 && c.status === 'closed').length,
    fifoOrderViolations: apiReport.fifoOrderViolations,
    durationSeconds: round(durationSeconds),
    idealSeconds: round(idealSeconds),
  };
}

function idOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : undefined;
  } catch {
    return undefined;
  }
}

/** Seconds the tightest sliding tier needs for one call per well-formed job at its full rate. */
function idealCallSeconds(scenario: Scenario, jobs: readonly JobSpec[]): number {
  const callable = jobs.filter((job) => idOf(job.body) !== undefined);
  const perTier = scenario.config.quotas
    .filter((tier) => isSliding(tier.per))
    .map((tier) => (callable.reduce((sum, job) => sum + unitsFor(tier, job.cost), 0) * slidingWindowMs(tier.per)) / tier.limit / 1000);
  return Math.max(0, ...perTier);
}
