/**
 * The local run of a scenario of several lanes (`npm start -- --scenario tools/simulation/scenarios/lanes.json`): the
 * service packaged in the lanes form, its table and every lane's queues on the emulators, its two functions with the
 * real handlers behind a local Lambda endpoint on the schedule, and one simulated API per lane, each requiring its
 * lane's headers and key. It reports each lane as the one-lane run reports its lane.
 */
import { LaneQueuesView, type LaneDepths } from './laneQueuesView';
import type { Log } from '../../lib/adapters/log';
import { systemClock } from '../../lib/adapters/systemClock';
import { queueUrlsFromEnv, type Env } from '../../lib/configFromEnv';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import { namedUnits, tierLabel } from '../../lib/domain/quota/tiers';
import { laneEnvs, LANES_ENV } from '../../lib/lanes/laneEnv';
import { READ_ORDER, type QueueName } from '../../lib/ports/QueueReceiver';
import { buildJobs, type JobSpec } from '../simulation/jobs';
import type { LanesScenario } from '../simulation/lanesScenario';
import { seededRandom } from '../simulation/random';
import { buildReport, optionalLastCall, type CircuitChange, type Report } from '../simulation/report';
import { outageTimes, type Scenario } from '../simulation/scenario';
import { InvokeTiming } from '../simulation/startDelays';
import { VirtualApi, type VirtualApiCall } from '../simulation/virtualApi';
import { SharedTiers } from '../simulation/tierTally';
import { startApiServer, type ApiServer } from './apiServer';
import { lambdaClient, type EmulatorEndpoints } from './clients';
import { LocalHarness, type HostedFunction } from './harness';
import { fireSchedule, seed, sendTo, type ProviderCheck } from './localRun';
import { LOCAL_API_KEY, requestEnv, requiredHeaders } from './providerRequests';
import { heldBodies } from './queueInspection';
import type { FunctionDefinition, Template } from './template';

/** What one local run of several lanes needs. */
export interface LocalLanesRunOptions {
  readonly scenario: LanesScenario;
  /** The template `osls package` built from the lanes form, with the scenario's lanes. */
  readonly template: Template;
  /** Emulators already running (the test suite's); by default the run starts its own and stops them at the end. */
  readonly emulators?: EmulatorEndpoints;
  /** Told about once a second how each lane is doing. */
  readonly onProgress?: (progress: LanesProgress) => void;
  /** The handlers' structured log. @default discard */
  readonly log?: Log;
}

/** One lane's state in a {@link LanesProgress}. */
export interface LaneProgress extends LaneDepths {
  readonly lane: string;
  readonly jobs: number;
  readonly succeeded: number;
  readonly circuit: CircuitJSON['state']['status'];
}

/** A snapshot of a run of several lanes. */
export interface LanesProgress {
  readonly elapsedSeconds: number;
  readonly lanes: readonly LaneProgress[];
}

/** What one lane of the run came to. */
export interface LaneResult {
  readonly lane: string;
  readonly report: Report;
  /** What its simulated provider required of the workers' requests, and how many it refused. */
  readonly provider: ProviderCheck;
  /** The most calls its API had in a second. */
  readonly peakCallsPerSecond: number;
  /** Every job call its API saw. */
  readonly calls: readonly VirtualApiCall[];
}

/** What a pool came to: the most its simulated provider counted in one window of each of its tiers, across its lanes. */
export interface PoolResult {
  readonly pool: string;
  /** The lanes that draw from it. */
  readonly lanes: readonly string[];
  readonly tiers: readonly { readonly tier: string; readonly peak: number; readonly limit: number }[];
}

/** What a run of several lanes produced. */
export interface LocalLanesRunResult {
  readonly lanes: readonly LaneResult[];
  readonly pools: readonly PoolResult[];
  /** When the run started, epoch ms: the scenario's outages are placed from it. */
  readonly start: number;
  readonly durationSeconds: number;
}

/**
 * The `custom.quotaOrchestrator` of the lanes form that runs `scenario`: each lane's settings as the scenario writes
 * them, and `shared` (`timeZone`, `orchestrator`: the scenario's, else serverless.yml's). The APIs start with the
 * run: their URLs and the local key reach the functions then (see {@link runLocalLanes}), placeholders till then.
 */
export function lanesSettings(
  scenario: LanesScenario,
  shared: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const lanes = Object.fromEntries(
    Object.entries(scenario.written).map(([lane, settings]) => [
      lane,
      { ...settings, apiUrl: 'http://127.0.0.1/jobs', healthUrl: 'http://127.0.0.1/health' },
    ]),
  );
  return { ...shared, ...(scenario.writtenPools === undefined ? {} : { pools: scenario.writtenPools }), lanes };
}

