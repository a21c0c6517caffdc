import type { ApiCaller } from '../../lib/ports/ApiCaller';

/** One job call at the API: from its arrival to its answer (`to` unset while it is in progress). */
export interface CallSpan {
  readonly from: number;
  to?: number;
}

/** What {@link CallMeter} saw of the calls in progress at the API. */
export interface CallsInProgress {
  /** Job calls that reached the API. */
  readonly calls: number;
  /** The most job calls in progress at one instant. */
  readonly peak: number;
  /** Calls that arrived while `cap` or more calls were already in progress (0 without a cap). */
  readonly overCap: number;
  /** Calls still in progress, arrived and not yet answered. */
  readonly inProgress: number;
}

/**
 * Sweeps `spans` in time: the peak of calls in progress, and the calls that arrived while `cap` were in progress.
 * A call answered at the instant another arrives does not overlap it; a call with no answer yet lasts to the end.
 */
export function callsInProgress(spans: readonly CallSpan[], cap = Number.POSITIVE_INFINITY): CallsInProgress {
  const edges = spans.flatMap(({ from, to }) => [
    { at: from, step: 1 },
    ...(to === undefined ? [] : [{ at: Math.max(from, to), step: -1 }]),
  ]);
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let now = 0;
  let peak = 0;
  let overCap = 0;
  for (const { step } of edges) {
    if (step > 0 && now >= cap) overCap++;
    now += step;
    peak = Math.max(peak, now);
  }
  return { calls: spans.length, peak, overCap, inProgress: now };
}

/**
 * Counts the job calls in progress at the API, each from its arrival to its answer, by sitting in front of it (health
 * checks are not counted: they take no call slot). A call served over HTTP is dated from when its worker sent it
 * (the server's `waitedMs`, see `ServedCallContext`), as the referee dates it: the count can only come out higher
 * than the API's own.
 *
 * It also tells a worker fault when its call has reached the API ({@link CallMeter.arrival}), so that a worker can
 * be killed while its call is in progress there.
 */
export class CallMeter {
  private readonly spans: CallSpan[] = [];
  private readonly waiting = new Map<string, (() => void)[]>();

  /** @param now the wall clock the server's `waitedMs` is measured on. @default Date.now */
  constructor(private readonly now: () => number = Date.now) {}

  /** `api`, with each job call counted from its arrival to its answer. */
  around(api: ApiCaller): ApiCaller {
    return {
      call: async (body, context) => {
        const { waitedMs } = context as { readonly waitedMs?: number };
        const span: CallSpan = { from: this.now() - Math.max(0, waitedMs ?? 0) };
        this.spans.push(span);
        const arrived = this.waiting.get(context.idempotencyKey) ?? [];
        this.waiting.delete(context.idempotencyKey);
        for (const resolve of arrived) resolve();
        try {
          return await api.call(body, context);
        } finally {
          span.to = this.now();
        }
      },
      probe: () => api.probe(),
    };
  }

  /** Resolves when the next job call with `idempotencyKey` reaches the API. */
  arrival(idempotencyKey: string): Promise<void> {
    return new Promise((resolve) =>
      this.waiting.set(idempotencyKey, [...(this.waiting.get(idempotencyKey) ?? []), resolve]),
    );
  }

  /** The calls so far, against `cap` calls in progress. */
  report(cap?: number): CallsInProgress {
    return callsInProgress(this.spans, cap);
  }
}
