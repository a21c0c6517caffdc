/**
 * The baselines' workers (see `runBaseline`): an SQS queue of jobs and N workers standing for Lambda's concurrent
 * executions, each calling the API as an AWS SDK client in standard retry mode does.
 */
import { systemClock } from '../../lib/adapters/systemClock';
import type { HttpApiCaller } from '../../lib/adapters/http/HttpApiCaller';
import { classify, type Classification } from '../../lib/domain/outcome/classify';
import type { Costs } from '../../lib/domain/quota/tiers';
import type { JobSpec } from '../simulation/jobs';

/**
 * AWS SDK for JavaScript v3 "standard" retry mode, as in the installed @smithy/core 3.41.0
 * (`dist-es/submodules/retry/util-retry`, which replaced the @smithy/util-retry package):
 * - `config.js` DEFAULT_MAX_ATTEMPTS = 3 attempts in all;
 * - `DefaultRetryBackoffStrategy.js`: full jitter, `floor(random * min(base * 2^retries, MAXIMUM_RETRY_DELAY))`,
 *   with `constants.js` MAXIMUM_RETRY_DELAY = 20 s;
 * - `retries-2026-config.js`: base `Retry.delay()` = 50 ms, and `Retry.throttlingDelay()` = 1000 ms for throttling
 *   errors such as a 429 (`constants.js` still lists the older 100 ms and 500 ms, which only the deprecated
 *   pre-SRA strategy uses);
 * - `StandardRetryStrategy.js`: a `retry-after` hint stretches the backoff to at most the hint, and by at most 5 s;
 * - the retry quota, per client: 500 tokens (INITIAL_RETRY_TOKENS); a retry takes `Retry.throttlingCost()` = 5
 *   after a throttling error and `Retry.cost()` = 14 after another; a success gives back the cost of its last
 *   retry, or NO_RETRY_INCREMENT = 1 if it needed none; without enough tokens, the call fails at once.
 */
const SDK = {
  maxAttempts: 3,
  baseDelayMs: 50,
  throttlingBaseDelayMs: 1_000,
  maxDelayMs: 20_000,
  retryAfterExtraMs: 5_000,
  retryTokens: 500,
  throttlingRetryCost: 5,
  retryCost: 14,
  noRetryIncrement: 1,
} as const;

/** How often an idle worker looks for a visible job, as Lambda's SQS pollers do all the time. */
const POLL_MS = 10;

/**
 * One SDK client's retry quota (a Lambda container keeps its client across invocations): a token bucket that makes
 * a client under sustained errors stop retrying.
 */
export class SdkRetryQuota {
  private tokens: number = SDK.retryTokens;

  /** Takes the tokens of one retry after `kind`, and returns them; `undefined` when too few are left. */
  take(kind: 'rate-limited' | 'transient'): number | undefined {
    const cost = kind === 'rate-limited' ? SDK.throttlingRetryCost : SDK.retryCost;
    if (this.tokens < cost) return undefined;
    this.tokens -= cost;
    return cost;
  }

  /** A success gives back its last retry's cost, or one token if it needed no retry. */
  recordSuccess(lastRetryCost: number | undefined): void {
    this.tokens = Math.min(SDK.retryTokens, this.tokens + (lastRetryCost ?? SDK.noRetryIncrement));
  }
}

/**
 * The SDK's wait before retry number `retries + 1`. The SDK reads the hint from `retry-after` (and
 * `x-amz-retry-after`); `classify` also reads `retry-after-ms` and `x-ratelimit-reset`, which the simulated API does
 * not send, so the two agree here.
 */
function sdkRetryDelayMs(
  outcome: Extract<Classification, { kind: 'rate-limited' | 'transient' }>,
  retries: number,
): number {
  const base = outcome.kind === 'rate-limited' ? SDK.throttlingBaseDelayMs : SDK.baseDelayMs;
  const backoff = Math.floor(Math.random() * Math.min(base * 2 ** retries, SDK.maxDelayMs));
  const hint = outcome.retryAfterMs;
  return hint === undefined ? backoff : Math.max(backoff, Math.min(hint, backoff + SDK.retryAfterExtraMs));
}

/**
 * Sends `job` the way an SDK client with standard retries does: 429 and 5xx (and network errors) are retried
 * within the same invocation, sleeps included. No retry starts that would end after `deadline`.
 * @returns whether the API accepted the job.
 */
