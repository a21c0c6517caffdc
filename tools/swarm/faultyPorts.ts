import { HEADER_LIES, withLyingHeaders } from '../simulation/headerLies';
import { InvokeFailedError } from '../../lib/errors';
import type { ApiCaller, ApiResult, Preparation } from '../../lib/ports/ApiCaller';
import type { CircuitStore } from '../../lib/ports/CircuitStore';
import type { Clock } from '../../lib/ports/Clock';
import type { Invoker } from '../../lib/ports/Invoker';
import type { QueueReceiver } from '../../lib/ports/QueueReceiver';
import type { SimulatedPorts } from '../simulation/runSimulation';
import { jobIdOf } from '../simulation/jobs';
import type { FaultPlan } from './drawCase';

/** An error the swarm injected: a lost answer, an unavailable store, a crashed worker or a killed run. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/** What the injected faults did, by kind (`dynamodb.claimRefund:lost-answer`, `worker:crash-after-call`, …). */
export type FaultLog = Map<string, number>;

function count(log: FaultLog, kind: string): void {
  log.set(kind, (log.get(kind) ?? 0) + 1);
}

/** Store methods that write: each may land and lose its answer. */
const STORE_WRITES = new Set([
  'putIdempotencyIfAbsent',
  'putIdempotency',
  'claimRefund',
  'recordBatchSuccesses',
  'reopenDeadLettered',
  'addSettlements',
  'saveLedger',
  'saveCircuit',
  'recordReading',
  'recordRateLimited',
]);

/** Store writes a worker makes before its call: they may also fail without landing (DynamoDB unavailable). */
const BEFORE_CALL = new Set(['putIdempotencyIfAbsent', 'claimRefund']);

/** Queue methods that write. */
const QUEUE_WRITES = new Set(['send', 'sendBatch', 'delete', 'deleteBatch', 'changeVisibility']);

/**
 * `port` whose writes (`writes`) fail as the plan draws: with `unavailable` (for `beforeCall` methods only) they throw
 * without landing; with `lostAnswers` they land and then throw.
 */
function faultyWrites<T extends object>(
  port: T,
  prefix: string,
  writes: ReadonlySet<string>,
  plan: Pick<FaultPlan, 'lostAnswers' | 'unavailable'>,
  random: () => number,
  log: FaultLog,
): T {
  return new Proxy(port, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      const name = String(key);
      if (typeof value !== 'function' || !writes.has(name)) return value;
      return async (...args: unknown[]) => {
        if (BEFORE_CALL.has(name) && random() < plan.unavailable) {
          count(log, `${prefix}.${name}:unavailable`);
          throw new InjectedFault(`injected: ${prefix} unavailable`);
        }
        const result: unknown = await (value as (...a: unknown[]) => unknown).apply(target, args);
        if (random() < plan.lostAnswers) {
          count(log, `${prefix}.${name}:lost-answer`);
          throw new InjectedFault(`injected: ${prefix}.${name} landed and its answer was lost`);
        }
        return result;
      };
    },
  });
}

/**
 * The workers' ports with the plan's store and queue faults. Every message a worker sends to a dead-letter queue is
 * entered in `journal` when it lands.
 */
export function faultyWorkerPorts(
  ports: SimulatedPorts,
  plan: FaultPlan,
  random: () => number,
  log: FaultLog,
  journal: { readonly clock: Clock; readonly entries: JournalEntry[] },
): SimulatedPorts {
  const { lease, ledger, circuit, idempotency } = ports.stores;
  const journaled: CircuitStore = Object.create(circuit) as CircuitStore;
  journaled.saveCircuit = async (lane, next) => {
    const written = await circuit.saveCircuit(lane, next);
    const at = journal.clock.now();
    if (written && next.pausedUntil > at)
      journal.entries.push({ jobId: undefined, at, status: 'paused', until: next.pausedUntil });
    return written;
  };
  const stores = {
    lease,
    ledger: faultyWrites(ledger, 'dynamodb', STORE_WRITES, plan, random, log),
    circuit: faultyWrites(journaled, 'dynamodb', STORE_WRITES, plan, random, log),
    idempotency: faultyWrites(idempotency, 'dynamodb', STORE_WRITES, plan, random, log),
    limits: faultyWrites(ports.stores.limits, 'dynamodb', STORE_WRITES, plan, random, log),
  };
  const queues: QueueReceiver = Object.create(ports.queues) as QueueReceiver;
  queues.send = async (queue, message) => {
    await ports.queues.send(queue, message);
    if (queue.endsWith('-dlq'))
      journal.entries.push({ jobId: jobIdOf(message.body), at: journal.clock.now(), status: 'dead-lettered' });
  };
  return { stores, queues: faultyWrites(queues, 'sqs', QUEUE_WRITES, plan, random, log) };
}

