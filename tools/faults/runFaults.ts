import { seededRandom } from '../simulation/random';
import { REALISTIC_TIMING } from '../simulation/startDelays';
import type { ReceivedMessage } from '../../lib/ports/QueueReceiver';
import type { RunSummary } from '../../lib/services/orchestrator/types';
import type { EmulatorEndpoints } from '../local/clients';
import { createServiceStack, type ServiceStack } from '../local/serviceStack';
import { SimulatedCrash } from '../local/runInterruptions';
import { LANE, type OrchestratorRun, type OrchestratorRunOptions, type TestMessage } from '../local/stackOptions';
import { pause } from '../local/waitFor';
import { MisbehavingApi } from './apiFaults';
import { CallMeter } from './callMeter';
import { dispatchIdsOf, reportingTo, slotsRecovered, type Reports } from './slotCheck';
import { ScenarioClock } from './scenarioClock';
import { AwsFaultInjector } from './awsFaults';
import type { FaultScenario } from './scenarios';
import { WorkerFaultInjector } from './workerFaults';

/** The lane's quotas in every scenario: 20 a second, 600 a minute, 5,000 a day. */
export const FAULT_QUOTAS = [
  { limit: 20, per: 'second' },
  { limit: 600, per: 'minute' },
  { limit: 5_000, per: 'day' },
] as const;

/**
 * Settings over the service stack's fast ones: a margin for arrivals that a loaded 2-core machine spreads; enough
 * attempts that the API's long failures rarely exhaust a healthy job; and a visibility that leaves a received
 * message 6 s to reach its slot while requests are slowed by retries (production leaves 90 s).
 */
const SETTINGS = {
  pacing: { arrivalMarginMs: 200 },
  retry: { maxAttempts: 6 },
  orchestrator: { visibilityTimeoutMs: 8_000 },
} as const;

/** How a `timeout` fault ends: the clients' real timeouts (5 s and more) are pinned by `clientConfig.test.ts`. */
const FAULT_TIMEOUT_MS = 300;
/** A scheduled run lasts this long (production's last a minute); the next starts at the next tick after it ends. */
const RUN_MS = 8_000;
const TICK_MS = 250;
const POLL_MS = 50;
/** A scenario that has not drained by then is reported as such, with what is left counted as lost. */
const SCENARIO_LIMIT_MS = 120_000;

/** Where a killed run stopped, by the AWS request it was about to send. */
export type KillPoint = 'before-invoke' | 'mid-flush' | 'between-invoke-and-flush';

/**
 * How a lane's cap on calls in flight held, in a scenario that sets `maxInFlight`. The calls are counted at the API
 * (from each call's arrival to its answer), the slots in the state table once the scenario has drained.
 */
export interface CallsInFlightResult {
  /** The lane's `maxInFlight`. */
  readonly maxInFlight: number;
  /** Job calls that reached the API. */
  readonly calls: number;
  /** The most job calls in progress at the API at one instant: never above `maxInFlight`. */
  readonly peak: number;
  /** Calls that arrived at the API while `maxInFlight` calls were already in progress there: must be 0. */
  readonly inFlightViolations: number;
  /** Dispatches the runs made, each taking a slot. */
  readonly dispatches: number;
  /**
   * Dispatches of the worker invocations that failed (killed mid-call, or timed out), each job of a batch counted:
   * they report nothing, so their slots were freed when their hold ran out.
   */
  readonly dispatchesOfFailedWorkers: number;
  /** Dispatches whose report a write lost (it failed, or the store turned it away): their slots ran out too. */
  readonly reportsLost: number;
  /** Dispatches whose worker did not fail and yet never reported the end of its call: must be 0 (see `slotsRecovered`). */
  readonly unreportedDispatches: number;
  /** Calls the orchestrator still counted in flight once the scenario had drained (see `slotsRecovered`). */
  readonly slotsHeldAtEnd: number;
  /** Of those, slots of failed workers (or lost reports) whose hold had not run out yet: they free themselves. */
  readonly slotsHeldForFailedWorkers: number;
  /** Slots held at the end for calls that had ended: must be 0. */
  readonly slotsLeaked: number;
  /** Every dispatch but the failed workers' reported its call's end, and no slot leaked. */
  readonly everySlotRecovered: boolean;
}

