import { FakeClock } from '../../tools/memory/FakeClock';
import { MemoryInvoker } from '../../tools/memory/MemoryInvoker';
import { MemoryQueues } from '../../tools/memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../tools/memory/MemoryStores';
import { parseServiceConfig, type ServiceConfig } from '../../lib/config';
import { circuitPolicyFrom } from '../../lib/domain/breaker/policy';
import type { JsonValue } from '../../lib/domain/json';
import type { ApiResult } from '../../lib/domain/outcome/apiResult';
import { QuotaLedger } from '../../lib/domain/quota/ledger';
import type { Period, TierUnit } from '../../lib/domain/quota/tiers';
import type { PacingSettings } from '../../lib/domain/pacing/settings';
import { ACTUAL_COST_HEADER } from '../../lib/domain/usage/usageSources';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { JobEvent, WorkerEvent } from '../../lib/ports/Invoker';
import type { MessageAttribute, SourceQueue } from '../../lib/ports/QueueReceiver';
import type { CircuitStore } from '../../lib/ports/CircuitStore';
import type { LedgerStore } from '../../lib/ports/LedgerStore';
import { applyCircuitEvent } from '../../lib/services/circuitUpdates';
import { jobEventOf, parseJob } from '../../lib/services/parseJob';
import type { WorkerDeps } from '../../lib/services/worker/types';
import type { OrchestratorDeps, OrchestratorEvent, RunSummary } from '../../lib/services/orchestrator/types';

/** Virtual start instant of every service test: a fixed Monday, 00:00 UTC (a multiple of every ledger bucket). */
export const START = Date.UTC(2026, 0, 5);

/** The lane every fixture uses. */
export const LANE = 'default';

/** Sections of the config a test may override; each is merged over {@link testConfig}'s small timings. */
export interface ConfigOverrides {
  readonly quotas?: readonly { readonly limit: number; readonly per: Period; readonly unit?: TierUnit }[];
  readonly pacing?: Partial<PacingSettings>;
  readonly circuit?: Record<string, number | boolean>;
  readonly retry?: Record<string, number>;
  readonly orchestrator?: Record<string, number>;
  readonly limits?: Record<string, unknown>;
  readonly priorities?: Record<string, number>;
}

/**
 * A validated config with small timings: 5 requests per second, no ramp and no pause jitter, no arrival margin (calls
 * counted at their slot, dispatched at it and started by it on virtual time, the lead never growing), a circuit that opens
 * after 3 failures and checks after 2 s, 3 attempts, flush every second, 30 s visibility over a 5 s worker timeout.
 */
export function testConfig(overrides: ConfigOverrides = {}): ServiceConfig {
  return parseServiceConfig({
    lane: LANE,
    quotas: overrides.quotas ?? [{ limit: 5, per: 'second' }],
    pacing: {
      rampSeconds: 0,
      pauseJitterMs: 0,
      arrivalMarginMs: 0,
      callAllowanceMs: 0,
      dispatchLeadMs: 0,
      maxDispatchLeadMs: 0,
      batchWindowMs: 100,
      ...overrides.pacing,
    },
    circuit: {
      failureThreshold: 3,
      windowSeconds: 10,
      openSeconds: 2,
      healthCheckSeconds: 1,
      healthCheckTimeoutSeconds: 5,
      ...overrides.circuit,
    },
    retry: { maxAttempts: 3, baseDelayMs: 1_000, ...overrides.retry },
    ...(overrides.limits === undefined ? {} : { limits: overrides.limits }),
    ...(overrides.priorities === undefined ? {} : { priorities: overrides.priorities }),
    orchestrator: {
      leaseTtlMs: 5_000,
      flushIntervalMs: 1_000,
      circuitPollMs: 100,
      visibilityTimeoutMs: 30_000,
      workerTimeoutMs: 5_000,
      idleWaitMs: 200,
      // Tests start a run and feed it later: it never ends for want of work unless a test asks for it.
      idleStopMs: 900_000,
      invokeBackoffMs: 100,
      ...overrides.orchestrator,
    },
  });
}

/** A `Number` message attribute. */
export function numberAttr(value: number | string): MessageAttribute {
  return { dataType: 'Number', value: String(value) };
}

/** A `String` message attribute. */
export function stringAttr(value: string): MessageAttribute {
  return { dataType: 'String', value };
}

