import type { ApiFaultWindow } from './apiFaults';
import type { AwsFaultWindow } from './awsFaults';
import type { ClockLeap } from './scenarioClock';
import type { QuotaInput } from '../local/stackOptions';
import {
  DEFAULT_DUPLICATES,
  REALISTIC_START_DELAYS,
  REALISTIC_TIMING,
  type InvokeTimingModel,
} from '../simulation/startDelays';
import type { WorkerFaultPlan } from './workerFaults';

/** One fault scenario: a job set run through the whole service on the emulators while the faults are injected. */
export interface FaultScenario {
  readonly name: string;
  /** What it injects, in a few words (which of the faults). */
  readonly injects: string;
  /** Healthy standard jobs `j-1` … `j-N`. */
  readonly jobs: number;
  /** FIFO groups of four ordered jobs each. */
  readonly fifoGroups: number;
  readonly aws?: readonly AwsFaultWindow[];
  readonly api?: readonly ApiFaultWindow[];
  readonly worker?: WorkerFaultPlan;
  /** How many scheduled runs are killed, each at a random AWS request (seeded). @default 0 */
  readonly kills?: number;
  /** The first scheduled run stands still this long after this many requests: a stale lease holder. */
  readonly staleHolder?: { readonly afterCalls: number; readonly forMs: number };
  /** A manual invoke starts a second orchestrator this often, whatever is running. @default never */
  readonly manualInvokeEveryMs?: number;
  /** The API answers 503 in these windows (outages the circuit sees), in ms after the start. @default [] */
  readonly outages?: readonly { readonly fromMs: number; readonly toMs: number }[];
  /** When workers start and which events come twice. @default REALISTIC_TIMING (Lambda as it is) */
  readonly timing?: InvokeTimingModel;
  /** The lane's quotas. @default FAULT_QUOTAS */
  readonly quotas?: readonly QuotaInput[];
  /** `TIME_ZONE` of the calendar tiers, and the API's. @default UTC */
  readonly timeZone?: string;
  /**
   * The service's and the API's clock is shifted so that midnight in `timeZone` comes this long after the start, on
   * that clock (its leaps count). @default no shift
   */
  readonly midnightAfterMs?: number;
  /** The service's and the API's clock leaps forward: hours pass in a moment. @default none */
  readonly clockLeaps?: readonly ClockLeap[];
  /** Redrive `maxReceiveCount` of the source queues. @default 10 */
  readonly maxReceiveCount?: number;
  /** The lane's `maxInFlight`: the scenario then reports the calls in progress at the API and the slots left at the end. @default no cap */
  readonly maxInFlight?: number;
  /** How long the API takes to answer a call. @default the service stack's (10 ms) */
  readonly latencyMs?: number;
  /**
   * The API's own limit on calls in progress: it answers 429 to a call that arrives while this many are (counted
   * among the quota violations). @default no limit
   */
  readonly apiConcurrency?: number;
  /**
   * The tiers of a pool the lane draws from (the lanes form's `pools`), which the API enforces as the provider counts
   * an organisation's limit: the scenario's quota violations count the pool's too. @default none
   */
  readonly pool?: readonly QuotaInput[];
  /** The lane's `limits`: how it learns its limits from the API's headers. @default learn in shadow, no headers */
  readonly limits?: Readonly<Record<string, string>>;
}

/** A pool tighter than the lane's own tiers (15/s and 450/min under 20/s and 600/min): the pool binds. */
export const FAULT_POOL: readonly QuotaInput[] = [
  { limit: 15, per: 'second' },
  { limit: 450, per: 'minute' },
];

/** The families that run on one lane only: `in-flight-leak` checks call slots, which a pool does not have. */
const UNPOOLED: readonly string[] = ['in-flight-leak'];

/** The suffix of a scenario's name run with its lane drawing from {@link FAULT_POOL}. */
export const POOLED_SUFFIX = ' (pooled)';

/** Realistic timing with this share of late (cold) starts, `minMs`…`maxMs` late. */
function lateStarts(share: number, minMs: number, maxMs: number): InvokeTimingModel {
  return {
    ...REALISTIC_TIMING,
    start: { ...REALISTIC_START_DELAYS, coldShare: share, coldMinMs: minMs, coldMaxMs: maxMs },
  };
}