/** What one scenario came to. */
export interface FaultScenarioResult {
  readonly name: string;
  readonly injects: string;
  /** Messages sent: healthy, FIFO, poison and malformed. */
  readonly jobs: number;
  /** Faults injected, by kind (`dynamodb.GetItem:throttled`, `orchestrator:killed`, `worker:crash-after-call`, …). */
  readonly faults: Readonly<Record<string, number>>;
  readonly faultsInjected: number;
  /** Messages that neither succeeded at the API nor reached a dead-letter queue. */
  readonly lost: number;
  /** Successful API calls beyond the first for a job. */
  readonly duplicateApiCalls: number;
  /** Of those, the ones a crash after the call and before the record explains (at most one per such crash). */
  readonly duplicatesAfterCrashBeforeRecord: number;
  /** Calls the quota referee had to refuse: every call that arrived outside what the tiers allow. */
  readonly quotaViolations: number;
  /** API calls for a job that had already had its final answer (a success, or a 4xx other than 408 and 429). */
  readonly callsAfterEnded: number;
  /** Final answers beyond the first for a job: 200s and 4xx both count. */
  readonly duplicateFinalAnswers: number;
  /** Calls of a FIFO group that arrived after a later message of the group had arrived. */
  readonly fifoInversions: number;
  /** Worker starts drawn by the timing model, by kind (`warm`, `cold`, `throttled`, `held`, `duplicate`). */
  readonly starts: Readonly<Record<string, number>>;
  readonly fifoOrderViolations: number;
  readonly deadLetteredWithReason: number;
  readonly deadLetteredWithoutReason: number;
  /** Healthy jobs among the dead-lettered (their retries ran out during the faults). */
  readonly healthyDeadLettered: number;
  /** Dead letters beyond the first of a job: a job ended twice in the dead-letter queue. */
  readonly repeatedDeadLetters: number;
  /** Jobs that both succeeded and were dead-lettered. */
  readonly succeededAndDeadLettered: number;
  /** Orchestrator runs that ended with an error other than an injected kill. */
  readonly orchestratorCrashes: number;
  /** Those runs' errors, as `Name: message`. */
  readonly crashErrors: readonly string[];
  /** Where each injected kill stopped its run. */
  readonly killPoints: Readonly<Partial<Record<KillPoint, number>>>;
  /** The runs' `quota-exhausted` reports, by the tier that held the quota (`25/day`, `429`). */
  readonly quotaExhausted: Readonly<Record<string, number>>;
  /** How the stale lease holder's run ended, if the scenario had one: it must be `lost`. */
  readonly staleHolder?: RunSummary['lease'] | 'crashed';
  /** How the cap on calls in flight held, if the scenario set one. */
  readonly callsInFlight?: CallsInFlightResult;
  readonly seconds: number;
}

/** A message of the scenario and how it must end. */
interface PlannedMessage {
  readonly queue: 'main' | 'fifo' | 'bulk';
  readonly message: TestMessage;
  /** The job id the API sees, or the body when the API never should. */
  readonly key: string;
  readonly expect: 'success' | 'dead-letter';
}

/**
 * Healthy standard jobs (every fourth to the bulk queue), FIFO groups of four, two poison jobs, and three messages
 * the orchestrator must refuse (one of them in the bulk queue).
 */
function plannedMessages(scenario: FaultScenario): PlannedMessage[] {
  const out: PlannedMessage[] = [];
  for (let n = 1; n <= scenario.jobs; n++)
    out.push({
      queue: n % 4 === 0 ? 'bulk' : 'main',
      message: { body: { id: `j-${n}` } },
      key: `j-${n}`,
      expect: 'success',
    });
  for (let g = 1; g <= scenario.fifoGroups; g++) {
    for (let seq = 1; seq <= 4; seq++) {
      const id = `f-${g}-${seq}`;
      out.push({
        queue: 'fifo',
        message: { body: { id, group: `g-${g}`, seq }, groupId: `g-${g}` },
        key: id,
        expect: 'success',
      });
    }
  }
  for (const id of ['p-1', 'p-2'])
    out.push({ queue: 'main', message: { body: { id, poison: true } }, key: id, expect: 'dead-letter' });
  const cost = { cost: { dataType: 'Number', value: '-3' } };
  out.push({ queue: 'main', message: { body: 'not json {' }, key: 'not json {', expect: 'dead-letter' });
  out.push({ queue: 'main', message: { body: '{"id":"x-1"' }, key: '{"id":"x-1"', expect: 'dead-letter' });
  out.push({ queue: 'bulk', message: { body: { id: 'c-1' }, attributes: cost }, key: 'c-1', expect: 'dead-letter' });
  return out;
}

