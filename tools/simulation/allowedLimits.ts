import { describeValue } from '../../lib/domain/describeValue';
import { MAX_QUANTITY, type Tier } from '../../lib/domain/quota/tiers';
import { ConfigError } from '../../lib/errors';

/** The rate-limit headers a simulated API's answers carry (see `readLimitHeaders` for what the service reads). */
export type AnnouncedHeaders = 'ietf' | 'openai' | 'none';

/**
 * What a simulated API really allows when it is not what the lane is configured with: from each instant on, each of
 * its tiers' limit, in the order of its tiers; and whether its answers say so in their headers. Before the first
 * change, and for a tier a change leaves out, the tier's own limit holds.
 */
export interface AllowedLimits {
  /** In time order: from `atMs` (epoch ms) on, the limit of each tier. */
  readonly changes: readonly { readonly atMs: number; readonly limits: readonly number[] }[];
  readonly headers: AnnouncedHeaders;
}

/** Each of `tiers`' limit at `at` under `allowed` (their own without it). */
export function limitsAt(tiers: readonly Tier[], allowed: AllowedLimits | undefined, at: number): number[] {
  const change = allowed?.changes.filter((c) => c.atMs <= at).pop();
  return tiers.map((tier, i) => change?.limits[i] ?? tier.limit);
}

/** One tier's state after an answer, for its headers: its limit, what is left of it, and when the oldest call frees. */
export interface TierState {
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the oldest call counted stops counting, rounded up. */
  readonly resetSeconds: number;
  /** The tier's window in whole seconds. */
  readonly windowSeconds: number;
}

/**
 * The headers that announce `state`, the state of the API's first sliding tier of requests, in `format`: the IETF
 * fields with the policy's window, or OpenAI's `x-ratelimit-*-requests` with the reset as a duration.
 */
export function announcedHeaders(format: AnnouncedHeaders, state: TierState): Record<string, string> {
  const { limit, remaining, resetSeconds, windowSeconds } = state;
  switch (format) {
    case 'ietf':
      return {
        'ratelimit-limit': String(limit),
        'ratelimit-remaining': String(remaining),
        'ratelimit-reset': String(resetSeconds),
        'ratelimit-policy': `${limit};w=${windowSeconds}`,
      };
    case 'openai':
      return {
        'x-ratelimit-limit-requests': String(limit),
        'x-ratelimit-remaining-requests': String(remaining),
        'x-ratelimit-reset-requests': `${resetSeconds}s`,
      };
    case 'none':
      return {};
  }
}

/** {@link AllowedLimits} as a scenario writes them: each change in seconds from the run's start. */
export interface ScenarioAllowed {
  readonly changes: readonly { readonly atSeconds: number; readonly limits: readonly number[] }[];
  readonly headers: AnnouncedHeaders;
}

const HEADERS: readonly AnnouncedHeaders[] = ['ietf', 'openai', 'none'];

/** `allowed` of a run that started at `start` (epoch ms). */
export function allowedFrom(allowed: ScenarioAllowed, start: number): AllowedLimits {
  return {
    headers: allowed.headers,
    changes: allowed.changes.map(({ atSeconds, limits }) => ({ atMs: start + atSeconds * 1000, limits })),
  };
}

/** A change's limits: whole numbers from 1 to {@link MAX_QUANTITY}, one per tier. */
function limitsOf(value: unknown, field: string): number[] {
  const valid = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_QUANTITY;
  if (!Array.isArray(value) || value.length === 0 || !value.every(valid))
    throw new ConfigError(
      field,
      `must be a list of whole numbers from 1 to ${MAX_QUANTITY}; got ${describeValue(value)}`,
    );
  return value as number[];
}

/**
 * A scenario's `api.allowed`: `{"changes": [{"atSeconds": 0, "limits": [12]}, {"atSeconds": 25, "limits": [8]}],
 * "headers": "ietf"}`. Each change sets, from `atSeconds` on, the limit of each of the API's tiers in order (the
 * configured quotas'); `headers` (`ietf`, `openai` or `none`, the default) is what its answers announce of its first
 * sliding tier of requests.
 * @throws ConfigError naming the field at `field` and what it allows.
 */
export function parseAllowed(input: unknown, field: string): ScenarioAllowed {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ConfigError(field, `must be an object {"changes": […], "headers"?}; got ${describeValue(input)}`);
  const { changes, headers = 'none', ...rest } = input as Record<string, unknown>;
  const [unknown] = Object.keys(rest);
  if (unknown !== undefined)
    throw new ConfigError(`${field}.${unknown}`, 'unknown key; allowed keys are changes, headers');
  if (!HEADERS.includes(headers as AnnouncedHeaders))
    throw new ConfigError(`${field}.headers`, `must be one of ${HEADERS.join(', ')}; got ${describeValue(headers)}`);
  if (!Array.isArray(changes) || changes.length === 0)
    throw new ConfigError(
      `${field}.changes`,
      `must be a non-empty list of {"atSeconds", "limits"}; got ${describeValue(changes)}`,
    );
  let previous = -1;
  const parsed = changes.map((change: unknown, i) => {
    const at = (change as { atSeconds?: unknown } | null)?.atSeconds;
    if (typeof at !== 'number' || !Number.isFinite(at) || at < 0 || at <= previous)
      throw new ConfigError(
        `${field}.changes[${i}].atSeconds`,
        `must be a number of seconds from 0, each later than the one before; got ${describeValue(at)}`,
      );
    previous = at;
    return {
      atSeconds: at,
      limits: limitsOf((change as { limits?: unknown }).limits, `${field}.changes[${i}].limits`),
    };
  });
  return { changes: parsed, headers: headers as AnnouncedHeaders };
}
