import { InvalidArgumentError, type Command } from 'commander';
import type { CommandContext } from './commandContext';
import { ago, isoSecond } from './format';
import { NO_RESULT_DESTINATION } from '../../lib/ports/ResultHandler';
import type { JobRecord } from '../../lib/services/operator/jobRecord';
import { readJob, type JobStatus, type LaneHold } from './jobStatus';

/** How many dead letters `ops job` looks at, at most, unless told otherwise. */
const DEFAULT_MAX_LETTERS = 1_000;

/** A whole number of at least 1, for `--max-letters`. */
function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError(`must be a whole number of at least 1; got '${text}'`);
  return value;
}

/** What holds the lane back, for people. */
function holdLines(hold: LaneHold, at: number): string[] {
  const pace =
    hold.perSecond === undefined
      ? `${hold.queued} job${hold.queued === 1 ? '' : 's'} queued`
      : `${hold.queued} job${hold.queued === 1 ? '' : 's'} queued, about ${hold.backlogSeconds ?? 0} s at ${Number(hold.perSecond.toFixed(3))}/s`;
  return [
    hold.reasons.length === 0
      ? 'The lane dispatches: nothing holds it back.'
      : `The lane is held: ${hold.reasons.join('; ')}${hold.until === undefined ? '' : `, until ${isoSecond(hold.until)} (${ago(hold.until, at)})`}.`,
    `${pace} (SQS cannot say where in the queue one job is: it goes within that, once nothing holds the lane).`,
  ];
}

/** A succeeded job's record read at `at`, for people: when, what its call counted, and where its result went. */
function successLines(record: JobRecord & { state: 'succeeded' }, at: number): string[] {
  const { usage, result } = record;
  const units = Object.entries(usage ?? {}).map(([unit, n]) => `, ${n} ${unit}`);
  return [
    `succeeded at ${isoSecond(record.at)} (${ago(record.at, at)}), dispatch ${record.dispatchId}`,
    ...(usage === undefined && result === undefined ? [] : [`used: 1 request${units.join('')}`]),
    ...(result === undefined
      ? []
      : [
          result === NO_RESULT_DESTINATION
            ? 'result: dropped (the lane has no result destination)'
            : `result: handed to ${result} (a result it did not take is logged as result-undelivered)`,
        ]),
  ];
}

/** A job's status, for people. */
export function formatJob(status: JobStatus): string {
  const { record, at } = status;
  const named = status.key === status.job ? `Job '${status.job}'` : `Job '${status.job}' (key '${status.key}')`;
  const attempts = 'attemptsSpent' in record ? `; ${record.attemptsSpent} attempt(s) spent` : '';
  const lines = [`${named} on lane '${status.lane}' of ${status.target}, at ${isoSecond(at)}:`];
  switch (status.state) {
    case 'succeeded':
      if (record.state === 'succeeded') lines.push(...successLines(record, at));
      break;
    case 'in-flight':
      if (record.state === 'in-flight')
        lines.push(
          `in flight: a worker is calling the API (dispatch ${record.dispatchId}, until ${isoSecond(record.until)} at the latest${attempts})`,
        );
      break;
    case 'retrying':
      if (record.state === 'retrying')
        lines.push(
          `waiting to be dispatched again: a call failed at ${isoSecond(record.at)} (${ago(record.at, at)})${attempts}`,
        );
      break;
    case 'dead-lettered': {
      const letter = status.deadLetter;
      const reason = letter?.reason ?? (record.state === 'dead-lettered' ? record.reason : undefined);
      lines.push(
        `dead-lettered${letter === undefined ? '' : ` in ${letter.queue} at ${isoSecond(letter.deadLetteredAt)} (${ago(letter.deadLetteredAt, at)}), message ${letter.messageId}`}${attempts}`,
        `reason: ${reason ?? 'none recorded (SQS moved it after maxReceiveCount receives)'}`,
      );
      if (letter === undefined)
        lines.push('its letter was not found in the dead-letter queues (deleted, purged, or redriven)');
      break;
    }
    case 'queued':
      lines.push('queued, or unknown: nothing is recorded of it (never dispatched yet, or its record has expired)');
  }
  if (status.waiting !== undefined) lines.push(...holdLines(status.waiting, at));
  return lines.join('\n');
}

/** `ops job`: what became of one job. */
export function addJobCommand(program: Command, { onTargets, clock }: CommandContext): void {
  program
    .command('job')
    .description(
      'what became of one job, by its idempotency key or its message id: succeeded (when, what it used, where its result went), in flight, waiting to be dispatched again, dead-lettered (where and why), or queued; and for a job that waits, what holds the lane back and how long its backlog takes',
    )
    .argument('<job>', "the job's idempotency key, or its message id")
    .option(
      '--max-letters <n>',
      `at most this many dead letters looked at (default: ${DEFAULT_MAX_LETTERS})`,
      positiveInteger,
    )
    .option('--json', 'print one JSON document')
    .action(async (job: string, options: { maxLetters?: number; json?: boolean }, command: Command) =>
      onTargets(
        command,
        async (target, out) => {
          const status = await readJob(target, clock, job, options.maxLetters ?? DEFAULT_MAX_LETTERS);
          if (options.json === true) out.json(status);
          else out.print(formatJob(status));
        },
        { oneLane: 'job' },
      ),
    );
}