/**
 * The orchestrator's ports for one run: killed after `killAfter` requests (every later request throws, as a run
 * stopped dead does nothing more), and with lost answers on its writes. An invoke whose answer is lost has started.
 */
export function faultyOrchestratorPorts(
  ports: SimulatedPorts & { readonly invoker: Invoker },
  plan: FaultPlan,
  killAfter: number | undefined,
  random: () => number,
  log: FaultLog,
): SimulatedPorts & { readonly invoker: Invoker } {
  let requests = 0;
  const killable = <T extends object>(port: T): T =>
    new Proxy(port, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          requests++;
          if (killAfter !== undefined && requests > killAfter) {
            if (requests === killAfter + 1) count(log, 'orchestrator:killed');
            throw new InjectedFault('injected: orchestrator run killed');
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const { lease, ledger, circuit, idempotency, limits } = ports.stores;
  const lossy = { lostAnswers: plan.lostAnswers, unavailable: 0 };
  const invoker: Invoker = {
    invoke: async (event) => {
      await ports.invoker.invoke(event);
      if (random() < plan.lostAnswers) {
        count(log, 'lambda.invoke:lost-answer');
        throw new InvokeFailedError('injected: invoke accepted and its answer lost', true);
      }
    },
  };
  return {
    stores: {
      lease: killable(lease),
      ledger: killable(faultyWrites(ledger, 'dynamodb', STORE_WRITES, lossy, random, log)),
      circuit: killable(faultyWrites(circuit, 'dynamodb', STORE_WRITES, lossy, random, log)),
      idempotency: killable(idempotency),
      limits: killable(faultyWrites(limits, 'dynamodb', STORE_WRITES, lossy, random, log)),
    },
    queues: killable(ports.queues),
    invoker: killable(invoker),
  };
}

/** One job call as the workers made it: the job, when, what came back, and whether its worker died around it. */
export interface WorkerCall {
  readonly jobId: string | undefined;
  readonly at: number;
  readonly status: number | 'no-answer';
  readonly crashed?: 'before-call' | 'after-call';
}

/**
 * What the workers did, in order: a job's call, a job's message landing in a dead-letter queue, or a pause of the
 * lane (a 429's `Retry-After`) written to the circuit, until `until`.
 */
export type JournalEntry =
  | WorkerCall
  | { readonly jobId: string | undefined; readonly at: number; readonly status: 'dead-lettered' }
  | { readonly jobId: undefined; readonly at: number; readonly status: 'paused'; readonly until: number };

/** Whether `entry` is a job's call. */
export function isCall(entry: JournalEntry): entry is WorkerCall {
  return entry.status !== 'dead-lettered' && entry.status !== 'paused';
}

/**
 * The API as the workers see it: in the plan's windows it answers 429 with `Retry-After`, or 401 for job calls while
 * its health URL answers 200 (a revoked key behind a public health check); workers die before or after calls as the
 * plan draws. Every job call is logged in `calls`, and the health checks in progress are counted (one probe at a
 * time is a promise).
 */
export class FaultyApi implements ApiCaller {
  /** Every job call, in order, among what else the journal holds. */
  readonly calls: JournalEntry[];
  /** Per flaky job, how many of its calls the API still answers 503. */
  private readonly failuresLeft = new Map<string, number>();
  /** Health checks in progress now, and the most ever at once. */
  probesInProgress = 0;
  peakProbes = 0;

  constructor(
    journal: { readonly entries: JournalEntry[] },
    private readonly api: ApiCaller,
    private readonly clock: Clock,
    private readonly start: number,
    private readonly plan: FaultPlan,
    private readonly random: () => number,
    private readonly log: FaultLog,
  ) {
    this.calls = journal.entries;
  }

  async call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    const at = this.clock.now();
    const jobId = jobIdOf(body);
    if (this.random() < this.plan.crashBeforeCall) {
      count(this.log, 'worker:crash-before-call');
      this.calls.push({ jobId, at, status: 'no-answer', crashed: 'before-call' });
      throw new InjectedFault('injected: worker died before its call');
    }
    const answered = (await this.refusal(at, jobId)) ?? (await this.api.call(body, context));
    // Drawn only for a seed that lies: every other seed's draws stay as they were.
    const lies = this.plan.lyingHeaders > 0 && this.random() < this.plan.lyingHeaders;
    const result = lies ? this.lie(answered) : answered;
    const status = result.kind === 'response' ? result.status : 'no-answer';
    if (this.random() < this.plan.crashAfterCall) {
      count(this.log, 'worker:crash-after-call');
      this.calls.push({ jobId, at, status, crashed: 'after-call' });
      throw new InjectedFault('injected: worker died after its call');
    }
    this.calls.push({ jobId, at, status });
    return result;
  }

  /** `answer` with its rate-limit headers lying, in one of the ways of `HEADER_LIES` drawn at random. */
  private lie(answer: ApiResult): ApiResult {
    count(this.log, 'api:lying-headers');
    return withLyingHeaders(answer, Math.floor(this.random() * HEADER_LIES.length));
  }

  /** Reads the key: at once, or as slowly as the plan draws (a new container's SSM read), or not at all. */
  async prepare(): Promise<Preparation> {
    if (this.random() < this.plan.slowKeyReads) {
      await this.clock.sleep(200 + Math.floor(this.random() * 2_800));
      if (this.random() < this.plan.keyReadFailures) {
        count(this.log, 'ssm:key-read-failed');
        return { kind: 'not-ready', reason: 'injected: the key could not be read' };
      }
      count(this.log, 'ssm:slow-key-read');
    }
    return { kind: 'ready', caller: this };
  }

  async probe(): Promise<ApiResult> {
    this.probesInProgress++;
    this.peakProbes = Math.max(this.peakProbes, this.probesInProgress);
    try {
      const refused = this.inWindow(this.plan.rateLimited, this.clock.now());
      if (refused !== undefined) {
        await this.clock.sleep(10);
        return { kind: 'response', status: 429, headers: { 'retry-after': String(refused.retryAfterSeconds) } };
      }
      return await this.api.probe();
    } finally {
      this.probesInProgress--;
    }
  }

  /**
   * The answer of a call refused by a fault window or failed as a flaky job's, after the API's usual 10 ms;
   * `undefined` when the call goes through to the API.
   */
  private async refusal(at: number, jobId: string | undefined): Promise<ApiResult | undefined> {
    const limited = this.inWindow(this.plan.rateLimited, at);
    const rejected = this.inWindow(this.plan.callerRejected, at);
    const fails = jobId === undefined ? 0 : this.flakyFailures(jobId);
    if (limited === undefined && rejected === undefined && fails === 0) return undefined;
    await this.clock.sleep(10);
    if (limited === undefined && rejected === undefined && jobId !== undefined) {
      count(this.log, 'api:flaky-job-failed');
      this.failuresLeft.set(jobId, fails - 1);
      return { kind: 'response', status: 503, headers: {}, body: '{"error":"try again"}' };
    }
    if (limited !== undefined) {
      count(this.log, 'api:rate-limited');
      return { kind: 'response', status: 429, headers: { 'retry-after': String(limited.retryAfterSeconds) } };
    }
    count(this.log, 'api:caller-rejected');
    return { kind: 'response', status: 401, headers: {}, body: '{"error":"invalid api key"}' };
  }

  /** How many more calls of `jobId` fail: drawn at its first call (one to three, for a flaky job). */
  private flakyFailures(jobId: string): number {
    let left = this.failuresLeft.get(jobId);
    if (left === undefined) {
      left = this.random() < this.plan.flakyJobs ? 1 + Math.floor(this.random() * 3) : 0;
      this.failuresLeft.set(jobId, left);
    }
    return left;
  }

  private inWindow<W extends { readonly fromMs: number; readonly toMs: number }>(
    windows: readonly W[],
    at: number,
  ): W | undefined {
    return windows.find((w) => at >= this.start + w.fromMs && at < this.start + w.toMs);
  }
}

/** `clock` read `skewMs` ahead (behind, if negative); its timers are the clock's own. */
export function skewedClock(clock: Clock, skewMs: number): Clock {
  if (skewMs === 0) return clock;
  return { now: () => clock.now() + skewMs, sleep: (ms) => clock.sleep(ms) };
}
