import { ACTUAL_COST_HEADER } from '../../lib/domain/usage/usageSources';
import { COST_UNIT, REQUESTS, unitsFor, type Costs, type Tier } from '../../lib/domain/quota/tiers';
import { announcedHeaders, limitsAt, type AllowedLimits } from './allowedLimits';
import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import { jobFieldsOf } from './jobs';
import { llmAnswerBody, llmUnits } from './llmAnswers';
import { peakCallsInFlight } from './callsInFlight';
import { TierTally, type Held, type SharedTiers } from './tierTally';
import type { LlmModel } from './scenario';

/** Options of {@link VirtualApi}. */
export interface VirtualApiOptions {
  /** The (usually virtual) time the API lives on. */
  readonly clock: Clock;
  /** Quotas enforced: second, minute and hour tiers as sliding windows, day and month tiers as UTC calendar windows. */
  readonly tiers: readonly Tier[];
  /** Tiers it counts together with other APIs (a pool), enforced as its own. @default none */
  readonly shared?: readonly SharedTiers[];
  /** How long each call and probe takes on `clock` before it answers. */
  readonly latencyMs: number;
  /** Absolute instants `[startMs, endMs)` during which calls and probes answer 503. @default [] */
  readonly outages?: readonly { readonly startMs: number; readonly endMs: number }[];
  /**
   * Units a call consumes on the tiers of named units, from the body's JSON text; the answer reports the `cost` unit's
   * in the `x-actual-cost` header. Not used by an LLM API (see `llm`).
   * @default `{cost: body.cost}` if it is a finite number, else `{cost: 1}`
   */
  readonly costsOf?: (body: string) => Costs;
  /**
   * Answer like an LLM (see {@link LlmModel}): the tiers of `input_tokens` count the prompt at arrival, those of
   * `output_tokens` count `max_tokens` at arrival and are corrected to the drawn output when the answer goes out
   * (Anthropic's documented behaviour), and the usage is in an Anthropic-shaped body. @default a plain API
   */
  readonly llm?: LlmModel;
  /**
   * The most job calls in progress (arrived, not yet answered): a call that arrives while this many are is answered
   * 429 at once, consuming no quota. @default no limit
   */
  readonly concurrency?: number;
  /** Whether to answer 429 (and 413) when a quota would be exceeded. With `false`, usage is only recorded. @default true */
  readonly enforce?: boolean;
  /** The zone of the calendar windows of day and month tiers (an IANA name). @default 'UTC' */
  readonly timeZone?: string;
  /**
   * What it really allows, when it is not `tiers`' limits (a key shared with another caller, a provider that lowers
   * a tier mid-run), and whether its answers say so (see {@link AllowedLimits}). @default `tiers`' limits, no headers
   */
  readonly allowed?: AllowedLimits;
}

/** One job call as the API saw it, for timelines. `at` is the arrival instant. */
export interface VirtualApiCall {
  readonly at: number;
  /** `body.id`, or the idempotency key when the body has no string `id`. */
  readonly id: string;
  readonly group?: string;
  readonly seq?: number;
  readonly status: number;
  /** When the answer went out; missing while the call is in progress. */
  readonly endAt?: number;
  /**
   * The units an accepted call (answered 200 or 400) counts for, per named unit: what it reserved at arrival until it
   * is answered, then (LLM) what it used. Missing for a call that was not accepted.
   */
  readonly usage?: Costs;
}

/** A {@link VirtualApiCall} as the API fills it in. */
type CallRecord = { -readonly [K in keyof VirtualApiCall]: VirtualApiCall[K] };

/** Counters of a {@link VirtualApi} run. */
export interface VirtualApiReport {
  /** Job calls that arrived, whatever the answer. Probes are not included. */
  readonly apiCalls: number;
  /** Job calls answered 429. */
  readonly rejectedByApi: number;
  /** 200 answers beyond the first for the same id. */
  readonly duplicates: number;
  /**
   * Accepted job calls (answered 200 or 400) that broke their group's order: a call of the same group was still
   * in flight when it arrived, or a call of the same group with a higher `seq` had already been answered 200 or 400.
   */
  readonly fifoOrderViolations: number;
  /** Probes that arrived, whatever the answer. */
  readonly probes: number;
}

/** What the referee saw of jobs' ends and order, faults in front of it included (see {@link VirtualApi.recordOutcome}). */
export interface OutcomeReport {
  /** Job calls that arrived after their id had already had a final answer (200, or a 4xx other than 401, 403, 408 and 429). */
  readonly callsAfterEnded: number;
  /** Final answers (200, or a 4xx other than 401, 403, 408 and 429) beyond the first for the same id. */
  readonly duplicateFinalAnswers: number;
  /** Job calls that arrived after a call of the same group with a higher `seq` had arrived, whatever the answers. */
  readonly fifoInversions: number;
}

