import { readFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { systemClock } from '../../lib/adapters/systemClock';
import { enqueueMany, type EnqueueProgress } from '../../lib/producer/enqueue';
import type { Clock } from '../../lib/ports/Clock';
import { MAX_OPERATOR_NAME } from '../../lib/services/operator/operatorName';
import { ProgressLine, progressBar } from '../local/progressBar';
import { DEFAULT_STACK_FILE } from '../local/stackFile';
import type { OnTargets } from './commandContext';
import { addDeadLetterCommands } from './dlqCommands';
import { addJobCommand } from './jobCommand';
import { addLimitsCommands } from './limitsCommand';
import { EXIT, expectedFailure, OpsError } from './errors';
import { formatControl, formatStatus } from './format';
import { controlLane, readStatus, type ControlAction } from './laneOps';
import { parseJobLines, type LineFailure } from './ndjson';
import { localTargets, stageTargets, type OpsTarget } from './target';

/** Where the operator CLI reads and writes: the process's streams, or a test's. */
export interface OpsIo {
  readonly stdout: { write(text: string): unknown };
  /** Messages, errors and the progress bar (redrawn in place when `isTTY`). */
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
  /** What `enqueue` reads when it is given no file. */
  readonly stdin: AsyncIterable<string | Buffer>;
  /** @default the wall clock */
  readonly clock?: Clock;
  /** The command's name in its usage: `ops` under `npm run ops`, the bin's name when installed. @default 'ops' */
  readonly name?: string;
}

/** The global options: which target. */
interface TargetOptions {
  readonly stage?: string;
  readonly region?: string;
  readonly profile?: string;
  readonly service: string;
  /** @default every lane of the target */
  readonly lane?: string;
  readonly local?: string;
}

/** The commands, for {@link normalizeArgv}. */
const COMMANDS: ReadonlySet<string> = new Set([
  'status',
  'job',
  'pause',
  'resume',
  'circuit',
  'dlq',
  'limits',
  'enqueue',
  'help',
]);

/**
 * `argv` with a bare `--local` that precedes a command given its default file: `--local [file]` takes an optional
 * value, and `ops --local status` must not read `status` as the file.
 */
export function normalizeArgv(argv: readonly string[]): string[] {
  return argv.map((arg, i) =>
    arg === '--local' && COMMANDS.has(argv[i + 1] ?? '') ? `--local=${DEFAULT_STACK_FILE}` : arg,
  );
}

/** An operator's name for `--by`: 1 to {@link MAX_OPERATOR_NAME} characters, trimmed. */
function operatorName(text: string): string {
  const name = text.trim();
  if (name === '' || name.length > MAX_OPERATOR_NAME)
    throw new InvalidArgumentError(`must be 1 to ${MAX_OPERATOR_NAME} characters`);
  return name;
}

/** The operator's name stored with a pause or a forced circuit: `user@host`, cut to what the circuit item keeps. */
function defaultOperator(): string {
  let user = 'operator';
  try {
    user = userInfo().username || user;
  } catch {
    // No user entry (some containers): the generic name stands.
  }
  return `${user}@${hostname()}`.slice(0, MAX_OPERATOR_NAME);
}

const DESCRIPTION =
  'Operate Quota Orchestrator: a deployed stage (--stage, with --region and --profile) or the local stack that `npm start -- --keep` keeps up (--local). Every command prints a readable form, or one JSON document with --json.';

const EXIT_CODES = `
Exit codes: 0 done; 1 done, but some items failed (an enqueue line, a dead letter not redriven); 2 the command could
not run (bad arguments; a stage, queue or local stack that is not there; no credentials).`;

/**
 * Runs the operator CLI (`npm run ops -- …`) on `argv` (the arguments after the script's name) with `io` for its
 * streams, in-process: the CLI entry point and the tests both call it.
 * @returns the exit code (see {@link EXIT}); it never throws for an expected failure, which it reports on stderr.
 */
export async function runOps(argv: readonly string[], io: OpsIo): Promise<number> {
  const clock = io.clock ?? systemClock;
  let code: number = EXIT.ok;
  let targetLabel: string | undefined;
  const print = (text: string) => io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  const json = (value: unknown) => print(JSON.stringify(value, null, 2));

  /**
   * Resolves the targets from the global options (the lane of `--lane`, else every lane), runs `work` on each and
   * closes their clients. One lane's output is the command's; several lanes' are each headed by the lane, and their
   * JSON documents become one, `{"lanes": {"<lane>": …}}`.
   */
  const onTargets: OnTargets = async (command, work, options = {}) => {
    const global = command.optsWithGlobals<TargetOptions>();
    if ((global.stage === undefined) === (global.local === undefined)) {
      throw new OpsError(
        'say which target: --stage NAME (a deployed stage, with --region and --profile as needed) or --local [FILE] (the stack `npm start -- --keep` keeps up)',
      );
    }
    const targets =
      global.local !== undefined
        ? localTargets(global.local, global.lane)
        : await stageTargets({
            stage: global.stage ?? '',
            service: global.service,
            ...(global.lane === undefined ? {} : { lane: global.lane }),
            ...(global.region === undefined ? {} : { region: global.region }),
            ...(global.profile === undefined ? {} : { profile: global.profile }),
          });
    try {
      targetLabel = targets[0]?.label;
      if (targets.length > 1 && options.oneLane !== undefined)
        throw new OpsError(
          `${options.oneLane} works on one lane: pass --lane (${targets[0]?.label ?? 'the target'} has lanes ${targets.map((t: OpsTarget) => `'${t.lane}'`).join(', ')})`,
        );
      const [only] = targets;
      if (targets.length === 1 && only !== undefined) return await work(only, { print, json });
      const documents: Record<string, unknown> = {};
      for (const target of targets)
        await work(target, {
          print: (text) => print(`lane ${target.lane}:\n${text}\n`),
          json: (value) => (documents[target.lane] = value),
        });
      if (Object.keys(documents).length > 0) json({ lanes: documents });
    } finally {
      for (const target of targets) target.destroy();
    }
  };

  const program = new Command(io.name ?? 'ops')
    .description(DESCRIPTION)
    .exitOverride()
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text) })
    .showHelpAfterError('(run with --help for usage)')
    .option('--stage <name>', 'a deployed stage: its resources are named as serverless.yml names them')
    .option('--region <region>', "the stage's region (default: the SDK's, from AWS_REGION or the profile)")
    .option('--profile <name>', "the AWS profile to use (default: the SDK's, from AWS_PROFILE)")
    .option('--service <name>', "serverless.yml's service name", 'quota-orchestrator')
    .option('--lane <lane>', 'the lane (default: every lane; enqueue needs one when there are several)')
    .addOption(
      new Option('--local [file]', 'the local stack kept up by `npm start -- --keep`, from the file it wrote').preset(
        DEFAULT_STACK_FILE,
      ),
    )
    .addHelpText('after', EXIT_CODES);

  program
    .command('status')
    .description(
      "each tier's usage against its limit, the circuit and its recent transitions, whether the lane is paused, the queues' and dead-letter queues' depths, and the lease holder",
    )
    .option('--json', 'print one JSON document')
    .action(async (options: { json?: boolean }, command: Command) =>
      onTargets(command, async (target, out) => {
        const status = await readStatus(target, clock);
        if (options.json === true) out.json(status);
        else out.print(formatStatus(status));
      }),
    );

  const control = (name: string, description: string, action: ControlAction) =>
    program
      .command(name)
      .description(description)
      .option('--by <name>', 'who does it, kept with the circuit (default: user@host)', operatorName)
      .option('--json', 'print one JSON document')
      .action(async (options: { json?: boolean; by?: string }, command: Command) =>
        onTargets(command, async (target, out) => {
          const result = await controlLane(target, clock, action, options.by ?? defaultOperator());
          if (options.json === true) out.json(result);
          else out.print(formatControl(result));
        }),
      );
  control(
    'pause',
    'pause the lane: the orchestrator dispatches nothing (no job, no health check) from its next circuit read, within a second; queued jobs wait',
    'pause',
  );
  control('resume', 'resume a paused lane: dispatch restarts within a second, through the slow start', 'resume');

  program
    .command('circuit')
    .description(
      'force the circuit open (nothing is dispatched and no health check goes until an operator closes it) or close it',
    )
    .addArgument(new Argument('<state>', 'open or close').choices(['open', 'close']))
    .option('--by <name>', 'who does it, kept with the circuit (default: user@host)', operatorName)
    .option('--json', 'print one JSON document')
    .action(async (state: 'open' | 'close', options: { json?: boolean; by?: string }, command: Command) =>
      onTargets(command, async (target, out) => {
        const result = await controlLane(target, clock, state, options.by ?? defaultOperator());
        if (options.json === true) out.json(result);
        else out.print(formatControl(result));
      }),
    );

  addDeadLetterCommands(program, { onTargets, clock, partial: () => (code = EXIT.partial) });
  addJobCommand(program, { onTargets, clock, partial: () => (code = EXIT.partial) });
  addLimitsCommands(program, {
    onTargets,
    clock,
    partial: () => (code = EXIT.partial),
    operatorName,
    defaultOperator,
  });

  program
    .command('enqueue')
    .description(
      'send jobs, one JSON object a line: {"body": …, "cost"?, "estimates"?: {"<unit>": n}, "idempotencyKey"?, "groupId"?, "deduplicationId"?}; a bad line is reported with its number and skipped',
    )
    .argument('[file]', 'the NDJSON file (default: stdin)')
    .addOption(
      new Option('--fifo', 'to the FIFO queue (every line needs a groupId) instead of the main queue').conflicts(
        'bulk',
      ),
    )
    .option('--bulk', "to the bulk queue, whose jobs wait for the main queue's but for their share")
    .option('--json', 'print one JSON document')
    .action(
      async (file: string | undefined, options: { fifo?: boolean; bulk?: boolean; json?: boolean }, command: Command) =>
        onTargets(
          command,
          async (target, out) => {
            const queue = options.fifo === true ? 'fifo' : options.bulk === true ? 'bulk' : 'main';
            const text = file === undefined ? await readAll(io.stdin) : await readInput(file);
            const { jobs, failures: badLines } = parseJobLines(text);
            const total = jobs.length + badLines.length;
            const progress = new ProgressLine(io.stderr);
            const show = ({ sent, failed }: EnqueueProgress, force = false) =>
              progress.update(
                `${progressBar(sent + failed + badLines.length, total)} ${sent + failed + badLines.length}/${total} | sent ${sent} failed ${failed + badLines.length}`,
                force,
              );
            const { sent, failed } = await enqueueMany(
              jobs.map((j) => j.job),
              {
                sqs: target.clients.sqs,
                queueUrl: target.queueUrls[queue],
                onProgress: (p) => show(p),
              },
            );
            show({ sent, failed: failed.length }, true);
            progress.done();
            const failures: LineFailure[] = [
              ...badLines,
              ...failed.map((f) => ({ line: jobs[f.index]?.line ?? 0, reason: f.reason })),
            ].sort((a, b) => a.line - b.line);
            if (options.json === true) out.json({ queue, sent, failed: failures });
            else
              out.print(
                [
                  ...failures.map((f) => `line ${f.line}: ${f.reason}`),
                  `${sent} job${sent === 1 ? '' : 's'} sent to the ${queue} queue, ${failures.length} failed`,
                ].join('\n'),
              );
            if (failures.length > 0) code = EXIT.partial;
          },
          { oneLane: 'enqueue' },
        ),
    );

  try {
    await program.parseAsync(normalizeArgv(argv), { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.failed;
    if (error instanceof OpsError) {
      io.stderr.write(`ops: ${error.message}\n`);
      return EXIT.failed;
    }
    const expected = expectedFailure(error, targetLabel);
    if (expected !== undefined) {
      io.stderr.write(`ops: ${expected}\n`);
      return EXIT.failed;
    }
    io.stderr.write(
      `ops: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return EXIT.failed;
  }
}

/** The text of a file. @throws OpsError when it cannot be read. */
async function readInput(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new OpsError(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
}

/** The whole of a stream, as UTF-8 text. */
async function readAll(stream: AsyncIterable<string | Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
