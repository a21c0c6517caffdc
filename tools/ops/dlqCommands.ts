import { InvalidArgumentError, Option, type Command } from 'commander';
import { READ_ORDER, type SourceQueue } from '../../lib/ports/QueueReceiver';
import type { ChosenLetters } from './chosenDeadLetters';
import type { CommandContext, Out } from './commandContext';
import { filters, parseAge, passes, REASON_CLASSES, type DeadLetterFilter, type ReasonClass } from './deadLetterFilter';
import { deleteDeadLetters, purgeDeadLetters } from './deadLetterRemoval';
import { deadLetterQueuesOf, peekDeadLetters, type DeadLetter } from './deadLetters';
import { OpsError } from './errors';
import { formatDeadLetter, formatDeadLetters, formatDelete, formatPurge, formatRedrive } from './format';
import { adaptersOf } from './laneOps';
import { redrive } from './redrive';

/** A whole number of at least 1, for `--max`. */
function positiveInteger(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError(`must be a whole number of at least 1; got '${text}'`);
  return value;
}

/** An age for `--older-than` and `--newer-than` (see `parseAge`). */
function age(text: string): number {
  const ms = parseAge(text);
  if (ms === undefined)
    throw new InvalidArgumentError(`must be a whole number and a unit, s, m, h or d (90s, 15m, 2h, 7d); got '${text}'`);
  return ms;
}

/** `--queue`: one dead-letter queue, by its source queue. */
const queueOption = () =>
  new Option('--queue <queue>', 'only the dead-letter queue of this source queue (default: all four)').choices(
    READ_ORDER,
  );

/** The options of the commands that choose dead letters by queue, reason and age. */
interface FilterOptions {
  readonly queue?: SourceQueue;
  readonly reason?: ReasonClass[];
  readonly olderThan?: number;
  readonly newerThan?: number;
}

/** Adds `--queue`, `--reason`, `--older-than` and `--newer-than` to `command`. */
function withFilters(command: Command): Command {
  return command
    .addOption(queueOption())
    .addOption(
      new Option(
        '--reason <class...>',
        'only letters whose reason is of these classes (max-receives: SQS moved it after maxReceiveCount receives, it has no reason)',
      ).choices(REASON_CLASSES),
    )
    .option('--older-than <age>', 'only letters dead-lettered at least this long ago (90s, 15m, 2h, 7d)', age)
    .option('--newer-than <age>', 'only letters dead-lettered less than this long ago', age);
}

/** The filter `options` ask for. */
function filterOf(options: FilterOptions): DeadLetterFilter {
  return {
    ...(options.reason === undefined ? {} : { reasons: options.reason }),
    ...(options.olderThan === undefined ? {} : { olderThanMs: options.olderThan }),
    ...(options.newerThan === undefined ? {} : { newerThanMs: options.newerThan }),
  };
}

/** The letters `options` choose, at most `max`, as {@link ChosenLetters} (a filter is applied at `now`). */
function chosenBy(options: FilterOptions & { readonly id?: string[] }, max: number, now: number): ChosenLetters {
  const filter = filterOf(options);
  return {
    queues: deadLetterQueuesOf(options.queue === undefined ? undefined : [options.queue]),
    max,
    ...(options.id === undefined ? {} : { ids: options.id }),
    ...(filters(filter) ? { chosen: (letter: DeadLetter) => passes(letter, filter, now) } : {}),
  };
}

/** `--id`, repeatable. */
const idOption = (what: string) =>
  new Option('--id <messageId>', `${what} (repeatable)`).argParser((value: string, previous: string[] = []) => [
    ...previous,
    value,
  ]);

/** A dead letter as `--json` prints it: without its receipt handle, which is of no use once the peek has ended. */
function shownLetter(letter: DeadLetter): Omit<DeadLetter, 'receiptHandle'> {
  return Object.fromEntries(Object.entries(letter).filter(([key]) => key !== 'receiptHandle')) as Omit<
    DeadLetter,
    'receiptHandle'
  >;
}

/**
 * Prints how the letters a command took went (`text`, or with `--json` `{results, missing}`), and the ids asked for
 * that were not found.
 * @returns whether every letter asked for was found and came to `done`.
 */
function reportTaken<R extends { readonly messageId: string; readonly outcome: string }>(
  out: Out,
  options: { readonly id?: readonly string[]; readonly json?: boolean },
  results: readonly R[],
  text: string,
  done: R['outcome'],
): boolean {
  const missing = (options.id ?? []).filter((id) => !results.some((r) => r.messageId === id));
  if (options.json === true) out.json({ results, missing });
  else out.print(`${text}${missing.length === 0 ? '' : `\nnot found: ${missing.join(', ')}`}`);
  return missing.length === 0 && results.every((r) => r.outcome === done);
}