/** Optional parts of a job message sent with {@link sendJob}. */
export interface JobOptions {
  readonly cost?: number;
  readonly idempotencyKey?: string;
  /** The `attempt` attribute a requeued message carries. */
  readonly attempt?: number;
  readonly groupId?: string;
  /** Raw attributes, merged over the ones above. */
  readonly attributes?: Readonly<Record<string, MessageAttribute>>;
}

/**
 * The JSON text of job `id` that parsing and serialising again would change: an integer beyond 2^53, a number beyond
 * a double, a duplicate key, unusual whitespace (a tab, CR LF, spaces around a colon, a trailing newline) and unicode
 * escapes (`\u00e9`, an escaped surrogate pair, `\/`, `-0.0`, `1.10`). The service hands it on byte for byte. Its
 * characters stay in the BMP, which fauxqs 1.9.2 requires of bodies.
 */
export function awkwardBody(id: string): string {
  return `{ "id" : "${id}",\t"big": 1790000000000000123, "huge": 1e400, "dup": 1, "dup": 2,\r\n  "esc": "\\u00e9\\ud83d\\ude00\\/", "plain": "é字", "zero": -0.0, "ten": 1.10 }\n`;
}

/** Sends one job message with the contract's attributes; bodies that are not strings are JSON-encoded. */
export async function sendJob(
  queues: MemoryQueues,
  queue: SourceQueue,
  body: JsonValue | string,
  options: JobOptions = {},
): Promise<void> {
  const attributes: Record<string, MessageAttribute> = {};
  if (options.cost !== undefined) attributes.cost = numberAttr(options.cost);
  if (options.idempotencyKey !== undefined) attributes.idempotencyKey = stringAttr(options.idempotencyKey);
  if (options.attempt !== undefined) attributes.attempt = numberAttr(options.attempt);
  await queues.send(queue, {
    body: typeof body === 'string' ? body : JSON.stringify(body),
    attributes: { ...attributes, ...options.attributes },
    ...(options.groupId === undefined ? {} : { groupId: options.groupId }),
  });
}

/**
 * Sends `n` jobs to the main queue, with bodies `{ id: 'j-1' }` … `{ id: 'j-n' }`, each with the Number attributes
 * `attributes` (a named unit's estimate, say).
 */
export async function sendMain(
  queues: MemoryQueues,
  n: number,
  attributes: Record<string, number> = {},
): Promise<void> {
  const numbers = Object.fromEntries(Object.entries(attributes).map(([name, value]) => [name, numberAttr(value)]));
  for (let i = 1; i <= n; i++) await sendJob(queues, 'main', { id: `j-${i}` }, { attributes: numbers });
}

/** A 2xx answer, optionally reporting the `cost` units the call really consumed (header `x-actual-cost`). */
export function ok(actualCost?: number): ApiResult {
  return {
    kind: 'response',
    status: 200,
    headers: actualCost === undefined ? {} : { [ACTUAL_COST_HEADER]: String(actualCost) },
  };
}

/** An HTTP answer with `status` and lower-case `headers`. */
export function httpStatus(status: number, headers: Record<string, string> = {}): ApiResult {
  return { kind: 'response', status, headers };
}

/** One call as a {@link ScriptedApi} saw it. */
export interface ScriptedCall {
  readonly at: number;
  /** The body's JSON text as the caller got it. */
  readonly body: string;
  readonly idempotencyKey: string;
}

/**
 * A hand-written {@link ApiCaller}: answers calls with the results queued in `answers` (then `fallback`), probes with
 * those in `probeAnswers` (then 200), each `latencyMs` after it arrives on the clock, and records every call.
 */
export class ScriptedApi implements ApiCaller {
  readonly calls: ScriptedCall[] = [];
  readonly answers: ApiResult[] = [];
  readonly probeAnswers: ApiResult[] = [];
  probes = 0;
  /** When set, decides each call's answer instead of `answers`. */
  answer?: (body: string, call: number) => ApiResult;

  constructor(
    private readonly clock: FakeClock,
    public latencyMs = 0,
    public fallback: ApiResult = ok(),
  ) {}

