import type { ApiResult } from '../../lib/ports/ApiCaller';

/**
 * The ways an API's OpenAI rate-limit headers may lie, in turn (the fault suite's `lying-headers`, the swarm's
 * `lying-headers` family): a limit far below the real one, one far above, none at all, values that are
 * no numbers, a remaining above the limit and a header sent twice with two values, and nothing left until a reset
 * a month away. None may make the service exceed a quota, lose a job or call one twice: a low lie only slows the lane,
 * and no lie lifts a limit above the configured one.
 */
export const HEADER_LIES: readonly Readonly<Record<string, string>>[] = [
  { 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' },
  {
    'x-ratelimit-limit-requests': '1000000000',
    'x-ratelimit-remaining-requests': '999999999',
    'x-ratelimit-reset-requests': '1ms',
  },
  {},
  {
    'x-ratelimit-limit-requests': 'lots',
    'x-ratelimit-remaining-requests': '-3',
    'x-ratelimit-reset-requests': 'soon',
  },
  {
    'x-ratelimit-limit-requests': '10, 1000',
    'x-ratelimit-remaining-requests': '50',
    'x-ratelimit-reset-requests': '2s',
  },
  { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '720h' },
];

/** `answer` with its rate-limit headers replaced by the `n`-th lie (see {@link HEADER_LIES}), in turn. */
export function withLyingHeaders(answer: ApiResult, n: number): ApiResult {
  if (answer.kind !== 'response') return answer;
  const kept = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !name.startsWith('x-ratelimit-')));
  return { ...answer, headers: { ...kept, ...HEADER_LIES[n % HEADER_LIES.length] } };
}