/** Statuses of 4xx answers that do not end a job: a timeout and a rate limit are retried, 401 and 403 are the caller's fault. */
const NOT_FINAL_4XX = new Set([401, 403, 408, 429]);

/** Whether an answer ends a job: a success, or a client error about the job itself (see {@link NOT_FINAL_4XX}). */
export function isFinalStatus(status: number): boolean {
  return status === 200 || (status >= 400 && status < 500 && !NOT_FINAL_4XX.has(status));
}

interface Job {
  readonly id: string;
  readonly group?: string;
  readonly seq?: number;
  readonly poison: boolean;
}

function defaultCostsOf(body: string): Costs {
  const { cost } = jobFieldsOf(body);
  return { [COST_UNIT]: typeof cost === 'number' && Number.isFinite(cost) ? cost : 1 };
}

function parseJob(body: string, idempotencyKey: string): Job {
  const { id, group, seq, poison } = jobFieldsOf(body);
  return {
    id: typeof id === 'string' ? id : idempotencyKey,
    group: typeof group === 'string' ? group : undefined,
    seq: typeof seq === 'number' ? seq : undefined,
    poison: poison === true,
  };
}

type Response = Extract<ApiResult, { kind: 'response' }>;

function response(status: number, headers: Record<string, string> = {}, body?: string): Response {
  return { kind: 'response', status, headers, ...(body === undefined ? {} : { body }) };
}

/**
 * A simulated third-party API on virtual time: the referee of tests and of the local run. It enforces the quotas on
 * its own, independently of the orchestrator's ledger, and records what it saw.
 *
 * A call is counted when it arrives (the instant `call()` is invoked) and answered `latencyMs` later:
 * - 503 if it arrived during an outage (no quota consumed);
 * - 429 with `retry-after: 1` at once, if `concurrency` calls were in progress when it arrived (no quota consumed);
 * - 413 if its units exceed a tier's limit outright, so it could never fit (no quota consumed);
 * - 429 with `retry-after` (whole seconds, at least 1) if it would overflow a tier (no quota consumed);
 * - otherwise it is accepted and consumes quota: 400 for a body with `"poison": true`, else 200. A plain API reports
 *   the `cost` unit's amount in the `x-actual-cost` header; an LLM (see `llm`) answers after `msPerOutputToken` more
 *   per output token, with its usage in the body, and corrects its output tiers to that usage then.
 *
 * Bodies are the JSON text of jobs `{"id": string, "group"?: string, "seq"?: number, "poison"?: true}`, and for an
 * LLM `"prompt_tokens"` and `"max_tokens"`.
 */
export class VirtualApi implements ApiCaller {
  private readonly clock: Clock;
  private readonly tiers: readonly Tier[];
  private readonly latencyMs: number;
  private readonly outages: readonly { readonly startMs: number; readonly endMs: number }[];
  private readonly costsOf: (body: string) => Costs;
  private readonly llm: LlmModel | undefined;
  private readonly concurrency: number;
  private readonly enforce: boolean;
  private readonly allowed: AllowedLimits | undefined;
  /** Per tier, in configured order: what accepted arrivals hold in it. */
  private readonly windows: readonly TierTally[];
  private readonly calls: CallRecord[] = [];
  /** Job calls being handled: arrived, not yet answered. */
  private inProgress = 0;
  private readonly successes = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private readonly highestHandledSeq = new Map<string, number>();
  private readonly highestArrivedSeq = new Map<string, number>();
  private readonly finalAnswers = new Map<string, number>();
  private readonly counts = {
    rejectedByApi: 0,
    duplicates: 0,
    fifoOrderViolations: 0,
    probes: 0,
    callsAfterEnded: 0,
    duplicateFinalAnswers: 0,
    fifoInversions: 0,
  };

  constructor(options: VirtualApiOptions) {
    this.clock = options.clock;
    const shared = options.shared ?? [];
    this.tiers = [...options.tiers, ...shared.flatMap((pool) => pool.tiers)];
    this.latencyMs = options.latencyMs;
    this.outages = options.outages ?? [];
    this.costsOf = options.costsOf ?? defaultCostsOf;
    this.llm = options.llm;
    this.concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
    this.enforce = options.enforce ?? true;
    this.allowed = options.allowed;
    this.windows = [
      ...options.tiers.map((tier) => new TierTally(tier, options.timeZone ?? 'UTC')),
      ...shared.flatMap((pool) => pool.tallies),
    ];
  }

