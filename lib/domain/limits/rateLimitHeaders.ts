/**
 * The rate-limit headers an API may send with every answer, by the provider's format:
 * - `openai`: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset as a duration (`6m0s`, `59.87s`,
 *   `20ms`);
 * - `anthropic`: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`, the reset
 *   as an RFC 3339 instant;
 * - `ietf`: the IETF HTTPAPI fields, either `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds)
 *   with `RateLimit-Policy: 100;w=60`, or the structured `RateLimit-Policy: "p";q=100;w=60` and
 *   `RateLimit: "p";r=50;t=30`; they count requests;
 * - `none`: the API sends none the service reads.
 */
export type LimitHeaderFormat = 'openai' | 'anthropic' | 'ietf' | 'none';

/** Every accepted {@link LimitHeaderFormat}. */
export const LIMIT_HEADER_FORMATS: readonly LimitHeaderFormat[] = ['openai', 'anthropic', 'ietf', 'none'];

/** What a provider's header counts: calls, or one kind of token. */
export type LimitFamily = 'requests' | 'tokens' | 'input-tokens' | 'output-tokens';

/**
 * What one answer's headers say of one limit. Each field is there only when its header was well formed and agrees
 * with the others: a `remaining` above the `limit` is dropped, and so is a value given twice, differently.
 */
export interface LimitReading {
  readonly family: LimitFamily;
  /** The most the API allows per window, a whole number of at least 1. */
  readonly limit?: number;
  /** What is left of it now, a whole number of at least 0. */
  readonly remaining?: number;
  /** When the API says the limit is whole again (epoch ms), no earlier than the answer. */
  readonly resetAt?: number;
  /** The window the API counts in, in ms, when it says (only the IETF policy's `w` does). */
  readonly windowMs?: number;
}

/** Response headers, names in lower case. */
type Headers = Readonly<Record<string, string>>;

/** The longest reset taken as meant (31 days): a later one is a malformed header, not a limit. */
const MAX_RESET_MS = 31 * 86_400_000;

/** The largest count taken as meant: as large as a tier's limit may be. */
const MAX_COUNT = 1e12;

/**
 * The value of header `name`, when it holds one value: fetch joins a header sent twice with `, `, and two values
 * that differ say nothing.
 */
function single(headers: Headers, name: string): string | undefined {
  const raw = headers[name];
  if (raw === undefined) return undefined;
  const values = [...new Set(raw.split(',').map((part) => part.trim()))];
  return values.length === 1 ? values[0] : undefined;
}

/** A whole number from 0 to {@link MAX_COUNT} written in plain digits, else `undefined`. */
function count(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,13}$/.test(text)) return undefined;
  const value = Number(text);
  return value <= MAX_COUNT ? value : undefined;
}

/** A reset `afterMs` from `now`, when it is a finite delay from 0 to {@link MAX_RESET_MS}. */
function resetAfter(afterMs: number | undefined, now: number): number | undefined {
  return afterMs !== undefined && Number.isFinite(afterMs) && afterMs >= 0 && afterMs <= MAX_RESET_MS
    ? now + Math.ceil(afterMs)
    : undefined;
}

const GO_UNIT_MS: Readonly<Record<string, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  ns: 1e-6,
};

/** A Go duration such as OpenAI's resets (`6m0s`, `1h2m3.5s`, `20ms`), in ms; `undefined` if malformed. */
export function goDurationMs(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(h|ms|m|s|us|µs|ns))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g))
    total += Number(amount) * (GO_UNIT_MS[unit ?? ''] ?? Number.NaN);
  return total;
}

/**
 * The reading of `family` from its texts, each field kept only when well formed and consistent: none when neither a
 * limit nor a remaining is.
 */
function reading(
  family: LimitFamily,
  texts: { readonly limit?: string; readonly remaining?: string },
  resetAt: number | undefined,
  windowMs?: number,
): LimitReading[] {
  const limitCount = count(texts.limit);
  const limit = limitCount !== undefined && limitCount >= 1 ? limitCount : undefined;
  const left = count(texts.remaining);
  const remaining = left !== undefined && (limit === undefined || left <= limit) ? left : undefined;
  if (limit === undefined && remaining === undefined) return [];
  return [
    {
      family,
      ...(limit === undefined ? {} : { limit }),
      ...(remaining === undefined ? {} : { remaining }),
      ...(resetAt === undefined ? {} : { resetAt }),
      ...(windowMs === undefined ? {} : { windowMs }),
    },
  ];
}

