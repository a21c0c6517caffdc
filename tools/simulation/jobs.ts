import type { Scenario } from './scenario';

/** One message of a scenario's backlog. */
export interface JobSpec {
  readonly queue: 'main' | 'fifo';
  /** Exactly the message body: `{"id", "group"?, "seq"?, "poison"?}`, or text that is not JSON for malformed jobs. */
  readonly body: string;
  readonly cost: number;
  readonly groupId?: string;
}

/** The scenario's backlog: FIFO jobs spread over groups with rising `seq`, then standard, poison and malformed ones. */
export function buildJobs(scenario: Scenario, random: () => number): JobSpec[] {
  const { count, fifo, fifoGroups, poison, malformed, costMin, costMax } = scenario.jobs;
  const cost = () => costMin + Math.floor(random() * (costMax - costMin + 1));
  const jobs: JobSpec[] = [];
  for (let i = 0; i < count; i++) {
    const id = `job-${i + 1}`;
    if (i < fifo) {
      const group = `g-${(i % fifoGroups) + 1}`;
      jobs.push({ queue: 'fifo', body: JSON.stringify({ id, group, seq: Math.floor(i / fifoGroups) }), cost: cost(), groupId: group });
    } else if (i < fifo + poison) {
      jobs.push({ queue: 'main', body: JSON.stringify({ id, poison: true }), cost: cost() });
    } else if (i < fifo + poison + malformed) {
      jobs.push({ queue: 'main', body: `{not json: ${id}`, cost: 1 });
    } else {
      jobs.push({ queue: 'main', body: JSON.stringify({ id }), cost: cost() });
    }
  }
  return jobs;
}

/** The fields of a body holding a JSON object; none for any other body (an array, a scalar, text that is not JSON). */
export function jobFieldsOf(body: string): Readonly<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The job id of a body, or `undefined` for a malformed body (one the API never sees). */
export function jobIdOf(body: string): string | undefined {
  const { id } = jobFieldsOf(body);
  return typeof id === 'string' ? id : undefined;
}