  /**
   * Answers one job call `latencyMs` after it arrives; see the class description for the status. Never throws. A call
   * served over HTTP arrived `waitedMs` before it is handled (when its worker sent it, or else when its headers came:
   * see `ServedCallContext`): it is counted then.
   */
  async call(
    body: string,
    context: { readonly idempotencyKey: string; readonly waitedMs?: number },
  ): Promise<ApiResult> {
    const at = this.clock.now() - (context.waitedMs ?? 0);
    const job = parseJob(body, context.idempotencyKey);
    const record: CallRecord = { at, id: job.id, group: job.group, seq: job.seq, status: 0 };
    this.calls.push(record);
    if (!this.inOutage(at) && this.inProgress >= this.concurrency) {
      this.counts.rejectedByApi++;
      record.status = 429;
      record.endAt = this.clock.now();
      this.countOutcome(job, 429);
      return response(429, { 'retry-after': '1' });
    }
    const units =
      this.llm === undefined ? { reserved: this.costsOf(body), used: undefined } : llmUnits(job.id, body, this.llm);
    const { result, held } = this.admit(at, job, units.reserved);
    const { status } = result;
    record.status = status;
    if (held !== undefined) record.usage = units.reserved;
    this.countOutcome(job, status);
    if (status === 200) {
      const before = this.successes.get(job.id) ?? 0;
      this.successes.set(job.id, before + 1);
      if (before > 0) this.counts.duplicates++;
    }
    const used = status === 200 ? units.used : undefined;
    const latencyMs =
      this.latencyMs +
      (used === undefined || this.llm === undefined
        ? 0
        : Math.round(this.llm.msPerOutputToken * (used.output_tokens ?? 0)));
    this.inProgress++;
    if (job.group === undefined) {
      await this.clock.sleep(latencyMs);
    } else {
      // FIFO: an accepted call breaks order if its group has a call in flight, or a higher seq already handled
      // (answered 200, or 400 and so dead-lettered). "Handled" is recorded when the answer goes out.
      const group = job.group;
      const handled = status === 200 || status === 400;
      const higherHandled =
        job.seq !== undefined && job.seq < (this.highestHandledSeq.get(group) ?? Number.NEGATIVE_INFINITY);
      if (handled && ((this.inFlight.get(group) ?? 0) > 0 || higherHandled)) this.counts.fifoOrderViolations++;
      this.inFlight.set(group, (this.inFlight.get(group) ?? 0) + 1);
      await this.clock.sleep(latencyMs);
      this.inFlight.set(group, (this.inFlight.get(group) ?? 1) - 1);
      if (handled && job.seq !== undefined) {
        this.highestHandledSeq.set(
          group,
          Math.max(job.seq, this.highestHandledSeq.get(group) ?? Number.NEGATIVE_INFINITY),
        );
      }
    }
    this.inProgress--;
    const endAt = this.clock.now();
    record.endAt = endAt;
    if (used === undefined || held === undefined) return result;
    held.forEach((entry, i) => {
      const tier = this.tiers[i];
      if (tier !== undefined) this.windows[i]?.correct(endAt, entry, unitsFor(tier, used));
    });
    record.usage = used;
    return response(200, {}, llmAnswerBody(job.id, used));
  }

  /** Answers a health check `latencyMs` after it arrives: 503 during an outage, else 200. Consumes no quota. */
  async probe(): Promise<ApiResult> {
    const at = this.clock.now();
    this.counts.probes++;
    await this.clock.sleep(this.latencyMs);
    return response(this.inOutage(at) ? 503 : 200);
  }

  /** Snapshot of the run's counters. */
  report(): VirtualApiReport {
    const { rejectedByApi, duplicates, fifoOrderViolations, probes } = this.counts;
    return { apiCalls: this.calls.length, rejectedByApi, duplicates, fifoOrderViolations, probes };
  }

  /**
   * Counts a job call that a fault in front of the API answered `status` without passing it on, in
   * {@link outcomeReport} (calls that reach {@link call} are counted there).
   */
  recordOutcome(body: string, context: { readonly idempotencyKey: string }, status: number): void {
    this.countOutcome(parseJob(body, context.idempotencyKey), status);
  }

  /** Snapshot of the counts of calls after a job ended, repeated final answers and FIFO inversions. */
  outcomeReport(): OutcomeReport {
    const { callsAfterEnded, duplicateFinalAnswers, fifoInversions } = this.counts;
    return { callsAfterEnded, duplicateFinalAnswers, fifoInversions };
  }