/** OpenAI's readings: requests and tokens. */
function openAiReadings(headers: Headers, now: number): LimitReading[] {
  return (['requests', 'tokens'] as const).flatMap((family) => {
    const reset = single(headers, `x-ratelimit-reset-${family}`);
    return reading(
      family,
      {
        limit: single(headers, `x-ratelimit-limit-${family}`),
        remaining: single(headers, `x-ratelimit-remaining-${family}`),
      },
      resetAfter(reset === undefined ? undefined : goDurationMs(reset), now),
    );
  });
}

/** An RFC 3339 instant (`2026-11-29T12:00:30Z`), in epoch ms; `undefined` if malformed. */
function rfc3339(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? at : undefined;
}

/** Anthropic's readings: requests, tokens, input and output tokens. */
function anthropicReadings(headers: Headers, now: number): LimitReading[] {
  return (['requests', 'tokens', 'input-tokens', 'output-tokens'] as const).flatMap((family) => {
    const prefix = `anthropic-ratelimit-${family}`;
    const at = rfc3339(single(headers, `${prefix}-reset`));
    return reading(
      family,
      { limit: single(headers, `${prefix}-limit`), remaining: single(headers, `${prefix}-remaining`) },
      resetAfter(at === undefined ? undefined : Math.max(0, at - now), now),
    );
  });
}

/**
 * The parameters of a structured-field item (`"p";q=100;w=60` or `100;w=60`): its bare value as `''`, then each
 * `key=value`, quotes removed.
 */
function parameters(item: string): Map<string, string> {
  const [value = '', ...rest] = item.split(';').map((part) => part.trim());
  const found = new Map<string, string>([['', value.replace(/^"(.*)"$/, '$1')]]);
  for (const part of rest) {
    const [key, text] = part.split('=', 2);
    if (key !== undefined && text !== undefined) found.set(key.trim(), text.trim().replace(/^"(.*)"$/, '$1'));
  }
  return found;
}

/** A window in whole seconds from 1 s to 31 days, in ms. */
function windowOf(seconds: string | undefined): number | undefined {
  const value = count(seconds);
  return value !== undefined && value >= 1 && value * 1000 <= MAX_RESET_MS ? value * 1000 : undefined;
}

/**
 * The IETF readings, of requests: the structured `RateLimit` and `RateLimit-Policy` when the answer has `RateLimit`
 * (one policy, or the policy the `RateLimit` item names; a quota unit other than requests is not read), else the
 * older `RateLimit-Limit`, `-Remaining` and `-Reset` with the window of `RateLimit-Policy`.
 */
function ietfReadings(headers: Headers, now: number): LimitReading[] {
  const structured = headers.ratelimit;
  if (structured !== undefined) {
    const items = structured.split(',').map(parameters);
    if (items.length !== 1) return [];
    const [item] = items;
    const policies = (headers['ratelimit-policy'] ?? '').split(',').map(parameters);
    const policy = policies.find((p) => p.get('') === item?.get(''));
    if (policy !== undefined && (policy.get('qu') ?? 'requests') !== 'requests') return [];
    const reset = count(item?.get('t'));
    return reading(
      'requests',
      { limit: policy?.get('q'), remaining: item?.get('r') },
      resetAfter(reset === undefined ? undefined : reset * 1000, now),
      windowOf(policy?.get('w')),
    );
  }
  const policy = parameters(single(headers, 'ratelimit-policy') ?? '');
  const reset = count(single(headers, 'ratelimit-reset'));
  return reading(
    'requests',
    { limit: single(headers, 'ratelimit-limit'), remaining: single(headers, 'ratelimit-remaining') },
    resetAfter(reset === undefined ? undefined : reset * 1000, now),
    windowOf(policy.get('w')),
  );
}

/**
 * What `headers` (names in lower case) say of the API's limits in `format`, read at `now`: one reading per limit
 * family the headers name with a well-formed limit or remaining. Malformed, contradictory or absurd values are left
 * out, never guessed at; a reset given as a delay is taken from `now`.
 */
export function readLimitHeaders(format: LimitHeaderFormat, headers: Headers, now: number): LimitReading[] {
  switch (format) {
    case 'openai':
      return openAiReadings(headers, now);
    case 'anthropic':
      return anthropicReadings(headers, now);
    case 'ietf':
      return ietfReadings(headers, now);
    case 'none':
      return [];
  }
}