/** The key a dead-lettered message is matched by: its job id when the body is a job, else the body itself. */
function keyOf(message: ReceivedMessage): string {
  try {
    const id = (JSON.parse(message.body) as { id?: unknown }).id;
    return typeof id === 'string' ? id : message.body;
  } catch {
    return message.body;
  }
}

/**
 * Where the `n`-th kill falls, in turn: at a random invoke (the reservation counted, the invoke never sent), at a
 * random ledger save or lease renewal after the first (mid-flush), and at a random request (wherever it lands).
 */
function killPlan(n: number, random: () => number): Pick<OrchestratorRunOptions, 'killAfterCalls' | 'killAtCommand'> {
  const pick = (from: number, span: number) => from + Math.floor(random() * span);
  switch (n % 3) {
    case 0:
      return { killAtCommand: { command: 'InvokeCommand', occurrence: pick(1, 15) } };
    case 1:
      return { killAtCommand: { command: 'UpdateItemCommand', occurrence: pick(2, 8) } };
    default:
      return { killAfterCalls: pick(3, 40) };
  }
}

function killPointOf(command: string): KillPoint {
  if (command === 'InvokeCommand') return 'before-invoke';
  return /^(Update|Put)/.test(command) ? 'mid-flush' : 'between-invoke-and-flush';
}

/** One orchestrator run of the scenario, and how it ended once it has. */
interface TrackedRun {
  readonly run: OrchestratorRun;
  readonly kind: 'scheduled' | 'manual' | 'stale';
  ended?: { summary?: RunSummary; error?: unknown };
}

function track(run: OrchestratorRun, kind: TrackedRun['kind']): TrackedRun {
  const tracked: TrackedRun = { run, kind };
  run.summary.then(
    (summary) => (tracked.ended = { summary }),
    (error: unknown) => (tracked.ended = { error }),
  );
  return tracked;
}

/**
 * Runs one scenario: a fresh service stack (table, queues, worker on the local Lambda host, simulated API as the
 * quota referee) with the scenario's faults, the planned messages, and orchestrator runs started like the schedule
 * starts them (the next one at the first tick after the last ended) until every message has ended and nothing is
 * in flight. Then it counts what the issue asks for.
 */
