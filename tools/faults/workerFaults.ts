import type { ApiCaller } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import type { WorkerDeps } from '../../lib/services/worker/types';
import { jobIdOf, jobIdsOf } from '../simulation/jobs';

/** Faults of the worker function. */
export interface WorkerFaultPlan {
  /** Job ids whose first delivery crashes after claiming the key, before calling the API. */
  readonly crashBeforeCall?: readonly string[];
  /** Job ids whose first delivery crashes after the API answered, before the success is recorded. */
  readonly crashAfterCall?: readonly string[];
  /**
   * Job ids whose first delivery is killed while its call is in progress at the API: once the call has arrived there,
   * before its answer. The API goes on with the call; the worker reports nothing.
   */
  readonly killMidCall?: readonly string[];
  /**
   * Job ids whose first event (their own or their batch's) Lambda delivers twice: the second copy comes 50 ms later
   * for the first, third, … of them (while the first delivery is calling), 1.5 s later for the others (after it has
   * ended).
   */
  readonly deliveredTwice?: readonly string[];
  /** How far the worker's clock is ahead of the orchestrator's (negative: behind). @default 0 */
  readonly clockSkewMs?: number;
}

/** Delays of a second delivery: while the first is still calling the API, and after it has ended. */
const SOON_MS = 50;
const LATE_MS = 1_500;

/** Where a worker is killed: before its call, while the call is at the API, or after its answer (before recording it). */
export type CrashPoint = 'before-call' | 'mid-call' | 'after-call';

const CRASH_POINTS: Readonly<Record<CrashPoint, string>> = {
  'before-call': 'before calling the API',
  'mid-call': 'while its call was in progress at the API',
  'after-call': 'after the API answered, before recording it',
};

/** What a worker crash looks like to the Lambda host: the invocation failed, and nothing after the crash ran. */
export class WorkerCrash extends Error {
  override readonly name = 'WorkerCrash';
  constructor(
    readonly jobId: string,
    readonly point: CrashPoint,
  ) {
    super(`worker killed (simulated crash) ${CRASH_POINTS[point]} for job ${jobId}`);
  }
}

/** Resolves once the call with an idempotency key has reached the API (see `CallMeter.arrival`). */
export type CallArrival = (idempotencyKey: string) => Promise<void>;

/** Injects a {@link WorkerFaultPlan} into the worker's dependencies and handler, and counts what it injected. */
export class WorkerFaultInjector {
  private readonly crashed: Readonly<Record<CrashPoint, Set<string>>> = {
    'before-call': new Set(),
    'mid-call': new Set(),
    'after-call': new Set(),
  };
  private readonly duplicated = new Set<string>();

  /**
   * @param arrival tells when a call has reached the API, for `killMidCall`. @default at once: the worker is killed
   * as soon as its call is sent
   */
  constructor(
    private readonly plan: WorkerFaultPlan,
    private readonly arrival: CallArrival = () => Promise.resolve(),
  ) {}

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
  crashes(point: CrashPoint): ReadonlySet<string> {
    return this.crashed[point];
  }

  /** Faults injected so far, by kind. */
  injected(): Readonly<Record<string, number>> {
    const skew = this.plan.clockSkewMs ?? 0;
    return {
      'worker:crash-before-call': this.crashed['before-call'].size,
      'worker:killed-mid-call': this.crashed['mid-call'].size,
      'worker:crash-after-call': this.crashed['after-call'].size,
      'worker:delivered-twice': this.duplicated.size,
      ...(skew === 0 ? {} : { 'worker:clock-skew': 1 }),
    };
  }

  /** Whether job `id`'s first delivery is planned to crash at `point` and has not yet; if so, it is counted as crashed. */
  private crashesNow(point: CrashPoint, id: string | undefined): id is string {
    const planned = {
      'before-call': this.plan.crashBeforeCall,
      'mid-call': this.plan.killMidCall,
      'after-call': this.plan.crashAfterCall,
    }[point];
    if (id === undefined || !(planned ?? []).includes(id) || this.crashed[point].has(id)) return false;
    this.crashed[point].add(id);
    return true;
  }

  private crashingApi(api: ApiCaller): ApiCaller {
    return {
      call: async (body, context) => {
        const id = jobIdOf(body);
        if (this.crashesNow('before-call', id)) throw new WorkerCrash(id, 'before-call');
        if (this.crashesNow('mid-call', id)) {
          const arrived = this.arrival(context.idempotencyKey);
          // The call goes on at the API without its worker, which never sees the answer.
          void api.call(body, context);
          await arrived;
          throw new WorkerCrash(id, 'mid-call');
        }
        const result = await api.call(body, context);
        if (this.crashesNow('after-call', id)) throw new WorkerCrash(id, 'after-call');
        return result;
      },
      probe: () => api.probe(),
    };
  }
}

function skewed(clock: Clock, skewMs: number): Clock {
  return skewMs === 0 ? clock : { now: () => clock.now() + skewMs, sleep: (ms) => clock.sleep(ms) };
}
