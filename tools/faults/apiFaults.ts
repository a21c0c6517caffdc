import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';

/**
 * How the API misbehaves during a window:
 * - `hang`: it never answers (the worker's own timeout ends the call);
 * - `rate-limited-without-retry-after`: 429 with no `retry-after` or rate-limit header;
 * - `server-error`: 500 (a long stretch of them opens the circuit);
 * - `flapping`: down (500) and up in turns of `periodMs`, starting down.
 * Calls met by a fault never reach the referee behind: the API did no work and consumed no quota.
 */
export type ApiFaultKind = 'hang' | 'rate-limited-without-retry-after' | 'server-error' | 'flapping';

/** A stretch of misbehaviour, in ms after the scenario starts. */
export interface ApiFaultWindow {
  readonly kind: ApiFaultKind;
  readonly fromMs: number;
  readonly toMs: number;
  /** Length of each down and each up turn of `flapping`. @default 500 */
  readonly periodMs?: number;
}

const DEFAULT_FLAP_MS = 500;

/** An {@link ApiCaller} that misbehaves during its windows and passes everything else to the API behind it. */
export class MisbehavingApi implements ApiCaller {
  private readonly counts = new Map<ApiFaultKind, number>();

  constructor(
    private readonly inner: ApiCaller,
    private readonly windows: readonly ApiFaultWindow[],
    private readonly startedAt: () => number,
  ) {}

  /** @inheritDoc */
  call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    const fault = this.faultNow();
    return fault === undefined ? this.inner.call(body, context) : Promise.resolve(fault);
  }

  /** @inheritDoc */
  probe(): Promise<ApiResult> {
    const fault = this.faultNow();
    return fault === undefined ? this.inner.probe() : Promise.resolve(fault);
  }

  /** Calls and probes met by each kind of fault. */
  injected(): Readonly<Record<string, number>> {
    return Object.fromEntries([...this.counts].map(([kind, n]) => [`api:${kind}`, n]));
  }

  /** The answer of the window open now, counted, or `undefined` when the API behaves (an up turn of `flapping` included). */
  private faultNow(): ApiResult | undefined {
    const at = Date.now() - this.startedAt();
    const window = this.windows.find((w) => at >= w.fromMs && at < w.toMs);
    if (window === undefined) return undefined;
    const answer = answerOf(window, at);
    if (answer !== undefined) this.counts.set(window.kind, (this.counts.get(window.kind) ?? 0) + 1);
    return answer;
  }
}

function answerOf(window: ApiFaultWindow, at: number): ApiResult | undefined {
  switch (window.kind) {
    case 'hang':
      return { kind: 'timeout', afterMs: window.toMs - at };
    case 'rate-limited-without-retry-after':
      return { kind: 'response', status: 429, headers: {} };
    case 'server-error':
      return { kind: 'response', status: 500, headers: {} };
    case 'flapping': {
      const turn = Math.floor((at - window.fromMs) / (window.periodMs ?? DEFAULT_FLAP_MS));
      return turn % 2 === 0 ? { kind: 'response', status: 500, headers: {} } : undefined;
    }
  }
}
