import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import defaultScenario from '../simulation/scenarios/default.json';
import { CONFIG_KEYS, parseScenario } from '../simulation/scenario';
import { formatReport } from '../simulation/report';
import { peakCallsInFlight } from '../simulation/callsInFlight';
import { ConfigError } from '../../lib/errors';
import {
  runLocal,
  type KeepOptions,
  type LocalRunResult,
  type Progress,
  type ProviderCheck,
  type TimelineRow,
} from '../local/localRun';
import { ProgressLine, progressBar } from '../local/progressBar';
import { DEFAULT_STACK_FILE, removeStackFile, writeStackFile } from '../local/stackFile';
import { packagedTemplate, PackagingError } from '../local/packageService';
import { lanesSettings, runLocalLanes } from '../local/lanesRun';
import { hasLanes, parseLanesScenario, type LanesScenario } from '../simulation/lanesScenario';

const USAGE = `Usage: npm start -- [--scenario FILE] [--json] [--timeline FILE] [--api-url URL --health-url URL] [--keep [--stack-file FILE]]
  Runs Quota Orchestrator on this machine with no AWS account: packages serverless.yml, creates its table and
  queues on DynamoDB and SQS emulators, runs the real handlers behind a local Lambda endpoint on the schedule,
  and sends the workers' calls to a simulated API that enforces the quotas.
  --scenario FILE  a JSON scenario (default: the embedded one, tools/simulation/scenarios/default.json);
                   its quotas, circuit, retry, pacing and orchestrator settings replace serverless.yml's for this run;
                   one with \`lanes\` (tools/simulation/scenarios/lanes.json) runs those lanes, each with its own API
  --json           print the report as one JSON line, last
  --timeline FILE  where to write the per-second timeline as CSV (default: out/timeline.csv)
  --api-url URL    send the workers' job calls (POST, JSON body) to this API instead of the simulated one;
                   the run still counts calls, 429s, duplicates and FIFO order from the traffic
  --health-url URL the external API's health check (GET), required with --api-url
  --keep           once the run has reported, keep the stack up (emulators, functions, API; the schedule keeps
                   firing) for \`npm run ops -- --local\`, until Ctrl-C; writes where it is to the stack file
  --stack-file FILE where --keep writes the stack's endpoints, names and environment (default: ${DEFAULT_STACK_FILE})`;

/** One status line: a bar of ended jobs, the counts by state and the circuit. */
function progressLine(p: Progress): string {
  const ended = p.succeeded + p.deadLettered;
  return `${progressBar(ended, p.jobs)} ${ended}/${p.jobs} | ok ${p.succeeded} dlq ${p.deadLettered} queued ${p.queued} in-flight ${p.inFlight} | circuit ${p.circuit} | ${p.elapsedSeconds.toFixed(0)} s`;
}

function toCsv(rows: readonly TimelineRow[]): string {
  const header = 'second,calls,accepted,rejected,failed,circuit,queued,inFlight';
  return (
    [
      header,
      ...rows.map((r) =>
        [r.second, r.calls, r.accepted, r.rejected, r.failed, r.circuit, r.queued, r.inFlight].join(','),
      ),
    ].join('\n') + '\n'
  );
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      json: { type: 'boolean', default: false },
      timeline: { type: 'string', default: 'out/timeline.csv' },
      'api-url': { type: 'string' },
      'health-url': { type: 'string' },
      keep: { type: 'boolean', default: false },
      'stack-file': { type: 'string', default: DEFAULT_STACK_FILE },
      help: { type: 'boolean', default: false },
    },
  });
  const apiUrl = values['api-url'];
  const healthUrl = values['health-url'];
  if ((apiUrl === undefined) !== (healthUrl === undefined))
    throw new ConfigError('--api-url', 'and --health-url go together: give both or neither');
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const raw = (
    values.scenario === undefined ? defaultScenario : JSON.parse(readFileSync(values.scenario, 'utf8'))
  ) as Record<string, unknown>;
  if (hasLanes(raw)) {
    if (apiUrl !== undefined || values.keep)
      throw new ConfigError('--scenario', 'of several lanes runs on simulated APIs, without --api-url or --keep');
    return runLanes(parseLanesScenario(raw), raw, values.json);
  }
  const scenario = parseScenario(raw);
  process.stderr.write(`Scenario: ${scenario.name}\nPackaging serverless.yml (osls package)…\n`);
  const template = await packagedTemplate();
  const progress = new ProgressLine(process.stderr);
  const timelinePath = resolve(values.timeline);
  const { maxInFlight } = scenario.config;
  const finish = ({ report, timeline, calls, provider }: LocalRunResult): void => {
    progress.done();
    mkdirSync(dirname(timelinePath), { recursive: true });
    writeFileSync(timelinePath, toCsv(timeline));
    const inFlight =
      maxInFlight === undefined
        ? ''
        : `calls in progress at the API: at most ${peakCallsInFlight(calls)} at once (maxInFlight ${maxInFlight})\n`;
    const headers = provider === undefined ? '' : `${providerLine(provider)}\n`;
    process.stderr.write(`${formatReport(report)}\n${inFlight}${headers}timeline: ${timelinePath}\n`);
    if (values.json) console.log(JSON.stringify(report));
  };
  const stackFile = values['stack-file'];
  const result = await runLocal({
    scenario,
    overrides: CONFIG_KEYS.filter((key) => key in raw),
    template,
    ...(apiUrl === undefined || healthUrl === undefined ? {} : { externalApi: { apiUrl, healthUrl } }),
    onProgress: (p) => progress.update(progressLine(p)),
    ...(values.keep ? { keep: keepUntilSignal(stackFile, finish) } : {}),
  });
  if (values.keep) {
    removeStackFile(stackFile);
    process.stderr.write('The local stack has stopped.\n');
  } else finish(result);
  return result.report.lost === 0 && (result.provider?.refused ?? 0) === 0 ? 0 : 1;
}