/** How often the run polls the circuits, the queues and the APIs' counters. */
const POLL_MS = 200;
const PROGRESS_MS = 1_000;
/** How long the end of a run waits for the orchestrator and the workers to finish. */
const SHUTDOWN_WAIT_MS = 30_000;

/** One lane as the run drives it. */
interface RunLane {
  readonly scenario: Scenario;
  readonly lane: string;
  readonly jobs: readonly JobSpec[];
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly view: LaneQueuesView;
  readonly api: VirtualApi;
  readonly server: ApiServer;
  readonly headers: ProviderCheck['headers'];
  readonly changes: CircuitChange[];
  invocations: number;
  /** When the run first found every job of the lane ended. */
  endedAt?: number;
}

/**
 * Runs every lane of the scenario on this machine (see the module's comment) until each lane's jobs have all
 * succeeded or been dead-lettered, or the scenario's `maxSeconds` have passed, and reports each lane.
 * @throws Error when the template lacks a lane of the scenario.
 */
export async function runLocalLanes(options: LocalLanesRunOptions): Promise<LocalLanesRunResult> {
  const { harness, functions } = await LocalHarness.fromTemplate(options.template, { emulators: options.emulators });
  const servers: ApiServer[] = [];
  try {
    const queueUrls = new Map(laneEnvs(functions.worker.environment).map((l) => [l.lane, queueUrlsFromEnv(l.env)]));
    const prepared = await Promise.all(
      options.scenario.lanes.map(async (scenario) => {
        const urls = queueUrls.get(scenario.config.lane);
        if (urls === undefined) throw new Error(`the packaged template has no lane '${scenario.config.lane}'`);
        const jobs = buildJobs(scenario, seededRandom(scenario.seed));
        await seed(harness.clients.sqs, urls, jobs, namedUnits(scenario.config.quotas));
        return { scenario, jobs, urls };
      }),
    );
    const store = await harness.serveParameters({ [LOCAL_API_KEY.parameter]: LOCAL_API_KEY.value });
    const start = systemClock.now();
    const lanes: RunLane[] = [];
    const pools = options.scenario.pools.map((pool) => new SharedTiers(pool.name, pool.quotas));
    for (const { scenario, jobs, urls } of prepared) {
      const { latencyMs, outages, llm, concurrency } = scenario.api;
      const names = (scenario.config.pools ?? []).map((pool) => pool.name);
      const api = new VirtualApi({
        clock: systemClock,
        tiers: scenario.config.quotas,
        shared: pools.filter((pool) => names.includes(pool.name)),
        latencyMs,
        outages: outageTimes(outages, start),
        ...(llm === undefined ? {} : { llm }),
        ...(concurrency === undefined ? {} : { concurrency }),
      });
      const headers = requiredHeaders(scenario.request, LOCAL_API_KEY.value);
      const server = await startApiServer(api, { requiredHeaders: headers, callMethod: scenario.request.apiMethod });
      servers.push(server);
      const lane = scenario.config.lane;
      const view = new LaneQueuesView(harness.clients.sqs, urls);
      lanes.push({ scenario, lane, jobs, queueUrls: urls, view, api, server, headers, changes: [], invocations: 0 });
    }
    for (const lane of lanes) lane.changes.push({ at: start, status: 'closed' });
    const byName = new Map(lanes.map((lane) => [lane.lane, lane]));
    let endedAt: number | undefined;
    const hosted = (kind: HostedFunction['kind'], fn: FunctionDefinition): HostedFunction => ({
      kind,
      env: withLaneApis(fn.environment, lanes),
      name: fn.name,
      timeoutMs: fn.timeoutMs,
      maximumRetryAttempts: fn.maximumRetryAttempts,
      ...(fn.reservedConcurrency === undefined ? {} : { reservedConcurrency: fn.reservedConcurrency }),
      ...(fn.onFailureQueueUrl === undefined ? {} : { onFailure: sendTo(harness.clients.sqs, fn.onFailureQueueUrl) }),
    });
    const [first] = lanes;
    const endpoint = await harness.host(
      [hosted('orchestrator', functions.orchestrator), hosted('worker', functions.worker)],
      {
        // Each worker start counts for the lane of its event.
        workerHandler: (handler) => async (event) => {
          const lane = byName.get(String((event as { lane?: unknown }).lane));
          if (lane !== undefined) lane.invocations++;
          return handler(event);
        },
        shouldStop: () => endedAt !== undefined,
        ...(options.log === undefined ? {} : { log: options.log }),
      },
      first === undefined
        ? {}
        : { timing: new InvokeTiming(first.scenario.invokeTiming, seededRandom(first.scenario.seed + 1)) },
    );
    const scheduler = lambdaClient(endpoint);
    const maxMs = Math.max(...lanes.map((lane) => lane.scenario.maxSeconds)) * 1000;
    try {
      let nextTick = start;
      let lastProgress = start - PROGRESS_MS;
      while (endedAt === undefined) {
        const now = systemClock.now();
        if (now >= nextTick) {
          await fireSchedule(scheduler, functions.schedule.functionName, now);
          nextTick += functions.schedule.periodMs;
        }
        const progress = await Promise.all(lanes.map((lane) => laneProgress(harness, lane, now)));
        if (now - lastProgress >= PROGRESS_MS) {
          lastProgress = now;
          options.onProgress?.({ elapsedSeconds: (now - start) / 1000, lanes: progress });
        }
        progress.forEach((p, i) => {
          const lane = lanes[i];
          if (lane !== undefined && p.succeeded + p.deadLettered >= p.jobs && p.queued + p.inFlight === 0)
            lane.endedAt ??= now;
        });
        const allEnded = lanes.every((lane) => lane.endedAt !== undefined);
        if ((allEnded && harness.stats(functions.worker.name).running === 0) || now - start >= maxMs) endedAt = now;
        await systemClock.sleep(POLL_MS);
      }
      const results = await Promise.all(
        lanes.map((lane) => laneResult(harness, lane, store.reads, start, lane.endedAt ?? endedAt ?? start)),
      );
      return {
        lanes: results,
        pools: pools.map((pool) => poolResult(pool, options.scenario)),
        start,
        durationSeconds: ((endedAt ?? start) - start) / 1000,
      };
    } finally {
      scheduler.destroy();
    }
  } finally {
    await harness.close({ idleWithinMs: SHUTDOWN_WAIT_MS });
    for (const server of servers) await server.close();
  }
}

