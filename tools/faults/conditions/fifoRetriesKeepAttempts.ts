import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import { ATTRIBUTES } from '../../../lib/ports/QueueReceiver';
import { LANE_START, LaneWorld, laneConfig } from './laneRuns';
import type { ConditionCheck, ConditionScenario } from './types';

/** Jobs in the one FIFO group, and the failures each answers before it succeeds (its attempts are one more). */
const JOBS = 12;
const FAILURES = 2;

/** An API that answers each job's first {@link FAILURES} calls with 503, the next with 200, and the jobs answered 200. */
function failTwiceThenSucceed(): { readonly answer: (body: string) => ApiResult; readonly succeeded: Set<string> } {
  const seen = new Map<string, number>();
  const succeeded = new Set<string>();
  const answer = (body: string): ApiResult => {
    const n = (seen.get(body) ?? 0) + 1;
    seen.set(body, n);
    if (n <= FAILURES) return { kind: 'response', status: 503, headers: {} };
    succeeded.add(body);
    return { kind: 'response', status: 200, headers: {} };
  };
  return { answer, succeeded };
}

/**
 * Condition 7: twelve jobs of one FIFO group, each failing twice before it succeeds, under 3 attempts, run by the
 * orchestrator and the workers. Each retry of message k hands back the later messages of its group that came in the
 * same receive, and the 503s open the circuit now and then: every such receive must cost no attempt.
 */
export const fifoRetriesKeepAttempts: ConditionScenario = {
  name: 'fifo-retries-keep-attempts',
  condition: 7,
  injects: `${JOBS} FIFO jobs of one group, each answered 503 twice before a 200, under maxAttempts 3`,
  breaks:
    'a FIFO job is given up (or redriven by SQS without a reason) before its third call: hand-backs and the receives the circuit costs count as attempts',
  async run(): Promise<ConditionCheck> {
    const { answer, succeeded } = failTwiceThenSucceed();
    const world = new LaneWorld({ latencyMs: 50, answer });
    for (let i = 0; i < JOBS; i++)
      await world.queues.send('fifo', {
        body: JSON.stringify({ id: `f-${i}` }),
        attributes: {},
        groupId: 'g',
        deduplicationId: `f-${i}`,
      });
    const config = laneConfig({
      quotas: [{ limit: 5, per: 'second' }],
      retry: { maxAttempts: FAILURES + 1, baseDelayMs: 1_000, maxDelayMs: 2_000 },
    });
    await world.run(config, { deadline: LANE_START + 600_000 });
    const letters = world.queues.messages('fifo-dlq');
    const why = letters.map((m) => m.attributes[ATTRIBUTES.reason]?.value ?? '(no reason: redriven by SQS)');
    return {
      held: succeeded.size === JOBS && letters.length === 0,
      detail: `${succeeded.size} of ${JOBS} succeeded after ${world.calls.length} calls; ${letters.length} dead-lettered${why.length === 0 ? '' : `: ${[...new Set(why)].join('; ')}`}`,
    };
  },
};