  async call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    this.calls.push({ at: this.clock.now(), body, idempotencyKey: context.idempotencyKey });
    const result = this.answer?.(body, this.calls.length) ?? this.answers.shift() ?? this.fallback;
    if (this.latencyMs > 0) await this.clock.sleep(this.latencyMs);
    return result;
  }

  async probe(): Promise<ApiResult> {
    this.probes++;
    const result = this.probeAnswers.shift() ?? ok();
    if (this.latencyMs > 0) await this.clock.sleep(this.latencyMs);
    return result;
  }
}

/** A worker's world on virtual time: in-memory stores and queues, a {@link ScriptedApi}, and `random` fixed at 0.5. */
export interface WorkerHarness {
  readonly clock: FakeClock;
  readonly stores: MemoryStores;
  readonly queues: MemoryQueues;
  readonly api: ScriptedApi;
  readonly config: ServiceConfig;
  readonly deps: WorkerDeps;
}

/** Builds a {@link WorkerHarness}; `queues` may be a subclass that injects faults. */
export function workerHarness(
  config: ServiceConfig = testConfig(),
  queues?: (clock: FakeClock) => MemoryQueues,
): WorkerHarness {
  const clock = new FakeClock(START);
  const stores = memoryStores();
  const q = queues?.(clock) ?? new MemoryQueues({ clock });
  const api = new ScriptedApi(clock);
  return { clock, stores, queues: q, api, config, deps: { clock, stores, queues: q, api, config, random: () => 0.5 } };
}

/**
 * Receives the next message of `queue` (30 s visibility) and turns it into the job event the orchestrator would
 * send: parsed with `parseJob`, with a reservation of its cost made now (its slot), to be called by the margin's end.
 * @throws Error if the queue has nothing to deliver or the message is malformed.
 */
export async function receiveJobEvent(
  h: WorkerHarness,
  queue: SourceQueue,
  dispatchId: string,
  { visibilityMs = 30_000 }: { visibilityMs?: number } = {},
): Promise<JobEvent> {
  const [message] = await h.queues.receive(queue, { max: 1, visibilityMs, waitMs: 0 });
  if (message === undefined) throw new Error(`nothing to receive from '${queue}'`);
  const parsed = parseJob(message, h.config.units);
  if (!parsed.ok) throw new Error(parsed.reason);
  const { job } = parsed;
  const { arrivalMarginMs, callAllowanceMs } = h.config.pacing;
  return jobEventOf(
    h.config.lane,
    message,
    job,
    dispatchId,
    { at: h.clock.now(), costs: job.costs, windows: {} },
    h.clock.now() + arrivalMarginMs - callAllowanceMs,
    h.clock.now(),
  );
}

/** Opens the lane's circuit at `at` by applying `failureThreshold` transient failures, as workers would. */
export async function openCircuit(store: CircuitStore, config: ServiceConfig, at: number): Promise<void> {
  const policy = circuitPolicyFrom(config.circuit);
  for (let i = 0; i < config.circuit.failureThreshold; i++) {
    await applyCircuitEvent(store, config.lane, { type: 'transient-failure' }, at, policy);
  }
}

/** Units the lane's stored ledger holds at `now` on the tier with `per` (and `unit`, default requests). */
export async function storedUsage(
  store: LedgerStore,
  config: ServiceConfig,
  now: number,
  per: Period,
  unit: TierUnit = 'requests',
): Promise<number | undefined> {
  const json = await store.loadLedger(config.lane);
  if (json === undefined) return undefined;
  const usage = QuotaLedger.fromJSON(config.quotas, json, { timeZone: config.timeZone }).usage(now);
  return usage.find((u) => u.tier.per === per && u.tier.unit === unit)?.used;
}

/** An orchestrator's world on virtual time, with every event it reports and every worker event it sends. */
export interface OrchestratorHarness {
  readonly clock: FakeClock;
  readonly stores: MemoryStores;
  readonly queues: MemoryQueues;
  readonly invoker: MemoryInvoker;
  readonly config: ServiceConfig;
  readonly deps: OrchestratorDeps;
  /** What the orchestrator reported, in order. */
  readonly events: OrchestratorEvent[];
  /** What workers received, in order, each with the instant its handler started. */
  readonly workerEvents: { readonly at: number; readonly event: WorkerEvent }[];
}