/**
 * A function's environment with each lane's API: its simulated API's URLs, the local key's parameter, and its
 * requests as its scenario describes them, in the lane's variables of `LANES`.
 */
function withLaneApis(environment: Readonly<Record<string, string>>, lanes: readonly RunLane[]): Env {
  const variables = JSON.parse(environment[LANES_ENV.lanes] ?? '{}') as Record<string, Record<string, unknown>>;
  for (const lane of lanes) {
    variables[lane.lane] = {
      ...variables[lane.lane],
      ...requestEnv(lane.scenario.request),
      API_URL: lane.server.apiUrl,
      HEALTH_URL: lane.server.healthUrl,
      API_KEY_PARAMETER: LOCAL_API_KEY.parameter,
    };
  }
  return { ...environment, [LANES_ENV.lanes]: JSON.stringify(variables) };
}

/** What `pool` came to in a run of `scenario`. */
function poolResult(pool: SharedTiers, scenario: LanesScenario): PoolResult {
  return {
    pool: pool.name,
    lanes: scenario.lanes.filter((l) => l.config.pools?.some((p) => p.name === pool.name)).map((l) => l.config.lane),
    tiers: pool.tallies.map(({ tier, maxUsage }) => ({ tier: tierLabel(tier), peak: maxUsage, limit: tier.limit })),
  };
}

/** How `lane` is doing at `now`; its circuit's status is recorded when it changed. */
async function laneProgress(harness: LocalHarness, lane: RunLane, now: number): Promise<LaneProgress> {
  const circuit = (await harness.circuit(lane.lane))?.state.status ?? 'closed';
  if (circuit !== lane.changes[lane.changes.length - 1]?.status) lane.changes.push({ at: now, status: circuit });
  const depths = await lane.view.laneDepths();
  return { lane: lane.lane, jobs: lane.jobs.length, succeeded: lane.api.succeededIds().length, circuit, ...depths };
}

/** The report of `lane` once the run has ended, the lane's own jobs at `endedAt` (the run's end, if they did not). */
async function laneResult(
  harness: LocalHarness,
  lane: RunLane,
  keyReads: () => number,
  start: number,
  endedAt: number,
): Promise<LaneResult> {
  const queuedBodies = await heldBodies(
    harness.emulators.sqsEndpoint,
    READ_ORDER.map((queue) => lane.queueUrls[queue]),
  );
  const deadLetters = await lane.view.receiveDeadLetters();
  const report = buildReport({
    scenario: lane.scenario,
    jobs: lane.jobs,
    api: lane.api.report(),
    queuedBodies,
    succeededIds: new Set(lane.api.succeededIds()),
    deadLetterBodies: deadLetters.map((m) => m.body),
    circuitChanges: lane.changes,
    invocations: lane.invocations,
    start,
    durationMs: endedAt - start,
    ...optionalLastCall(lane.api.callLog),
  });
  const perSecond = new Map<number, number>();
  for (const call of lane.api.callLog) {
    const second = Math.floor((call.at - start) / 1000);
    perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
  }
  return {
    lane: lane.lane,
    report,
    provider: { headers: lane.headers, refused: lane.server.refusals(), keyReads: keyReads() },
    peakCallsPerSecond: Math.max(0, ...perSecond.values()),
    calls: lane.api.callLog,
  };
}