/** The minute and day tiers of the default quotas (20/s, 600/min, 5,000/day), under a tighter second tier. */
const FAULT_QUOTAS_AFTER_SECOND: readonly QuotaInput[] = [
  { limit: 600, per: 'minute' },
  { limit: 5_000, per: 'day' },
];

const HOUR_MS = 3_600_000;

/** `quick` keeps each scenario to seconds (the subset in `npm test`); `full` is `npm run faults`. */
export type FaultSize = 'quick' | 'full';

/** Ids `j-from` … `j-to`, every `step`-th. */
function ids(from: number, to: number, step: number): string[] {
  const out: string[] = [];
  for (let n = from; n <= to; n += step) out.push(`j-${n}`);
  return out;
}

/**
 * The suite: one scenario per fault of issue 5, each with healthy, FIFO, poison and malformed jobs, then each again
 * (but those of {@link UNPOOLED}) in the lanes form: the lane and a second lane
 * with jobs of its own share a pool that binds (see {@link FAULT_POOL}), one orchestrator runs both, a dispatch
 * reserves in its lane and the pool, crashes and store faults strike the pool's lease, ledger and settlements too,
 * and each lane's API refuses a call over its own tiers or the pool's.
 */
export function faultScenarios(size: FaultSize): FaultScenario[] {
  const lane = laneScenarios(size);
  return [
    ...lane,
    ...lane
      .filter((scenario) => !UNPOOLED.includes(scenario.name))
      .map((scenario) => ({
        ...scenario,
        name: `${scenario.name}${POOLED_SUFFIX}`,
        injects: `${scenario.injects}; the lane and a second lane (10/s, 20 jobs) share a pool of 15/s and 450/min`,
        pool: FAULT_POOL,
      })),
  ];
}

/**
 * The faults of one lane: one scenario per fault of issue 5. Windows are in ms after the jobs are queued and the
 * first run starts; the quotas (20/s, 600/min, 5,000/day) pace 40 jobs in 2 s.
 */