export async function runFaultScenario(
  scenario: FaultScenario,
  emulators: EmulatorEndpoints,
  seed: number,
): Promise<FaultScenarioResult> {
  const random = seededRandom(seed);
  const zero = { at: Date.now() };
  const aws = new AwsFaultInjector(
    scenario.aws ?? [],
    () => zero.at,
    random,
    () => FAULT_TIMEOUT_MS,
  );
  const meter = new CallMeter();
  const worker = new WorkerFaultInjector(scenario.worker ?? {}, (key) => meter.arrival(key));
  const reports: Reports = { recorded: new Set(), lost: new Set() };
  let api: MisbehavingApi | undefined;
  const timingRandom = seededRandom(seed + 1_000);
  const { midnightAfterMs, clockLeaps } = scenario;
  const clock =
    midnightAfterMs === undefined && clockLeaps === undefined
      ? undefined
      : new ScenarioClock({
          timeZone: scenario.timeZone ?? 'UTC',
          ...(midnightAfterMs === undefined ? {} : { midnightAfterMs }),
          ...(clockLeaps === undefined ? {} : { leaps: clockLeaps }),
        });
  const stack = await createServiceStack({
    quotas: scenario.quotas ?? FAULT_QUOTAS,
    emulators,
    ...SETTINGS,
    invokeTiming: { model: scenario.timing ?? REALISTIC_TIMING, random: timingRandom },
    ...(clock === undefined ? {} : { clock }),
    ...(scenario.timeZone === undefined ? {} : { timeZone: scenario.timeZone }),
    ...(scenario.maxReceiveCount === undefined ? {} : { maxReceiveCount: scenario.maxReceiveCount }),
    ...(scenario.outages === undefined ? {} : { outages: scenario.outages }),
    ...(scenario.maxInFlight === undefined ? {} : { maxInFlight: scenario.maxInFlight }),
    ...(scenario.limits === undefined ? {} : { limits: scenario.limits }),
    ...(scenario.latencyMs === undefined ? {} : { latencyMs: scenario.latencyMs }),
    ...(scenario.apiConcurrency === undefined ? {} : { apiConcurrency: scenario.apiConcurrency }),
    ...(scenario.pool === undefined ? {} : { pool: scenario.pool, companion: COMPANION_QUOTAS }),
    faults: {
      orchestratorClients: (clients) => aws.attach(clients, 'orchestrator'),
      workerClients: (clients) => aws.attach(clients, 'worker'),
      workerDeps: (deps) => worker.deps(reportingTo(deps, reports)),
      workerHandler: (handler) => worker.handler(handler),
      // The meter sits behind the faults: a call a fault answers never reaches the API.
      api: (inner) =>
        (api = new MisbehavingApi(
          meter.around(inner),
          scenario.api ?? [],
          () => zero.at,
          (body, context, status) => inner.recordOutcome(body, context, status),
        )),
    },
  });
  try {
    const planned = plannedMessages(scenario);
    for (const p of planned) await stack.send(p.queue, [p.message]);
    await stack.companion?.sendJobs(COMPANION_JOBS);
    // Fault windows, midnight and leaps count from the first run's start.
    zero.at = Date.now();
    clock?.start();
    const runs = await drive(stack, scenario, random);
    const result = withCompanion(
      await tally(stack, scenario, planned, runs, { aws, api, worker }),
      await companionTally(stack),
    );
    const callsInFlight = await callsInFlightOf(stack, runs.runs, { meter, reports }, clock?.now() ?? Date.now());
    return callsInFlight === undefined ? result : { ...result, callsInFlight };
  } finally {
    await stack.close();
  }
}

/** Starts runs as the schedule would (plus manual invokes and the stale holder) until the stack has drained. */
async function drive(
  stack: ServiceStack,
  scenario: FaultScenario,
  random: () => number,
): Promise<{ runs: TrackedRun[]; seconds: number }> {
  const runs: TrackedRun[] = [];
  const began = Date.now();
  let lastManual = began;
  let drainedSince: number | undefined;
  while (Date.now() - began < SCENARIO_LIMIT_MS) {
    const scheduled = runs.filter((r) => r.kind !== 'manual');
    if (scheduled.every((r) => r.ended !== undefined)) {
      if (scheduled.length === 0 && scenario.staleHolder !== undefined) {
        runs.push(track(stack.startOrchestrator({ deadlineMs: RUN_MS, freeze: scenario.staleHolder }), 'stale'));
      } else {
        // Every run is armed until the planned number of kills has hit: an armed run may end before its request comes.
        const hits = runs.filter((r) => r.ended?.error instanceof SimulatedCrash).length;
        const kill = hits < (scenario.kills ?? 0) ? killPlan(hits, random) : {};
        runs.push(track(stack.startOrchestrator({ deadlineMs: RUN_MS, ...kill }), 'scheduled'));
      }
    }
    const every = scenario.manualInvokeEveryMs;
    if (every !== undefined && Date.now() - lastManual >= every) {
      lastManual = Date.now();
      runs.push(track(stack.startOrchestrator({ deadlineMs: RUN_MS }), 'manual'));
    }
    // Drained twice 300 ms apart: a message between a worker's delete and its requeue is in neither place for a moment.
    if (await stack.drained()) {
      drainedSince ??= Date.now();
      if (Date.now() - drainedSince >= 300) break;
    } else {
      drainedSince = undefined;
    }
    await pause(scheduled.every((r) => r.ended !== undefined) ? TICK_MS : POLL_MS);
  }
  const seconds = (Date.now() - began) / 1000;
  for (const r of runs) r.run.stop();
  await Promise.all(runs.map((r) => r.run.summary.catch(() => undefined)));
  return { runs, seconds };
}

