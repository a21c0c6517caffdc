import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import { fifoRedriveThreshold } from '../../lib/domain/outcome/retryPolicy';
import { FakeClock } from '../memory/FakeClock';
import { MemoryInvoker } from '../memory/MemoryInvoker';
import { MemoryQueues } from '../memory/MemoryQueues';
import { MemoryCircuitStore, memoryStores } from '../memory/MemoryStores';
import { READ_ORDER, type MessageAttribute } from '../../lib/ports/QueueReceiver';
import { processWorkerEvent } from '../../lib/services/worker/processWorkerEvent';
import { runOrchestrator } from '../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent } from '../../lib/services/orchestrator/types';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import type { Invoker } from '../../lib/ports/Invoker';
import type { QueueReceiver } from '../../lib/ports/QueueReceiver';
import type { StateStores } from '../../lib/ports/StateStores';
import { namedUnits } from '../../lib/domain/quota/tiers';
import { buildJobs, unitAttributes, type JobSpec } from './jobs';
import { backlogOf, sendArrivals } from './arrivalSender';
import { seededRandom } from './random';
import { withLatency } from './awsLatency';
import { InvokeTiming } from './startDelays';
import { buildReport, optionalLastCall, type CircuitChange, type Report } from './report';
import { allowedFrom } from './allowedLimits';
import { outageTimes, type Scenario } from './scenario';
import { VirtualApi } from './virtualApi';

/** Everything a simulation produced: the report and the raw timelines tests check it against. */
export interface SimulationResult {
  readonly report: Report;
  /** The backlog the run started with. */
  readonly jobs: readonly JobSpec[];
  /** Start instant of the run (epoch ms on the virtual clock). */
  readonly start: number;
  readonly circuitChanges: readonly CircuitChange[];
  readonly orchestratorEvents: readonly OrchestratorEvent[];
  readonly api: VirtualApi;
  readonly queues: MemoryQueues;
  /** The orchestrator's requests to each port, by `service.method` (e.g. `sqs.receive`): with `awsLatency`, its time. */
  readonly orchestratorRequests: ReadonlyMap<string, number>;
  /** Worker deliveries that threw (a crash, or a fault that reached the handler), as Lambda would see them fail. */
  readonly workerCrashes: number;
  /** Orchestrator runs that threw, with their errors' messages. */
  readonly orchestratorErrors: readonly string[];
}

/** The ports one side of the service sees: what {@link SimulationFaults} may wrap. */
export interface SimulatedPorts {
  readonly stores: StateStores;
  readonly queues: QueueReceiver;
}

/**
 * Faults a run injects (the swarm's): each hook wraps what one side of the service sees, so the services run
 * unchanged against ports that lose answers, fail, or run late. Without hooks, a run sees the ports as they are.
 */
export interface SimulationFaults {
  /** The ports as the workers see them, on the run's clock. */
  readonly worker?: (ports: SimulatedPorts, clock: Clock) => SimulatedPorts;
  /** The API as the workers see it (it is the referee's, behind), on the run's clock from its `start`. */
  readonly api?: (api: ApiCaller, clock: Clock, start: number) => ApiCaller;
  /** The clock the workers read (skewed). The runs' timers still fire on the one clock. */
  readonly workerClock?: (clock: Clock) => Clock;
  /** The ports and the invoker as orchestrator run `tick` sees them (so that a run can be killed). */
  readonly orchestrator?: (
    ports: SimulatedPorts & { readonly invoker: Invoker },
    tick: number,
  ) => SimulatedPorts & { readonly invoker: Invoker };
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
    if (written && last?.status !== next.state.status)
      this.changes.push({ at: this.clock.now(), status: next.state.status });
    return written;
  }
}

/** How often the simulation looks whether everything has ended while it waits for the next tick. */
const END_POLL_MS = 100;

/**
 * Runs a scenario on virtual time: the real orchestrator loop and worker services on the in-memory ports, against
 * a {@link VirtualApi} that enforces the quotas on its own counters. Ticks fire every `tickSeconds`; each run stops
 * `stopMarginMs` before the next. Deterministic for a given scenario: same seed, same report.
 */
