import type { ProducerJob } from '../../lib/producer/enqueue';

/** The fields an `enqueue` line may have (see {@link parseJobLine}). */
const LINE_FIELDS: ReadonlySet<string> = new Set([
  'body',
  'cost',
  'estimates',
  'idempotencyKey',
  'groupId',
  'deduplicationId',
]);

/** A line of the input and the job it holds. */
export interface JobLine {
  /** Its line number, from 1. */
  readonly line: number;
  readonly job: ProducerJob;
}

/** A line that holds no job, and why. */
export interface LineFailure {
  readonly line: number;
  readonly reason: string;
}

/**
 * The job on one NDJSON line: a JSON object `{"body": …, "cost"?, "estimates"?, "idempotencyKey"?, "groupId"?,
 * "deduplicationId"?}`, with `estimates` the job's estimate per named unit (`{"input_tokens": 812, "output_tokens": 1024}`).
 * Only its shape is checked here; the values are checked by `enqueueMany` as the service will check them.
 * @throws Error saying what is wrong with the line.
 */
export function parseJobLine(text: string): ProducerJob {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error('must be a JSON object such as {"body": {…}}');
  const unknown = Object.keys(value).filter((key) => !LINE_FIELDS.has(key));
  if (unknown.length > 0)
    throw new Error(
      `unknown field${unknown.length === 1 ? '' : 's'} ${unknown.map((k) => `'${k}'`).join(', ')}; a line has body, cost, estimates, idempotencyKey, groupId and deduplicationId`,
    );
  if (!('body' in value)) throw new Error("has no 'body'");
  return value as ProducerJob;
}

/** Splits NDJSON text into the jobs of its lines and the lines that hold none; blank lines are skipped. */
export function parseJobLines(text: string): {
  readonly jobs: readonly JobLine[];
  readonly failures: readonly LineFailure[];
} {
  const jobs: JobLine[] = [];
  const failures: LineFailure[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() === '') return;
    try {
      jobs.push({ line: i + 1, job: parseJobLine(raw) });
    } catch (error) {
      failures.push({ line: i + 1, reason: (error as Error).message });
    }
  });
  return { jobs, failures };
}