async function tally(
  stack: ServiceStack,
  scenario: FaultScenario,
  planned: readonly PlannedMessage[],
  { runs, seconds }: { runs: readonly TrackedRun[]; seconds: number },
  injectors: { aws: AwsFaultInjector; api: MisbehavingApi | undefined; worker: WorkerFaultInjector },
): Promise<FaultScenarioResult> {
  const deadLettered = await stack.harness.receiveDeadLetters();
  const withReason = deadLettered.filter((m) => (m.attributes.reason?.value ?? '') !== '');
  const deadKeys = new Set(deadLettered.map(keyOf));
  const successes = stack.api.successesById();
  const lost = planned.filter((p) => !(p.expect === 'success' && successes.has(p.key)) && !deadKeys.has(p.key)).length;
  const healthyDeadLettered = planned.filter(
    (p) => p.expect === 'success' && !successes.has(p.key) && deadKeys.has(p.key),
  ).length;

  // A worker killed mid-call also dies between the call and its record: the API handled the call, the service never
  // learnt of it; so does one Lambda stopped at its timeout after its call (a slow table's retries can take that long).
  const crashedAfterCall = new Set([
    ...injectors.worker.crashes('after-call'),
    ...injectors.worker.crashes('mid-call'),
    ...stack.jobsKilledAfterCall(),
  ]);
  let duplicates = 0;
  let explained = 0;
  for (const [id, n] of successes) {
    duplicates += n - 1;
    if (n > 1 && crashedAfterCall.has(id)) explained++;
  }

  const killPoints: Partial<Record<KillPoint, number>> = {};
  const crashErrors: string[] = [];
  for (const r of runs) {
    const error = r.ended?.error;
    if (error instanceof SimulatedCrash) {
      const point = killPointOf(error.command);
      killPoints[point] = (killPoints[point] ?? 0) + 1;
    } else if (error !== undefined) {
      crashErrors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    }
  }
  const kills = Object.values(killPoints).reduce((sum, n) => sum + n, 0);
  const quotaExhausted: Record<string, number> = {};
  for (const event of runs.flatMap((r) => r.run.events))
    if (event.type === 'quota-exhausted') quotaExhausted[event.tier] = (quotaExhausted[event.tier] ?? 0) + 1;
  const stale = runs.find((r) => r.kind === 'stale');
  const manual = runs.filter((r) => r.kind === 'manual').length;
  const faults = {
    ...injectors.aws.injected(),
    ...(injectors.api?.injected() ?? {}),
    ...Object.fromEntries(Object.entries(injectors.worker.injected()).filter(([, n]) => n > 0)),
    ...(kills > 0 ? { 'orchestrator:killed': kills } : {}),
    ...(stale === undefined ? {} : { 'orchestrator:stale-lease-holder': 1 }),
    ...(manual > 0 ? { 'orchestrator:manual-invoke': manual } : {}),
    ...(stack.jobsKilledAfterCall().size > 0
      ? { 'lambda:timed-out-after-call': stack.jobsKilledAfterCall().size }
      : {}),
    ...(scenario.outages === undefined ? {} : { 'api:outage': scenario.outages.length }),
    ...(scenario.midnightAfterMs === undefined ? {} : { 'clock:midnight': 1 }),
    ...(scenario.clockLeaps === undefined ? {} : { 'clock:leap': scenario.clockLeaps.length }),
    // What the invoke timing drew beyond a warm start: each a start Lambda makes late, or an event it delivers twice.
    ...Object.fromEntries(
      Object.entries(stack.workerStarts())
        .filter(([kind]) => kind !== 'warm' && kind !== 'fixed')
        .map(([kind, n]) => [`lambda:${kind === 'duplicate' ? 'delivered-twice' : `${kind}-start`}`, n]),
    ),
  };
  const report = stack.api.report();
  const outcomes = stack.api.outcomeReport();
  return {
    name: scenario.name,
    injects: scenario.injects,
    jobs: planned.length,
    faults,
    faultsInjected: Object.values(faults).reduce((sum, n) => sum + n, 0),
    lost,
    duplicateApiCalls: duplicates,
    duplicatesAfterCrashBeforeRecord: explained,
    quotaViolations: report.rejectedByApi,
    ...outcomes,
    starts: stack.workerStarts(),
    fifoOrderViolations: report.fifoOrderViolations,
    deadLetteredWithReason: withReason.length,
    deadLetteredWithoutReason: deadLettered.length - withReason.length,
    healthyDeadLettered,
    repeatedDeadLetters: deadLettered.length - deadKeys.size,
    succeededAndDeadLettered: [...deadKeys].filter((key) => successes.has(key)).length,
    orchestratorCrashes: crashErrors.length,
    crashErrors,
    killPoints,
    quotaExhausted,
    ...(stale === undefined ? {} : { staleHolder: stale.ended?.summary?.lease ?? 'crashed' }),
    seconds,
  };
}

