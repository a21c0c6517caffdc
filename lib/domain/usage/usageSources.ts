import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';
import { MAX_QUANTITY, type Costs } from '../quota/tiers';
import { jsonPointerProblem, resolveJsonPointer } from './jsonPointer';

/**
 * Where the API's answer says how much of one unit a call used:
 * - `{"header": "x-actual-cost"}`: a response header holding a number;
 * - `{"pointer": "/usage/output_tokens"}`: a JSON Pointer (RFC 6901) into the response body, parsed as JSON;
 * - `{"sum": ["/usage/input_tokens", "/usage/cache_creation_input_tokens"]}`: the sum of several pointers' numbers.
 */
export type UsageSource =
  { readonly header: string } | { readonly pointer: string } | { readonly sum: readonly string[] };

/** Response shapes this service knows, each giving the sources of the units `input_tokens`, `output_tokens` and `tokens`. */
export type UsagePreset = 'anthropic' | 'openai';

/**
 * The sources of each preset (see {@link UsagePreset}):
 * - `anthropic`: the Messages API's `usage`. Input tokens are the uncached ones plus those written to the cache,
 *   which Anthropic counts toward its input-token limit; tokens read from the cache are not counted.
 * - `openai`: the Chat Completions API's `usage`: `prompt_tokens`, `completion_tokens` and `total_tokens`.
 */
export const USAGE_PRESETS: Readonly<Record<UsagePreset, Readonly<Record<string, UsageSource>>>> = Object.freeze({
  anthropic: Object.freeze({
    input_tokens: { sum: ['/usage/input_tokens', '/usage/cache_creation_input_tokens'] },
    output_tokens: { pointer: '/usage/output_tokens' },
    tokens: { sum: ['/usage/input_tokens', '/usage/cache_creation_input_tokens', '/usage/output_tokens'] },
  }),
  openai: Object.freeze({
    input_tokens: { pointer: '/usage/prompt_tokens' },
    output_tokens: { pointer: '/usage/completion_tokens' },
    tokens: { pointer: '/usage/total_tokens' },
  }),
});

/**
 * What a provider's limiter counts of one unit (see `UnitSetting.counts`):
 * - `usage`: what the call used. A limiter that counts the estimate at the request and corrects it with the answer's
 *   usage (Anthropic's output tokens) lets the unused part of an estimate be used again at once.
 * - `estimate`: what the request asked for, at the request, with nothing given back when the answer used less.
 */
export type UsageCounting = 'usage' | 'estimate';

/** Every accepted {@link UsageCounting}. */
export const USAGE_COUNTINGS: readonly UsageCounting[] = ['usage', 'estimate'];

/** What a unit counts when neither it nor the preset says: the usage. */
export const DEFAULT_USAGE_COUNTING: UsageCounting = 'usage';

/**
 * What each preset's provider counts of the units it knows, where that is not `usage`:
 * - `anthropic`: nothing here. Anthropic's rate-limit documentation says its output-token limit counts `max_tokens`
 *   when a request starts and is adjusted to the tokens the answer used when it ends: the usage.
 * - `openai`: `estimate` for `input_tokens`, `output_tokens` and `tokens`. OpenAI's rate-limit guide says its limiter
 *   counts a request at the moment it is made, as the larger of its `max_tokens` and the tokens its text is estimated
 *   at, and says nothing of giving back what the answer did not use. Handing that back would let more calls through
 *   than the limiter allows, and they would be answered 429.
 */
export const PRESET_COUNTING: Readonly<Record<UsagePreset, Readonly<Record<string, UsageCounting>>>> = Object.freeze({
  anthropic: Object.freeze({}),
  openai: Object.freeze({ input_tokens: 'estimate', output_tokens: 'estimate', tokens: 'estimate' }),
});

/** Every accepted {@link UsagePreset}. */
export const USAGE_PRESET_NAMES = Object.keys(USAGE_PRESETS) as UsagePreset[];

/** The header the `cost` unit's usage is read from unless configured otherwise. */
export const ACTUAL_COST_HEADER = 'x-actual-cost';

/** Most pointers a `sum` may add up. */
const MAX_SUM_TERMS = 10;

/**
 * Validates one unit's usage source (see {@link UsageSource}); a header name is kept in lower case, as answers'
 * headers are.
 * @throws ConfigError naming `field` and what is allowed.
 */