export async function runSimulation(scenario: Scenario, faults: SimulationFaults = {}): Promise<SimulationResult> {
  const start = SIMULATION_START;
  const clock = new FakeClock(start);
  const random = seededRandom(scenario.seed);
  const { config } = scenario;
  const jobs = buildJobs(scenario, random);
  const costs = new Map(jobs.map((job) => [job.body, job.costs]));
  const { llm, concurrency, allowed } = scenario.api;
  const api = new VirtualApi({
    clock,
    tiers: config.quotas,
    latencyMs: scenario.api.latencyMs,
    outages: outageTimes(scenario.api.outages, start),
    costsOf: (body) => costs.get(body) ?? { cost: 1 },
    ...(llm === undefined ? {} : { llm }),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(allowed === undefined ? {} : { allowed: allowedFrom(allowed, start) }),
  });
  const circuit = new RecordingStore(clock);
  const memory = { ...memoryStores(), circuit };
  const memoryQueues = new MemoryQueues({
    clock,
    maxReceiveCount: Math.max(10, config.retry.maxAttempts + 5),
    fifoMaxReceiveCount: fifoRedriveThreshold(config.retry.maxAttempts),
  });
  // The services see the ports as slow as AWS answers (see scenario.awsLatency); the run itself looks at them directly.
  const { lambdaMs, dynamodbMs, sqsMs } = scenario.awsLatency;
  const orchestratorRequests = new Map<string, number>();
  const slowStores = (calls?: { prefix: string; counts: Map<string, number> }) => ({
    lease: withLatency(memory.lease, clock, dynamodbMs, calls),
    ledger: withLatency(memory.ledger, clock, dynamodbMs, calls),
    circuit: withLatency(circuit, clock, dynamodbMs, calls),
    idempotency: withLatency(memory.idempotency, clock, dynamodbMs, calls),
    limits: withLatency(memory.limits, clock, dynamodbMs, calls),
  });
  const workerPorts = { stores: slowStores(), queues: withLatency(memoryQueues, clock, sqsMs) };
  const worker = faults.worker?.(workerPorts, clock) ?? workerPorts;
  const workerApi = faults.api?.(api, clock, start) ?? api;
  const workerClock = faults.workerClock?.(clock) ?? clock;
  const memoryInvoker = new MemoryInvoker({
    clock,
    timing: new InvokeTiming(scenario.invokeTiming, seededRandom(scenario.seed + 1)),
    handler: (event) => processWorkerEvent(event, { clock: workerClock, ...worker, api: workerApi, config, random }),
  });
  // The orchestrator's own view of the ports, counting its requests.
  const orchestratorPorts = {
    stores: slowStores({ prefix: 'dynamodb', counts: orchestratorRequests }),
    queues: withLatency(memoryQueues, clock, sqsMs, { prefix: 'sqs', counts: orchestratorRequests }),
    invoker: withLatency(memoryInvoker, clock, lambdaMs, { prefix: 'lambda', counts: orchestratorRequests }),
  };
  const counted = namedUnits(config.quotas);
  const send = async (due: readonly JobSpec[]) => {
    for (const job of due) {
      const attributes: Record<string, MessageAttribute> = Object.fromEntries(
        Object.entries(unitAttributes(job, counted)).map(([unit, value]) => [unit, { dataType: 'Number', value }]),
      );
      await memoryQueues.send(job.queue, {
        body: job.body,
        attributes,
        ...(job.groupId === undefined ? {} : { groupId: job.groupId }),
      });
    }
  };
  await send(backlogOf(jobs));
  // Jobs still to arrive keep the run going; those a run that hit maxSeconds never sent count as lost.
  let arrived = false;
  void sendArrivals(jobs, start, clock, send).then(() => {
    arrived = true;
  });

  const events: OrchestratorEvent[] = [];
  const orchestratorErrors: string[] = [];
  let ids = 0;
  const allEnded = () => arrived && READ_ORDER.every((q) => memoryQueues.depth(q) === 0) && memoryInvoker.idle();
  let endedAt: number | undefined;
  const drive = async () => {
    const tickMs = scenario.tickSeconds * 1000;
    for (let tick = 0; !allEnded() && clock.now() - start < scenario.maxSeconds * 1000; tick++) {
      const tickAt = start + tick * tickMs;
      // A run that stopped with nothing left to receive leaves the rest to its workers (a late second delivery, say):
      // the simulation ends when they do, not at the next tick, which would find nothing to do.
      while (clock.now() < tickAt && !allEnded()) await clock.sleep(Math.min(END_POLL_MS, tickAt - clock.now()));
      if (allEnded()) break;
      const ports = faults.orchestrator?.(orchestratorPorts, tick) ?? orchestratorPorts;
      await runOrchestrator(
        {
          clock,
          ...ports,
          config,
          random,
          owner: `orchestrator-${tick}`,
          newId: () => `id-${++ids}`,
          onEvent: (e) => events.push(e),
        },
        { deadline: tickAt + tickMs - scenario.stopMarginMs, shouldStop: allEnded },
      ).catch((error: unknown) => {
        // Only injected faults make a run throw; without them, the error is the simulation's.
        if (Object.keys(faults).length === 0) throw error;
        orchestratorErrors.push(error instanceof Error ? error.message : String(error));
      });
    }
    endedAt = clock.now();
  };
  const driving = drive();
  // The last run may still be taking its last steps (a flush retried after a lost answer) when the time is up: it
  // gets one tick more. A run still going then, or one waiting on nothing the clock can move, is the simulation's
  // fault: it throws, rather than leave `driving` pending and the process to exit without a word.
  const limit = start + (scenario.maxSeconds + 2 * scenario.tickSeconds) * 1000;
  if (!(await clock.runUntil(() => endedAt !== undefined, limit)))
    throw new Error(
      `the simulation '${scenario.name}' did not end: at +${clock.now() - start} ms its driver was still running`,
    );
  await driving;

  return {
    report: buildReport({
      scenario,
      jobs,
      api: api.report(),
      queuedBodies: READ_ORDER.flatMap((q) => memoryQueues.messages(q).map((m) => m.body)),
      succeededIds: new Set(api.succeededIds()),
      deadLetterBodies: READ_ORDER.flatMap((q) => memoryQueues.messages(`${q}-dlq`).map((m) => m.body)),
      circuitChanges: circuit.changes,
      invocations: memoryInvoker.invocations,
      start,
      durationMs: (endedAt ?? clock.now()) - start,
      ...optionalLastCall(api.callLog),
    }),
    jobs,
    start,
    circuitChanges: circuit.changes,
    orchestratorEvents: events,
    api,
    queues: memoryQueues,
    orchestratorRequests,
    workerCrashes: memoryInvoker.crashes,
    orchestratorErrors,
  };
}
