import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import { LANE_START, laneConfig, LaneWorld } from './laneRuns';
import type { ConditionCheck, ConditionScenario } from './types';

/** The provider's limit: tokens per minute, counted at each request. */
const TOKENS_PER_MINUTE = 1_000;
/** Each request: a prompt of 100 tokens and `max_completion_tokens` of 300, so its estimate is 400; it uses 160. */
const PROMPT_TOKENS = 100;
const MAX_TOKENS = 300;
const COMPLETION_TOKENS = 60;

/**
 * An OpenAI-like limiter: it counts each request's prompt plus its `max_completion_tokens` when the request arrives,
 * in every minute `(T − 60 s, T]`, never gives back what the answer did not use, and refuses with 429 a request that
 * would take the minute past its limit.
 */
class EstimatingLimiter {
  private readonly counted: { readonly at: number; readonly tokens: number }[] = [];
  refused = 0;

  /** Its answer to a request that arrived at `at`. */
  answer(at: number): ApiResult {
    const tokens = PROMPT_TOKENS + MAX_TOKENS;
    const inMinute = this.counted.filter((c) => c.at > at - 60_000).reduce((sum, c) => sum + c.tokens, 0);
    if (inMinute + tokens > TOKENS_PER_MINUTE) {
      this.refused++;
      return { kind: 'response', status: 429, headers: { 'retry-after': '60' } };
    }
    this.counted.push({ at, tokens });
    const usage = {
      prompt_tokens: PROMPT_TOKENS,
      completion_tokens: COMPLETION_TOKENS,
      total_tokens: PROMPT_TOKENS + COMPLETION_TOKENS,
    };
    return { kind: 'response', status: 200, headers: {}, body: JSON.stringify({ object: 'chat.completion', usage }) };
  }
}

/** Condition 12: a provider whose limiter counts the estimate at the request and hands nothing back. */
export const providerKeepsEstimate: ConditionScenario = {
  name: 'provider-keeps-estimate',
  condition: 12,
  injects: `an OpenAI lane (usagePreset openai, ${TOKENS_PER_MINUTE} tokens a minute) whose limiter counts each request's ${PROMPT_TOKENS + MAX_TOKENS}-token estimate and never gives back the ${MAX_TOKENS - COMPLETION_TOKENS} its answer did not use`,
  breaks:
    'the unused tokens are handed back to the ledger, so a third request goes within the minute, past what the provider counts as allowed, and is answered 429',
  async run(): Promise<ConditionCheck> {
    const limiter = new EstimatingLimiter();
    const world = new LaneWorld({ latencyMs: 200, answer: (_body, at) => limiter.answer(at) });
    await world.send(
      6,
      { model: '…', max_completion_tokens: MAX_TOKENS, messages: [{ role: 'user', content: '…' }] },
      { tokens: PROMPT_TOKENS + MAX_TOKENS },
    );
    const config = laneConfig({
      quotas: [
        { limit: 100, per: 'second' },
        { limit: TOKENS_PER_MINUTE, per: 'minute', unit: 'tokens' },
      ],
      usagePreset: 'openai',
    });
    await world.run(config, { deadline: LANE_START + 150_000 });
    const { refused } = limiter;
    const answered = world.calls.length - refused;
    return {
      held: refused === 0 && answered === 6,
      detail: `${answered} of 6 requests answered, ${refused} refused with 429 by a limiter that keeps each estimate`,
    };
  },
};