/** Adds `dlq list`, `show`, `redrive`, `delete` and `purge` to `program`. */
export function addDeadLetterCommands(program: Command, { onTargets, clock, partial }: CommandContext): void {
  const dlq = program.command('dlq').description('list, show, redrive, delete and purge dead letters');
  withFilters(
    dlq
      .command('list')
      .description(
        "each dead letter's id, source queue, reason, attempt and when it was dead-lettered. It peeks: each message is received (hidden for 30 s) and made visible again at once, so each peek counts one receive (with a filter, of every message read to find those that pass)",
      ),
  )
    .option('--max <n>', 'at most this many', positiveInteger, 100)
    .option('--json', 'print one JSON document')
    .action(async (options: FilterOptions & { max: number; json?: boolean }, command: Command) =>
      onTargets(command, async (target, out) => {
        const letters = await peekDeadLetters(adaptersOf(target), chosenBy(options, options.max, clock.now()));
        if (options.json === true) out.json(letters.map(shownLetter));
        else out.print(formatDeadLetters(letters, clock.now()));
      }),
    );
  dlq
    .command('show')
    .description('one dead letter with its body and every attribute (a peek, as `dlq list`: it counts one receive)')
    .argument('<messageId>', 'its id, as `dlq list` shows it')
    .addOption(queueOption())
    .option('--json', 'print one JSON document')
    .action(async (messageId: string, options: { queue?: SourceQueue; json?: boolean }, command: Command) =>
      onTargets(
        command,
        async (target, out) => {
          const letters = await peekDeadLetters(adaptersOf(target), {
            queues: deadLetterQueuesOf(options.queue === undefined ? undefined : [options.queue]),
            max: Number.MAX_SAFE_INTEGER,
            until: (letter) => letter.messageId === messageId,
          });
          const letter = letters.find((l) => l.messageId === messageId);
          if (letter === undefined)
            throw new OpsError(
              `no dead letter ${messageId} on ${target.label} (a message of a FIFO group shows once those before it are gone)`,
            );
          if (options.json === true) out.json(shownLetter(letter));
          else out.print(formatDeadLetter(letter, clock.now()));
        },
        { oneLane: 'dlq show' },
      ),
    );
  withFilters(
    dlq
      .command('redrive')
      .description(
        "send dead letters back to their source queues as new messages: the body and the producer's attributes (cost and the other estimates, idempotencyKey, FIFO group, a fresh deduplication id), without the attempt count and the dead-letter attributes, so each starts its attempts afresh; each is deleted from its dead-letter queue only once sent",
      ),
  )
    .addOption(idOption('only this one'))
    .option('--max <n>', 'at most this many (default: all)', positiveInteger)
    .option('--json', 'print one JSON document')
    .action(async (options: FilterOptions & { id?: string[]; max?: number; json?: boolean }, command: Command) =>
      onTargets(
        command,
        async (target, out) => {
          const adapters = adaptersOf(target);
          const results = await redrive(
            { ...adapters, idempotency: adapters.stores.idempotency, clock },
            chosenBy(options, options.max ?? Number.MAX_SAFE_INTEGER, clock.now()),
          );
          if (!reportTaken(out, options, results, formatRedrive(results), 'redriven')) partial();
        },
        options.id === undefined ? {} : { oneLane: 'dlq redrive --id' },
      ),
    );
  withFilters(
    dlq
      .command('delete')
      .description(
        'delete dead letters for good, chosen by --id or by a filter (one at least): their jobs end there, and a message of the same idempotency key sent again within its TTL is not called',
      ),
  )
    .addOption(idOption('this one'))
    .option('--max <n>', 'at most this many (default: all that are chosen)', positiveInteger)
    .option('--json', 'print one JSON document')
    .action(async (options: FilterOptions & { id?: string[]; max?: number; json?: boolean }, command: Command) => {
      if (options.id === undefined && !filters(filterOf(options)))
        throw new OpsError(
          'dlq delete needs --id or a filter (--reason, --older-than, --newer-than); `dlq purge --yes` empties whole queues',
        );
      return onTargets(
        command,
        async (target, out) => {
          const results = await deleteDeadLetters(
            adaptersOf(target),
            chosenBy(options, options.max ?? Number.MAX_SAFE_INTEGER, clock.now()),
          );
          if (!reportTaken(out, options, results, formatDelete(results), 'deleted')) partial();
        },
        options.id === undefined ? {} : { oneLane: 'dlq delete --id' },
      );
    });
  dlq
    .command('purge')
    .description(
      "empty dead-letter queues whole with SQS's PurgeQueue (every message, without reading them; SQS finishes within a minute and refuses another purge of a queue within a minute)",
    )
    .addOption(queueOption())
    .option('--yes', 'do it: without it, nothing is purged')
    .option('--json', 'print one JSON document')
    .action(async (options: { queue?: SourceQueue; yes?: boolean; json?: boolean }, command: Command) => {
      if (options.yes !== true)
        throw new OpsError('dlq purge deletes every message of the dead-letter queues for good: pass --yes to do it');
      return onTargets(command, async (target, out) => {
        const results = await purgeDeadLetters(
          adaptersOf(target),
          deadLetterQueuesOf(options.queue === undefined ? undefined : [options.queue]),
        );
        if (options.json === true) out.json({ results });
        else out.print(formatPurge(results));
        if (results.some((r) => r.outcome !== 'purged')) partial();
      });
    });
}