export function parseUsageSource(input: unknown, field: string): UsageSource {
  const shapes = `{"header": "name"}, {"pointer": "/usage/output_tokens"} or {"sum": ["/usage/input_tokens", …]}`;
  if (typeof input !== 'object' || input === null || Array.isArray(input) || Object.keys(input).length !== 1) {
    throw new ConfigError(field, `must be one of ${shapes}; got ${describeValue(input)}`);
  }
  const [[kind, value]] = Object.entries(input) as [[string, unknown]];
  const pointer = (text: unknown, at: string): string => {
    const problem = typeof text === 'string' ? jsonPointerProblem(text) : 'must be a JSON Pointer string (RFC 6901)';
    if (problem !== undefined) throw new ConfigError(at, `${problem}; got ${describeValue(text)}`);
    return text as string;
  };
  switch (kind) {
    case 'header':
      if (typeof value !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/.test(value)) {
        throw new ConfigError(
          `${field}.header`,
          `must be an HTTP header name (1 to 256 token characters); got ${describeValue(value)}`,
        );
      }
      return Object.freeze({ header: value.toLowerCase() });
    case 'pointer':
      return Object.freeze({ pointer: pointer(value, `${field}.pointer`) });
    case 'sum':
      if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SUM_TERMS) {
        throw new ConfigError(
          `${field}.sum`,
          `must be a list of 1 to ${MAX_SUM_TERMS} JSON Pointers; got ${describeValue(value)}`,
        );
      }
      return Object.freeze({ sum: Object.freeze(value.map((term, i) => pointer(term, `${field}.sum[${i}]`))) });
    default:
      throw new ConfigError(`${field}.${kind}`, `unknown key; a usage source is one of ${shapes}`);
  }
}

/**
 * A usage figure as counted: a finite number from 0 up, rounded up to a whole unit, and at most {@link MAX_QUANTITY}
 * (a larger figure is counted as that: still more than any quota holds, so never an under-count); `undefined` for
 * anything else (a negative number, text, `null`, an object).
 */
function countOf(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return undefined;
  return Math.min(MAX_QUANTITY, Math.ceil(value));
}

/** A plain non-negative decimal: no sign, exponent, hex or empty string, all of which `Number()` accepts. */
const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

/** A header's text as a count (see {@link countOf}): a plain non-negative decimal, nothing else. */
function headerCount(text: string | undefined): number | undefined {
  const trimmed = text?.trim() ?? '';
  return DECIMAL.test(trimmed) ? countOf(Number(trimmed)) : undefined;
}

/** The parts of an API's answer that usage is read from. */
export interface UsageAnswer {
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body's text, or its beginning when the caller cut it. */
  readonly body?: string;
}

/** The answer's body parsed as JSON, or `undefined` when it is not JSON (or was cut short). */
function parsedBody(body: string | undefined): { readonly json: unknown } | undefined {
  if (body === undefined) return undefined;
  try {
    return { json: JSON.parse(body) as unknown };
  } catch {
    return undefined;
  }
}

/**
 * The usage each unit's source reads from `answer`, for the units whose source finds a count there: a unit whose
 * header or field is missing, or holds no count, or whose body is not JSON, is left out, so that its reservation
 * stands (never an under-count). In a `sum`, a field holding `null` counts 0 (as providers write an absent count),
 * but a missing field leaves the unit out.
 */
export function readUsage(sources: Readonly<Record<string, UsageSource>>, answer: UsageAnswer): Costs {
  let body: { readonly json: unknown } | undefined | null = null;
  const json = () => (body === null ? (body = parsedBody(answer.body)) : body);
  const usage: Record<string, number> = {};
  for (const [unit, source] of Object.entries(sources)) {
    let count: number | undefined;
    if ('header' in source) count = headerCount(answer.headers[source.header]);
    else if ('pointer' in source)
      count = json() === undefined ? undefined : countOf(resolveJsonPointer(json()?.json, source.pointer));
    else count = json() === undefined ? undefined : sumOf(json()?.json, source.sum);
    if (count !== undefined) usage[unit] = count;
  }
  return usage;
}

/** The sum of the counts `pointers` find in `document` (a `null` counts 0), or `undefined` when one finds none. */
function sumOf(document: unknown, pointers: readonly string[]): number | undefined {
  let total = 0;
  for (const pointer of pointers) {
    const value = resolveJsonPointer(document, pointer);
    const count = value === null ? 0 : countOf(value);
    if (count === undefined) return undefined;
    total += count;
  }
  return Math.min(MAX_QUANTITY, total);
}
