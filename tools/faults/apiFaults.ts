import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';
import { withLyingHeaders } from '../simulation/headerLies';

/**
 * How the API misbehaves during a window:
 * - `hang`: it never answers (the worker's own timeout ends the call);
 * - `rate-limited-without-retry-after`: 429 with no `retry-after` or rate-limit header;
 * - `server-error`: 500 (a long stretch of them opens the circuit);
 * - `flapping`: down (500) and up in turns of `periodMs`, starting down;
 * - `rate-limited-for-hours`: 429 with a `retry-after` of `retryAfterSeconds` (hours by default);
 * - `caller-rejected`: 401 and 403 in turn, as for a revoked key or a missing permission, until the window ends;
 * - `lying-headers`: the API answers as it would, but its OpenAI rate-limit headers lie, vanish, are malformed or
 *   contradict each other, a different way at each call (see `HEADER_LIES`).
 * Calls met by any fault but `lying-headers` never reach the referee behind: the API did no work and consumed no
 * quota.
 */
export type ApiFaultKind =
  | 'hang'
  | 'rate-limited-without-retry-after'
  | 'server-error'
  | 'flapping'
  | 'rate-limited-for-hours'
  | 'caller-rejected'
  | 'lying-headers';

/** A stretch of misbehaviour, in ms after the scenario starts. */
export interface ApiFaultWindow {
  readonly kind: ApiFaultKind;
  readonly fromMs: number;
  readonly toMs: number;
  /** Length of each down and each up turn of `flapping`. @default 500 */
  readonly periodMs?: number;
  /** The `retry-after` of `rate-limited-for-hours`. @default 7200 */
  readonly retryAfterSeconds?: number;
}

/** Told of each job call a fault answered, so that the referee can count it too (see `VirtualApi.recordOutcome`). */
export type FaultAnswered = (body: string, context: { readonly idempotencyKey: string }, status: number) => void;

const DEFAULT_FLAP_MS = 500;
const DEFAULT_RETRY_AFTER_SECONDS = 7_200;

/** An {@link ApiCaller} that misbehaves during its windows and passes everything else to the API behind it. */
export class MisbehavingApi implements ApiCaller {
  private readonly counts = new Map<ApiFaultKind, number>();

  /** @param onFault told of each job call a fault answered with a status. @default nobody */
  constructor(
    private readonly inner: ApiCaller,
    private readonly windows: readonly ApiFaultWindow[],
    private readonly startedAt: () => number,
    private readonly onFault: FaultAnswered = () => undefined,
  ) {}

  /** @inheritDoc */
  async call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    const lying = this.windowNow()?.kind === 'lying-headers';
    if (lying) return withLyingHeaders(await this.inner.call(body, context), this.count('lying-headers'));
    const fault = this.faultNow();
    if (fault === undefined) return this.inner.call(body, context);
    if (fault.kind === 'response') this.onFault(body, context, fault.status);
    return Promise.resolve(fault);
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

  /** The window open now, if any. */
  private windowNow(): ApiFaultWindow | undefined {
    const at = Date.now() - this.startedAt();
    return this.windows.find((w) => at >= w.fromMs && at < w.toMs);
  }

  /** Counts one more fault of `kind`, and says how many there were before it. */
  private count(kind: ApiFaultKind): number {
    const before = this.counts.get(kind) ?? 0;
    this.counts.set(kind, before + 1);
    return before;
  }

  /** The answer of the window open now, counted, or `undefined` when the API behaves (an up turn of `flapping` included). */
  private faultNow(): ApiResult | undefined {
    const at = Date.now() - this.startedAt();
    const window = this.windowNow();
    if (window === undefined || window.kind === 'lying-headers') return undefined;
    const answer = answerOf(window, at);
    if (answer !== undefined) this.count(window.kind);
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
    case 'rate-limited-for-hours':
      return {
        kind: 'response',
        status: 429,
        headers: { 'retry-after': String(window.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) },
      };
    case 'caller-rejected':
      return { kind: 'response', status: Math.floor(at / 100) % 2 === 0 ? 401 : 403, headers: {} };
    case 'lying-headers':
      return undefined;
  }
}
