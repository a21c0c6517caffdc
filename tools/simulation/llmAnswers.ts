import type { Costs } from '../../lib/domain/quota/tiers';
import { jobFieldsOf, jobIdOf, type JobSpec } from './jobs';
import { seededRandom } from './random';
import type { LlmModel } from './scenario';

/**
 * The output tokens of job `id`'s answer under `model`: the same for every call of the id, so that a retried call
 * answers as the first would (seeded from the id, see {@link seededRandom}).
 */
export function drawnOutputTokens(id: string, maxTokens: number, model: LlmModel): number {
  let hash = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  const share = model.outputShareMin + seededRandom(hash)() * (model.outputShareMax - model.outputShareMin);
  return Math.round(share * maxTokens);
}

/**
 * What an LLM call of `body` reserves at arrival (`output_tokens` at its `max_tokens`, as Anthropic counts OTPM) and
 * what it uses once answered, in the units `input_tokens`, `output_tokens` and `tokens` (their sum); a field that
 * is missing or not a count from 0 up counts 0.
 */
export function llmUnits(
  id: string,
  body: string,
  model: LlmModel,
): { readonly reserved: Costs; readonly used: Costs } {
  const fields = jobFieldsOf(body);
  const count = (value: unknown): number =>
    typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
  const [prompt, max] = [count(fields.prompt_tokens), count(fields.max_tokens)];
  const output = drawnOutputTokens(id, max, model);
  return {
    reserved: { input_tokens: prompt, output_tokens: max, tokens: prompt + max },
    used: { input_tokens: prompt, output_tokens: output, tokens: prompt + output },
  };
}

/** What `job`'s call uses once the API has answered it: its estimates, or, against an LLM API of `model`, its drawn usage (see {@link llmUnits}). */
export function jobUsage(job: JobSpec, model: LlmModel | undefined): Costs {
  const id = jobIdOf(job.body);
  return model === undefined || id === undefined ? job.costs : llmUnits(id, job.body, model).used;
}

/** The body of an LLM's answer, shaped as Anthropic's Messages API answers (the `anthropic` usage preset reads it). */
export function llmAnswerBody(id: string, used: Costs): string {
  const usage = {
    input_tokens: used.input_tokens ?? 0,
    output_tokens: used.output_tokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  return JSON.stringify({
    id: `msg-${id}`,
    type: 'message',
    role: 'assistant',
    content: [],
    stop_reason: 'end_turn',
    usage,
  });
}
