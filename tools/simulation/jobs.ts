import { COST_UNIT, type Costs } from '../../lib/domain/quota/tiers';
import { arrivalTimes } from './arrivals';
import type { Scenario } from './scenario';

/** One message of a scenario's backlog. */
export interface JobSpec {
  readonly queue: 'main' | 'fifo' | 'bulk';
  /**
   * Exactly the message body: `{"id", "group"?, "seq"?, "poison"?}` (with `jobs.llm`, also `"prompt_tokens"` and
   * `"max_tokens"`), or text that is not JSON for malformed jobs.
   */
  readonly body: string;
  /**
   * The producer's estimate of each unit, sent as the Number message attribute of its name: `{"cost": n}`, or for an
   * LLM job `input_tokens` (the prompt), `output_tokens` (its `max_tokens`) and `tokens` (their sum).
   */
  readonly costs: Costs;
  readonly groupId?: string;
  /** When it is sent, in ms from the run's start (see `Scenario.jobs.arrivals`). @default 0: in the backlog */
  readonly atMs?: number;
}

/**
 * The scenario's jobs: FIFO jobs spread over groups with rising `seq`, then poison, malformed and standard ones, the
 * last `bulk` of these to the bulk queue. Each job draws its cost (or with `jobs.llm`, its prompt's tokens) from
 * `random`. Under `arrivals`, the main queue's well-formed jobs are sent at their times (`atMs`), the others at once.
 */
export function buildJobs(scenario: Scenario, random: () => number): JobSpec[] {
  const { count, fifo, fifoGroups, poison, malformed, bulk, costMin, costMax, llm, arrivals } = scenario.jobs;
  const firstBulk = count - bulk;
  const firstArrival = fifo + poison + malformed;
  const arriving = arrivals === undefined ? [] : arrivalTimes(firstBulk - firstArrival, arrivals);
  const draw = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const estimate = (fields: Record<string, unknown>): { readonly body: string; readonly costs: Costs } => {
    if (llm === undefined) return { body: JSON.stringify(fields), costs: { [COST_UNIT]: draw(costMin, costMax) } };
    const prompt = draw(llm.promptTokensMin, llm.promptTokensMax);
    return {
      body: JSON.stringify({ ...fields, prompt_tokens: prompt, max_tokens: llm.maxTokens }),
      costs: { input_tokens: prompt, output_tokens: llm.maxTokens, tokens: prompt + llm.maxTokens },
    };
  };
  const jobs: JobSpec[] = [];
  for (let i = 0; i < count; i++) {
    const id = `job-${i + 1}`;
    if (i < fifo) {
      const group = `g-${(i % fifoGroups) + 1}`;
      jobs.push({ queue: 'fifo', ...estimate({ id, group, seq: Math.floor(i / fifoGroups) }), groupId: group });
    } else if (i < fifo + poison) {
      jobs.push({ queue: 'main', ...estimate({ id, poison: true }) });
    } else if (i < fifo + poison + malformed) {
      jobs.push({ queue: 'main', body: `{not json: ${id}`, costs: { [COST_UNIT]: 1 } });
    } else if (i >= firstBulk) {
      jobs.push({ queue: 'bulk', ...estimate({ id }) });
    } else {
      const atMs = arriving[i - firstArrival];
      jobs.push({ queue: 'main', ...estimate({ id }), ...(atMs === undefined || atMs === 0 ? {} : { atMs }) });
    }
  }
  return jobs;
}

/**
 * The Number message attributes a producer sets on `job`: its estimate of each unit the lane's tiers count
 * (`counted`, see `namedUnits`), except a `cost` of 1, which is the default.
 */
export function unitAttributes(job: JobSpec, counted: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    counted.flatMap((unit) => {
      const amount = job.costs[unit];
      return amount === undefined || (unit === COST_UNIT && amount === 1) ? [] : [[unit, String(amount)]];
    }),
  );
}

/** The fields of a body holding a JSON object; none for any other body (an array, a scalar, text that is not JSON). */
export function jobFieldsOf(body: string): Readonly<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The job id of a body, or `undefined` for a malformed body (one the API never sees). */
export function jobIdOf(body: string): string | undefined {
  const { id } = jobFieldsOf(body);
  return typeof id === 'string' ? id : undefined;
}

/** The job ids a worker event carries: its own job's, or each of a batch's. */
export function jobIdsOf(event: unknown): string[] {
  const { body, jobs } = event as { readonly body?: unknown; readonly jobs?: unknown };
  const bodies = Array.isArray(jobs) ? jobs.map((job: unknown) => (job as { readonly body?: unknown }).body) : [body];
  return bodies.flatMap((text) => (typeof text === 'string' ? (jobIdOf(text) ?? []) : []));
}