/** A scenario's companion lane's tiers (see `ServiceStackOptions.companion`): it competes with the lane for the pool. */
const COMPANION_QUOTAS = [{ limit: 10, per: 'second' }] as const;
/** Healthy jobs `m-1` … of the companion lane. */
const COMPANION_JOBS = 20;

/** What a scenario's companion lane came to: its jobs, those lost, its API's refusals and its calls beyond a job's first success. */
interface CompanionTally {
  readonly jobs: number;
  readonly lost: number;
  readonly refused: number;
  readonly duplicates: number;
  /** Its jobs called again after their worker was stopped at its timeout between the call and its record. */
  readonly duplicatesAfterTimeout: number;
  /** Its dead letters, with their reason and without. */
  readonly deadLettered: { readonly withReason: number; readonly withoutReason: number };
}

/** The companion lane's figures once the scenario has drained; nothing without one. */
async function companionTally(stack: ServiceStack): Promise<CompanionTally | undefined> {
  const { companion } = stack;
  if (companion === undefined) return undefined;
  const successes = companion.api.successesById();
  const letters = await companion.receiveDeadLetters();
  const dead = new Set(letters.map(keyOf));
  const withReason = letters.filter((m) => (m.attributes.reason?.value ?? '') !== '').length;
  const ids = Array.from({ length: COMPANION_JOBS }, (_, i) => `m-${i + 1}`);
  return {
    jobs: COMPANION_JOBS,
    lost: ids.filter((id) => !successes.has(id) && !dead.has(id)).length,
    refused: companion.api.report().rejectedByApi,
    duplicates: [...successes.values()].reduce((sum, n) => sum + n - 1, 0),
    duplicatesAfterTimeout: [...successes].filter(([id, n]) => n > 1 && stack.jobsKilledAfterCall().has(id)).length,
    deadLettered: { withReason, withoutReason: letters.length - withReason },
  };
}

/**
 * `result` with the companion lane's figures added: its jobs, its lost ones, its API's refusals as quota violations,
 * its duplicate calls (no worker crash is planned for its jobs: only a worker stopped at its timeout after its call
 * explains one), and its dead letters (all of healthy jobs whose retries ran out).
 */
function withCompanion(result: FaultScenarioResult, companion: CompanionTally | undefined): FaultScenarioResult {
  if (companion === undefined) return result;
  return {
    ...result,
    jobs: result.jobs + companion.jobs,
    lost: result.lost + companion.lost,
    quotaViolations: result.quotaViolations + companion.refused,
    duplicateApiCalls: result.duplicateApiCalls + companion.duplicates,
    duplicatesAfterCrashBeforeRecord: result.duplicatesAfterCrashBeforeRecord + companion.duplicatesAfterTimeout,
    healthyDeadLettered: result.healthyDeadLettered + companion.deadLettered.withReason,
    deadLetteredWithReason: result.deadLetteredWithReason + companion.deadLettered.withReason,
    deadLetteredWithoutReason: result.deadLetteredWithoutReason + companion.deadLettered.withoutReason,
  };
}

/**
 * The cap's figures of a drained scenario on a lane with `maxInFlight` (see {@link CallsInFlightResult}), read at
 * `now` on the service's clock; `undefined` without a cap.
 */