/** Options of {@link orchestratorHarness}. */
export interface OrchestratorHarnessOptions {
  readonly config?: ServiceConfig;
  /**
   * The worker, after the event is recorded. @default a worker that deletes a job's message at once (succeeds)
   * and ignores health checks.
   */
  readonly worker?: (event: WorkerEvent, h: OrchestratorHarness) => Promise<unknown>;
  readonly owner?: string;
  /** Lets a test share the stores (e.g. across runs) or put a fault-injecting one in. */
  readonly stores?: MemoryStores;
  readonly clock?: FakeClock;
  readonly queues?: MemoryQueues;
}

/** The job events `event` carries: itself, a batch's jobs, or none (a health check). */
export function jobsOf(event: WorkerEvent): readonly JobEvent[] {
  return event.kind === 'job' ? [event] : event.kind === 'batch' ? event.jobs : [];
}

/**
 * A worker for {@link orchestratorHarness} whose first job starts `startDelayMs` after its event was sent, too late
 * for its slot: it gives that job back (its reservation refunded with the delay, its message visible again), and
 * every other job succeeds.
 */
export function firstStartsLate(startDelayMs: number): NonNullable<OrchestratorHarnessOptions['worker']> {
  let reported = false;
  return async (event, harness) => {
    for (const job of jobsOf(event)) {
      if (reported) {
        await harness.queues.delete(job.queue, job.receiptHandle);
        continue;
      }
      reported = true;
      const { reservation, dispatchId: id } = job;
      await harness.stores.ledger.addSettlements(LANE, { reservation, actual: null, id, startDelayMs });
      await harness.queues.changeVisibility(job.queue, job.receiptHandle, 0);
    }
  };
}

/** Builds an {@link OrchestratorHarness}: in-memory ports, `random` fixed at 0, ids `id-1`, `id-2`, … */
export function orchestratorHarness(options: OrchestratorHarnessOptions = {}): OrchestratorHarness {
  const clock = options.clock ?? new FakeClock(START);
  const stores = options.stores ?? memoryStores();
  const queues = options.queues ?? new MemoryQueues({ clock });
  const config = options.config ?? testConfig();
  const events: OrchestratorEvent[] = [];
  const workerEvents: { at: number; event: WorkerEvent }[] = [];
  const worker =
    options.worker ??
    (async (event: WorkerEvent) => {
      for (const job of jobsOf(event)) await queues.delete(job.queue, job.receiptHandle);
    });
  let ids = 0;
  // The handler only runs after the harness is built, so it reads it from here.
  const built: { harness?: OrchestratorHarness } = {};
  const invoker = new MemoryInvoker({
    clock,
    handler: async (event) => {
      workerEvents.push({ at: clock.now(), event });
      if (built.harness !== undefined) await worker(event, built.harness);
    },
  });
  const deps: OrchestratorDeps = {
    clock,
    stores,
    queues,
    invoker,
    config,
    random: () => 0,
    owner: options.owner ?? 'orchestrator-1',
    newId: () => `id-${++ids}`,
    onEvent: (event) => events.push(event),
  };
  built.harness = { clock, stores, queues, invoker, config, deps, events, workerEvents };
  return built.harness;
}

/**
 * Drives the clock until `run` settles (or virtual time would pass `limit`), then returns its summary.
 * @throws Error when the run has not ended by `limit`; the run's own error if it rejected.
 */
export async function drive(clock: FakeClock, run: Promise<RunSummary>, limit: number): Promise<RunSummary> {
  let outcome: { ok: true; summary: RunSummary } | { ok: false; error: unknown } | undefined;
  void run.then(
    (summary) => (outcome = { ok: true, summary }),
    (error: unknown) => (outcome = { ok: false, error }),
  );
  await clock.runUntil(() => outcome !== undefined, limit);
  if (outcome === undefined) throw new Error(`the run had not ended by ${limit - START} ms after START`);
  if (!outcome.ok) throw outcome.error;
  return outcome.summary;
}

/** The `dispatched` events, in order. */
export function dispatchedEvents(
  events: readonly OrchestratorEvent[],
): Extract<OrchestratorEvent, { type: 'dispatched' }>[] {
  return events.filter((e): e is Extract<OrchestratorEvent, { type: 'dispatched' }> => e.type === 'dispatched');
}

/** Instants relative to {@link START}. */
export function rel(instants: readonly number[]): number[] {
  return instants.map((t) => t - START);
}