export async function sendWithSdkRetries(
  caller: HttpApiCaller,
  quota: SdkRetryQuota,
  job: QueuedJob,
  deadline: number,
): Promise<boolean> {
  let lastRetryCost: number | undefined;
  for (let attempt = 1; ; attempt++) {
    const outcome = classify(await caller.call(job.body, { idempotencyKey: job.id }), systemClock.now());
    if (outcome.kind === 'success') {
      quota.recordSuccess(lastRetryCost);
      return true;
    }
    if (
      outcome.kind === 'permanent' ||
      outcome.kind === 'client-error' ||
      outcome.kind === 'caller-rejected' ||
      attempt >= SDK.maxAttempts
    )
      return false;
    const delayMs = sdkRetryDelayMs(outcome, attempt - 1);
    if (systemClock.now() + delayMs >= deadline) return false;
    lastRetryCost = quota.take(outcome.kind);
    if (lastRetryCost === undefined) return false;
    await systemClock.sleep(delayMs);
  }
}

/** A job of the queue: its id (the idempotency key), its body as sent, and its reservation. */
export interface QueuedJob {
  readonly id: string;
  readonly body: string;
  readonly costs: Costs;
}

/** The scenario's job set as the baselines' queue holds it (every bench job is well-formed). */
export function queuedJobs(jobs: readonly JobSpec[]): QueuedJob[] {
  return jobs.map((job, i) => ({ id: `job-${i + 1}`, body: job.body, costs: job.costs }));
}

/**
 * The job queue, standing for an SQS queue: jobs in order of visibility; a job given back becomes visible again
 * later, like a message whose visibility timeout ran out.
 */
export class JobQueue {
  private readonly waiting: { readonly job: QueuedJob; readonly visibleAt: number }[];
  private readonly jobs: number;
  private done = 0;
  private lastDoneAt: number | undefined;

  constructor(jobs: readonly QueuedJob[], visibleAt: number) {
    this.waiting = jobs.map((job) => ({ job, visibleAt }));
    this.jobs = jobs.length;
  }

  /** The next visible job, how long to wait before looking again, or `undefined` once every job succeeded. */
  next(now: number): { readonly job: QueuedJob } | { readonly waitMs: number } | undefined {
    if (this.done === this.jobs) return undefined;
    const head = this.waiting[0];
    if (head === undefined) return { waitMs: POLL_MS };
    if (head.visibleAt > now) return { waitMs: Math.min(POLL_MS, head.visibleAt - now) };
    this.waiting.shift();
    return { job: head.job };
  }

  recordSuccess(at: number): void {
    this.done++;
    this.lastDoneAt = at;
  }

  /** Jobs accepted so far. */
  get succeeded(): number {
    return this.done;
  }

  /** When the last job was accepted. */
  get lastSuccessAt(): number | undefined {
    return this.lastDoneAt;
  }

  /** Visibility delays only grow with time, so appending keeps the queue in order of visibility. */
  redeliver(job: QueuedJob, visibleAt: number): void {
    this.waiting.push({ job, visibleAt });
  }
}

/** What the workers cost, summed over invocations. */
export interface Usage {
  invocations: number;
  busyMs: number;
}

/** Seed of the baselines' start delays, so that every run and strategy draws the same ones. */
export const START_DELAY_SEED = 11;

/**
 * One worker, standing for one of Lambda's N concurrent executions: it takes the next visible job, runs one
 * invocation with it (`send`), and gives it back to the queue for a redelivery if the invocation failed.
 */
export async function work(
  send: (job: QueuedJob) => Promise<boolean>,
  queue: JobQueue,
  usage: Usage,
  redeliveryDelayMs: number,
  deadline: number,
  startDelayMs: () => number,
): Promise<void> {
  for (let now = systemClock.now(); now < deadline; now = systemClock.now()) {
    const next = queue.next(now);
    if (next === undefined) return;
    if ('waitMs' in next) {
      await systemClock.sleep(next.waitMs);
      continue;
    }
    usage.invocations++;
    // The start delay holds the job and bills its time, as Lambda's init does.
    const lateMs = startDelayMs();
    if (lateMs > 0) await systemClock.sleep(lateMs);
    // A limiter stopped at the time limit rejects the calls still waiting in it.
    const accepted = await send(next.job).catch(() => false);
    const end = systemClock.now();
    usage.busyMs += end - now;
    if (accepted) queue.recordSuccess(end);
    else queue.redeliver(next.job, end + redeliveryDelayMs);
  }
}