async function callsInFlightOf(
  stack: ServiceStack,
  runs: readonly TrackedRun[],
  seen: { meter: CallMeter; reports: Reports },
  now: number,
): Promise<CallsInFlightResult | undefined> {
  const { maxInFlight, pacing, orchestrator } = stack.config;
  if (maxInFlight === undefined) return undefined;
  const { calls, peak, overCap } = seen.meter.report(maxInFlight);
  const [saved, pending] = await Promise.all([
    stack.stores.ledger.loadLedger(LANE),
    stack.stores.ledger.pendingSettlements(LANE),
  ]);
  const dispatched = new Set(
    runs.flatMap((r) => r.run.events.flatMap((e) => (e.type === 'dispatched' ? [e.dispatchId] : []))),
  );
  const failed = new Set(stack.workerFailures.flatMap((record) => dispatchIdsOf(record.requestPayload)));
  const holdMs = pacing.arrivalMarginMs + orchestrator.workerTimeoutMs;
  const slots = slotsRecovered({
    dispatched,
    reports: seen.reports,
    failed,
    saved,
    pending,
    cap: maxInFlight,
    holdMs,
    now,
  });
  return {
    maxInFlight,
    calls,
    peak,
    inFlightViolations: overCap,
    dispatches: slots.dispatches,
    dispatchesOfFailedWorkers: failed.size,
    reportsLost: [...seen.reports.lost].filter((id) => !seen.reports.recorded.has(id)).length,
    unreportedDispatches: slots.unreported,
    slotsHeldAtEnd: slots.heldAtEnd,
    slotsHeldForFailedWorkers: slots.heldForFailed,
    slotsLeaked: slots.leaked,
    everySlotRecovered: slots.unreported === 0 && slots.leaked === 0,
  };
}

/** The suite's totals, with the keys `npm run faults -- --json` prints. */
export interface FaultTotals {
  readonly scenarios: number;
  readonly faultsInjected: number;
  readonly jobs: number;
  readonly lost: number;
  readonly duplicateApiCalls: number;
  readonly duplicatesAfterCrashBeforeRecord: number;
  readonly unexplainedDuplicates: number;
  readonly quotaViolations: number;
  readonly callsAfterEnded: number;
  readonly duplicateFinalAnswers: number;
  readonly fifoInversions: number;
  readonly fifoOrderViolations: number;
  readonly deadLetteredWithReason: number;
  readonly deadLetteredWithoutReason: number;
  readonly repeatedDeadLetters: number;
  readonly succeededAndDeadLettered: number;
  readonly orchestratorCrashes: number;
  /** Calls that arrived at the API while the lane's `maxInFlight` were in progress (see {@link CallsInFlightResult}). */
  readonly inFlightViolations: number;
  /** Call slots still held at the end for calls that had ended (see {@link CallsInFlightResult}). */
  readonly callSlotsLeaked: number;
}

/** Sums scenario results. */
export function totalsOf(results: readonly FaultScenarioResult[]): FaultTotals {
  const sum = (pick: (r: FaultScenarioResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  return {
    scenarios: results.length,
    faultsInjected: sum((r) => r.faultsInjected),
    jobs: sum((r) => r.jobs),
    lost: sum((r) => r.lost),
    duplicateApiCalls: sum((r) => r.duplicateApiCalls),
    duplicatesAfterCrashBeforeRecord: sum((r) => r.duplicatesAfterCrashBeforeRecord),
    unexplainedDuplicates: sum((r) => r.duplicateApiCalls - r.duplicatesAfterCrashBeforeRecord),
    quotaViolations: sum((r) => r.quotaViolations),
    callsAfterEnded: sum((r) => r.callsAfterEnded),
    duplicateFinalAnswers: sum((r) => r.duplicateFinalAnswers),
    fifoInversions: sum((r) => r.fifoInversions),
    fifoOrderViolations: sum((r) => r.fifoOrderViolations),
    deadLetteredWithReason: sum((r) => r.deadLetteredWithReason),
    deadLetteredWithoutReason: sum((r) => r.deadLetteredWithoutReason),
    repeatedDeadLetters: sum((r) => r.repeatedDeadLetters),
    succeededAndDeadLettered: sum((r) => r.succeededAndDeadLettered),
    orchestratorCrashes: sum((r) => r.orchestratorCrashes),
    inFlightViolations: sum((r) => r.callsInFlight?.inFlightViolations ?? 0),
    callSlotsLeaked: sum((r) => r.callsInFlight?.slotsLeaked ?? 0),
  };
}