  private countOutcome(job: Job, status: number): void {
    const finals = this.finalAnswers.get(job.id) ?? 0;
    if (finals > 0) this.counts.callsAfterEnded++;
    if (isFinalStatus(status)) {
      this.finalAnswers.set(job.id, finals + 1);
      if (finals > 0) this.counts.duplicateFinalAnswers++;
    }
    if (job.group !== undefined && job.seq !== undefined) {
      const highest = this.highestArrivedSeq.get(job.group) ?? Number.NEGATIVE_INFINITY;
      if (job.seq < highest) this.counts.fifoInversions++;
      this.highestArrivedSeq.set(job.group, Math.max(highest, job.seq));
    }
  }

  /** Every job call in arrival order. */
  get callLog(): readonly VirtualApiCall[] {
    return this.calls;
  }

  /** Number of 200 answers per job id. */
  successesById(): ReadonlyMap<string, number> {
    return new Map(this.successes);
  }

  /** Ids answered 200 at least once, in order of first success. */
  succeededIds(): string[] {
    return [...this.successes.keys()];
  }

  /** Arrival instant of the first call answered 200 that arrived at or after `t`, or `undefined` if none. */
  firstSuccessAfter(t: number): number | undefined {
    return this.calls.find((c) => c.status === 200 && c.at >= t)?.at;
  }

  /**
   * The most job calls in progress at once so far (see {@link peakCallsInFlight}), whatever their answers: a call
   * turned away for `concurrency` counts an instant.
   */
  peakCallsInFlight(): number {
    return peakCallsInFlight(this.calls);
  }

  /**
   * The most accepted units ever seen in one window of `tier` (matched on `per` and `unit`): any sliding window
   * for second/minute/hour, any UTC calendar window for day/month.
   * @throws Error if no configured tier has that `per` and `unit`.
   */
  maxWindowUsage(tier: Pick<Tier, 'per' | 'unit'>): number {
    const i = this.tiers.findIndex((t) => t.per === tier.per && t.unit === tier.unit);
    if (i < 0) throw new Error(`no tier per '${tier.per}' counting '${tier.unit}' is configured`);
    return this.windows[i]?.maxUsage ?? 0;
  }

  /** The answer to a call that arrived at `at` reserving `costs`, and what it holds in each tier once accepted. */
  private admit(at: number, job: Job, costs: Costs): { readonly result: Response; readonly held?: readonly Held[] } {
    if (this.inOutage(at)) return { result: response(503) };
    const limits = limitsAt(this.tiers, this.allowed, at);
    if (this.enforce) {
      if (this.tiers.some((tier, i) => unitsFor(tier, costs) > (limits[i] ?? tier.limit)))
        return { result: response(413) };
      const fitsAt = this.windows.reduce(
        (latest, window, i) => Math.max(latest, window.fitsAt(at, costs, limits[i])),
        at,
      );
      if (fitsAt > at) {
        this.counts.rejectedByApi++;
        const wait = String(Math.max(1, Math.ceil((fitsAt - at) / 1000)));
        return { result: response(429, { 'retry-after': wait, ...this.announced(at, limits) }) };
      }
    }
    const held = this.windows.map((window) => window.record(at, costs));
    if (job.poison) return { result: response(400, this.announced(at, limits)), held };
    const cost = costs[COST_UNIT];
    const usage: Record<string, string> =
      this.llm === undefined && cost !== undefined ? { [ACTUAL_COST_HEADER]: String(cost) } : {};
    return { result: response(200, { ...usage, ...this.announced(at, limits) }), held };
  }

  /**
   * The headers that announce, at `at`, the state of its first sliding tier of requests under `limits` (see
   * `announcedHeaders`); none unless `allowed` asks for them.
   */
  private announced(at: number, limits: readonly number[]): Record<string, string> {
    const format = this.allowed?.headers ?? 'none';
    const i = this.tiers.findIndex((tier) => tier.kind === 'sliding' && tier.unit === REQUESTS);
    const tier = this.tiers[i];
    const window = this.windows[i];
    if (format === 'none' || tier?.kind !== 'sliding' || window === undefined) return {};
    const limit = limits[i] ?? tier.limit;
    const { used, freesAt } = window.usedAt(at);
    return announcedHeaders(format, {
      limit,
      remaining: Math.max(0, limit - used),
      resetSeconds: Math.ceil((freesAt - at) / 1000),
      windowSeconds: tier.windowMs / 1000,
    });
  }

  private inOutage(at: number): boolean {
    return this.outages.some((o) => at >= o.startMs && at < o.endMs);
  }
}