function laneScenarios(size: FaultSize): FaultScenario[] {
  const quick = size === 'quick';
  const jobs = quick ? 30 : 80;
  const fifoGroups = quick ? 2 : 4;
  const base = { jobs, fifoGroups };
  return [
    {
      ...base,
      name: 'orchestrator-killed',
      injects: 'fault 1: runs killed at random requests: before an invoke, between invoke and flush, mid-flush',
      kills: quick ? 3 : 10,
    },
    {
      ...base,
      name: 'dynamodb-unavailable',
      injects: 'fault 2: DynamoDB answers 503 to everyone for a stretch',
      aws: [{ service: 'dynamodb', kind: 'unavailable', fromMs: 500, toMs: quick ? 2_500 : 5_000 }],
    },
    {
      ...base,
      name: 'dynamodb-throttled',
      injects: 'fault 2: ProvisionedThroughputExceeded and Throttling on a quarter of DynamoDB requests for a stretch',
      aws: [{ service: 'dynamodb', kind: 'throttled', fromMs: 0, toMs: quick ? 8_000 : 20_000, share: 0.25 }],
    },
    {
      ...base,
      name: 'dynamodb-answers-lost',
      injects:
        'fault 2: DynamoDB writes that land and then answer 500, so that the SDK retries them (ledger saves, settlements, circuit and idempotency writes)',
      aws: [
        {
          service: 'dynamodb',
          kind: 'error-after-success',
          operations: ['UpdateItem', 'PutItem'],
          fromMs: 0,
          toMs: quick ? 8_000 : 20_000,
          share: 0.25,
        },
      ],
    },
    {
      ...base,
      name: 'sqs-errors',
      injects: 'fault 3: SQS 5xx and timeouts on receive, send and delete; deletes that fail after they worked',
      aws: [
        { service: 'sqs', kind: 'server-error', operations: ['ReceiveMessage'], fromMs: 300, toMs: 1_500 },
        {
          service: 'sqs',
          kind: 'timeout',
          operations: ['ReceiveMessage', 'SendMessage', 'SendMessageBatch'],
          fromMs: 1_500,
          toMs: quick ? 4_000 : 8_000,
          share: 0.3,
        },
        {
          service: 'sqs',
          kind: 'server-error',
          operations: ['SendMessage', 'SendMessageBatch'],
          fromMs: 0,
          toMs: quick ? 4_000 : 8_000,
          share: 0.3,
        },
        {
          service: 'sqs',
          kind: 'error-after-success',
          operations: ['DeleteMessage', 'DeleteMessageBatch'],
          role: 'worker',
          fromMs: 0,
          toMs: quick ? 4_000 : 8_000,
          share: 0.3,
        },
      ],
    },
    {
      ...base,
      name: 'lambda-invoke-faults',
      injects: 'fault 4: Invoke throttled, failing, and failing after Lambda queued the event',
      aws: (['throttled', 'server-error', 'error-after-success'] as const).map((kind) => ({
        service: 'lambda' as const,
        kind,
        operations: ['Invoke'],
        fromMs: 300,
        toMs: quick ? 6_000 : 15_000,
        share: kind === 'throttled' ? 0.25 : 0.15,
      })),
    },
    {
      ...base,
      name: 'worker-crashes',
      injects: 'fault 5: workers crash before the call and after it, before recording; events delivered twice',
      worker: { crashBeforeCall: ids(2, jobs, 9), crashAfterCall: ids(5, jobs, 11), deliveredTwice: ids(3, jobs, 7) },
    },
    {
      ...base,
      name: 'two-orchestrators',
      injects: 'fault 6: manual invokes during runs, and a stale lease holder that wakes after losing the lease',
      manualInvokeEveryMs: 700,
      staleHolder: { afterCalls: 30, forMs: 6_500 },
    },
    // Skew is part of the arrival margin: a worker whose clock runs ahead by more than its call window looks late at
    // every start and never calls, one behind by more could call after its window. Lambda hosts keep to Amazon Time
    // Sync within a millisecond; 50 ms is far beyond that, and within the fault suite's window.
    ...[50, -50].map((skew) => ({
      ...base,
      name: skew > 0 ? 'clock-skew-ahead' : 'clock-skew-behind',
      injects: `fault 7: workers ${Math.abs(skew)} ms ${skew > 0 ? 'ahead of' : 'behind'} the orchestrator, through 429 pauses and an API outage`,
      worker: { clockSkewMs: skew },
      api: [{ kind: 'rate-limited-without-retry-after' as const, fromMs: 300, toMs: 900 }],
      outages: [{ fromMs: 1_500, toMs: 3_000 }],
    })),
    {
      ...base,
      name: 'api-misbehaves',
      injects: 'fault 8: the API hangs past the timeout, 429s without Retry-After, 500s for long, then flaps',
      api: [
        { kind: 'hang', fromMs: 300, toMs: 1_300 },
        { kind: 'rate-limited-without-retry-after', fromMs: 1_300, toMs: 2_000 },
        { kind: 'server-error', fromMs: 2_000, toMs: quick ? 4_500 : 8_000 },
        { kind: 'flapping', fromMs: quick ? 4_500 : 8_000, toMs: quick ? 7_500 : 14_000, periodMs: 400 },
      ],
    },
    {
      ...base,
      name: 'lying-headers',
      injects:
        "issue 28: the API's rate-limit headers lie (a limit of 1, of a billion), vanish, are malformed, contradict each other, and say nothing remains until a month away, at each call in turn, on a lane that enforces what they say of its 20/s tier",
      limits: { headers: 'openai', per: 'second', learn: 'enforce' },
      api: [{ kind: 'lying-headers', fromMs: 0, toMs: quick ? 6_000 : 15_000 }],
    },
    {
      ...base,
      name: 'late-starts',
      injects: 'issue 11: a third of the workers start 200 ms to 1.5 s late, against a tight 5/s tier',
      quotas: [{ limit: 5, per: 'second' }, ...FAULT_QUOTAS_AFTER_SECOND],
      timing: lateStarts(0.33, 200, 1_500),
    },
    {
      ...base,
      name: 'repeated-deliveries',
      injects:
        'issue 11: a third of the worker events delivered twice, half while the first delivery runs, half after it ended',
      timing: { ...REALISTIC_TIMING, duplicates: { ...DEFAULT_DUPLICATES, share: 0.33 } },
    },
    {
      ...base,
      name: 'quota-exhausted',
      injects:
        'issue 11: 429s with a Retry-After of 2 hours, then a day tier used up until midnight; each wait longer than visibility × maxReceiveCount, and hours pass in a leap of the clock',
      // The 429 pause holds from 0.3 s until the clock leaps 2 hours at 20 s; the day tier then runs out in a second
      // or two, and midnight comes 20 s after the leap. The rest go in the new day.
      quotas: [
        { limit: 20, per: 'second' },
        { limit: 600, per: 'minute' },
        { limit: quick ? 25 : 60, per: 'day' },
      ],
      api: [{ kind: 'rate-limited-for-hours', fromMs: 300, toMs: 500, retryAfterSeconds: 7_200 }],
      clockLeaps: [{ atMs: 20_000, byMs: HOUR_MS * 2 }],
      midnightAfterMs: HOUR_MS * 2 + 42_000,
      // A redrive after 2 receives catches a message received during a wait. It is below what FIFO needs (the service
      // requires more receives than retry.maxAttempts, since a FIFO job's attempts, and the jobs it gives back when
      // its worker starts late, are receives of the same message), so this scenario has no FIFO jobs: a late start
      // after the pause would redrive one without a reason. A FIFO job waiting through a spent day is unit-tested.
      maxReceiveCount: 2,
      fifoGroups: 0,
    },
    {
      ...base,
      name: 'day-boundary',
      injects: `issue 11: a run across midnight in America/New_York with a day tier of ${quick ? 25 : 60} that runs out before it, and a third of the workers late`,
      // The day tier runs out before midnight even at a quarter of the second tier's pace (a lane sharing a pool with
      // another gets about half of it), and the new day holds the rest.
      quotas: [
        { limit: 20, per: 'second' },
        { limit: 600, per: 'minute' },
        { limit: quick ? 25 : 60, per: 'day' },
      ],
      timeZone: 'America/New_York',
      midnightAfterMs: quick ? 8_000 : 12_000,
      timing: lateStarts(0.33, 200, 1_500),
    },
    {
      ...base,
      name: 'probe-overlap',
      injects:
        'issue 11: outages that open the circuit while half the events (health checks included) come late and half twice',
      outages: [
        { fromMs: 500, toMs: 2_500 },
        { fromMs: 4_000, toMs: 6_000 },
      ],
      timing: {
        start: { ...REALISTIC_START_DELAYS, coldShare: 0.5, coldMinMs: 200, coldMaxMs: 1_500 },
        duplicates: { ...DEFAULT_DUPLICATES, share: 0.5 },
      },
    },
    {
      ...base,
      name: 'caller-rejected',
      injects: 'issue 11: the API answers 401 and 403 for a stretch (a revoked key), then is fixed',
      api: [{ kind: 'caller-rejected', fromMs: 500, toMs: quick ? 2_500 : 5_000 }],
    },
    {
      ...base,
      name: 'in-flight-leak',
      injects:
        'issue 15: maxInFlight 3 against calls of 300 ms (at most 10 calls a second, under the 20/s tier) and an API that refuses a 4th: workers killed while their call is at the API, a third of the events delivered twice, a quarter of the workers 200 ms to 1.5 s late',
      maxInFlight: 3,
      apiConcurrency: 3,
      latencyMs: 300,
      // Early jobs: a killed job's message comes back after its visibility timeout (8 s), while the others still run.
      worker: { killMidCall: ids(3, quick ? 13 : 53, 5) },
      timing: {
        start: { ...REALISTIC_START_DELAYS, coldShare: 0.25, coldMinMs: 200, coldMaxMs: 1_500 },
        duplicates: { ...DEFAULT_DUPLICATES, share: 0.33 },
      },
    },
  ];
}