/**
 * Runs a scenario of several lanes (see `runLocalLanes`): packages serverless.yml in the lanes form, with each lane's
 * settings as the scenario writes them (and the shared `timeZone` and `orchestrator` it gives), and reports each lane.
 * @returns the exit code: 0 when no lane lost a job and no provider refused a request.
 */
async function runLanes(scenario: LanesScenario, raw: Record<string, unknown>, json: boolean): Promise<number> {
  process.stderr.write(
    `Scenario: ${scenario.name}\nPackaging serverless.yml with ${scenario.lanes.length} lanes (osls package)…\n`,
  );
  const template = await packagedTemplate((config) => {
    const custom = config.custom as Record<string, Record<string, unknown>>;
    const { timeZone, orchestrator } = custom.quotaOrchestrator!;
    custom.quotaOrchestrator = lanesSettings(scenario, {
      timeZone: raw.timeZone ?? timeZone,
      orchestrator: raw.orchestrator ?? orchestrator,
    });
  });
  const progress = new ProgressLine(process.stderr);
  const result = await runLocalLanes({
    scenario,
    template,
    onProgress: (p) =>
      progress.update(
        p.lanes.map((l) => `${l.lane} ${l.succeeded + l.deadLettered}/${l.jobs} ${l.circuit}`).join(' | ') +
          ` | ${p.elapsedSeconds.toFixed(0)} s`,
      ),
  });
  progress.done();
  for (const lane of result.lanes) {
    process.stderr.write(
      `\nlane ${lane.lane}:\n${formatReport(lane.report)}\nbusiest second: ${lane.peakCallsPerSecond} calls\n${providerLine(lane.provider)}\n`,
    );
  }
  for (const { pool, lanes, tiers } of result.pools) {
    const used = tiers.map(
      ({ tier, peak, limit }) =>
        `${tier}: at most ${peak} of ${limit} in one window (${((100 * peak) / limit).toFixed(1)} %)`,
    );
    process.stderr.write(`\npool ${pool} (lanes ${lanes.join(', ')}):\n${used.join('\n')}\n`);
  }
  if (json)
    console.log(
      JSON.stringify({
        lanes: Object.fromEntries(result.lanes.map((l) => [l.lane, l.report])),
        pools: Object.fromEntries(result.pools.map(({ pool, ...rest }) => [pool, rest])),
      }),
    );
  return result.lanes.every((l) => l.report.lost === 0 && l.provider.refused === 0) ? 0 : 1;
}

/** What the simulated provider required of the workers' requests, and how many it refused for lacking it. */
function providerLine({ headers, refused, keyReads }: ProviderCheck): string {
  const names = (required: Readonly<Record<string, string>>) => Object.keys(required).join(', ') || 'none';
  return `provider headers: calls carried ${names(headers.calls)}, health checks ${names(headers.probes)}; ${refused} requests refused for a missing or wrong one; the key read ${keyReads} times from the local parameter store`;
}

/**
 * Keeps the stack up once the run has reported (`--keep`): writes the stack file, says how to use it, and stops on
 * SIGINT or SIGTERM (Ctrl-C), when the file is removed.
 */
function keepUntilSignal(stackFile: string, finish: (result: LocalRunResult) => void): KeepOptions {
  let stop: () => void = () => undefined;
  const until = new Promise<void>((resolve) => (stop = resolve));
  return {
    until,
    onKept: (stack, result) => {
      finish(result);
      const path = writeStackFile(stackFile, stack);
      const local = stackFile === DEFAULT_STACK_FILE ? '--local' : `--local ${stackFile}`;
      process.stderr.write(
        [
          '',
          `The local stack stays up (lane '${stack.lane}'; the schedule keeps firing). Where it is: ${path}`,
          `  npm run ops -- status ${local}              the lane's usage, circuit, pause and queues`,
          `  npm run ops -- enqueue jobs.ndjson ${local} one job a line: {"body": …, "cost"?, "idempotencyKey"?}`,
          `  npm run ops -- dlq list ${local}            dead letters with their reasons`,
          `  SQS ${stack.endpoints.sqs}, DynamoDB ${stack.endpoints.dynamodb}, Lambda ${stack.endpoints.lambda} (region ${stack.region}, any credentials)`,
          'Press Ctrl-C to stop it.',
          '',
        ].join('\n'),
      );
      const onSignal = (): void => {
        // First, while nothing can interrupt it: Ctrl-C under `npm start` signals npm, tsx and this process, and tsx
        // passes its signal on, so a second one may end this process before the stack has stopped.
        removeStackFile(stackFile);
        process.stderr.write('\nStopping the local stack…\n');
        stop();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    },
  };
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) console.error(`Invalid option or scenario: ${error.message}`);
    else if (error instanceof PackagingError) console.error(`Invalid serverless.yml: ${error.message}`);
    else console.error(error);
    process.exit(2);
  },
);
