import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import type { WorkerDeps } from '../../lib/services/processJob';
import { jobIdOf } from '../simulation/jobs';

/** Faults of the worker function. */
export interface WorkerFaultPlan {
  /** Job ids whose first delivery crashes after claiming the key, before calling the API. */
  readonly crashBeforeCall?: readonly string[];
  /** Job ids whose first delivery crashes after the API answered, before the success is recorded. */
  readonly crashAfterCall?: readonly string[];
  /**
   * Job ids whose first event (their own or their batch's) Lambda delivers twice: the second copy comes 50 ms later
   * for the first, third, … of them (while the first delivery is calling), 1.5 s later for the others (after it has
   * ended).
   */
  readonly deliveredTwice?: readonly string[];
  /** How far the worker's clock is ahead of the orchestrator's (negative: behind). @default 0 */
  readonly clockSkewMs?: number;
}

/** The job ids a worker event carries: its own job's, or each of a batch's. */
function jobIdsOf(event: unknown): string[] {
  const { body, jobs } = event as { readonly body?: unknown; readonly jobs?: unknown };
  const bodies = Array.isArray(jobs) ? jobs.map((job: unknown) => (job as { readonly body?: unknown }).body) : [body];
  return bodies.flatMap((text) => (typeof text === 'string' ? (jobIdOf(text) ?? []) : []));
}

/** Delays of a second delivery: while the first is still calling the API, and after it has ended. */
const SOON_MS = 50;
const LATE_MS = 1_500;

/** What a worker crash looks like to the Lambda host: the invocation failed, and nothing after the crash ran. */
export class WorkerCrash extends Error {
  override readonly name = 'WorkerCrash';
  constructor(
    readonly jobId: string,
    readonly point: 'before-call' | 'after-call',
  ) {
    super(`worker killed (simulated crash) ${point === 'before-call' ? 'before calling the API' : 'after the API answered, before recording it'} for job ${jobId}`);
  }
}

/** Injects a {@link WorkerFaultPlan} into the worker's dependencies and handler, and counts what it injected. */
export class WorkerFaultInjector {
  private readonly crashed = { 'before-call': new Set<string>(), 'after-call': new Set<string>() };
  private readonly duplicated = new Set<string>();

  constructor(private readonly plan: WorkerFaultPlan) {}

  /** The worker's dependencies with a crashing API caller and a skewed clock. */
  deps(deps: WorkerDeps): WorkerDeps {
    return { ...deps, api: this.crashingApi(deps.api), clock: skewed(deps.clock, this.plan.clockSkewMs ?? 0) };
  }

  /** The worker handler, delivering the planned events twice. */
  handler(handler: (event: unknown) => Promise<unknown>): (event: unknown) => Promise<unknown> {
    return (event) => {
      const planned = this.plan.deliveredTwice ?? [];
      const id = jobIdsOf(event).find((jobId) => planned.includes(jobId) && !this.duplicated.has(jobId));
      if (id !== undefined) {
        this.duplicated.add(id);
        // Lambda's second delivery is its own invocation: its outcome is not this one's.
        setTimeout(() => void handler(event).catch(() => undefined), planned.indexOf(id) % 2 === 0 ? SOON_MS : LATE_MS);
      }
      return handler(event);
    };
  }

  /** Job ids of the crashes injected so far. */
  crashes(point: 'before-call' | 'after-call'): ReadonlySet<string> {
    return this.crashed[point];
  }

  /** Faults injected so far, by kind. */
  injected(): Readonly<Record<string, number>> {
    const skew = this.plan.clockSkewMs ?? 0;
    return {
      'worker:crash-before-call': this.crashed['before-call'].size,
      'worker:crash-after-call': this.crashed['after-call'].size,
      'worker:delivered-twice': this.duplicated.size,
      ...(skew === 0 ? {} : { 'worker:clock-skew': 1 }),
    };
  }

  private crashingApi(api: ApiCaller): ApiCaller {
    const crashOnce = (point: 'before-call' | 'after-call', id: string | undefined): void => {
      const planned = point === 'before-call' ? this.plan.crashBeforeCall : this.plan.crashAfterCall;
      if (id === undefined || !(planned ?? []).includes(id) || this.crashed[point].has(id)) return;
      this.crashed[point].add(id);
      throw new WorkerCrash(id, point);
    };
    return {
      call: async (body, context) => {
        crashOnce('before-call', jobIdOf(body));
        const result = await api.call(body, context);
        crashOnce('after-call', jobIdOf(body));
        return result;
      },
      probe: () => api.probe(),
    };
  }
}

function skewed(clock: Clock, skewMs: number): Clock {
  return skewMs === 0 ? clock : { now: () => clock.now() + skewMs, sleep: (ms) => clock.sleep(ms) };
}
