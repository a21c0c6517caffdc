import { parseArgs } from 'node:util';
import { formatFixedWidth, type Column } from '../bench/table';
import { faultScenarios, type FaultSize } from '../faults/scenarios';
import { runFaultScenario, totalsOf, type CallsInFlightResult, type FaultScenarioResult } from '../faults/runFaults';
import { startEmulators } from '../local/emulators';
import { conditionScenarios, type ConditionScenario } from '../faults/conditions';

const USAGE = `Usage: npm run faults -- [--quick] [--json] [--scenario NAME] [--seed N]
  Runs the whole service on the local emulators once per fault scenario, injecting the faults real AWS and real
  APIs produce (killed orchestrators, DynamoDB outages and throttling, SQS and Lambda errors, worker crashes and
  duplicate deliveries, a second orchestrator and a stale lease holder, clock skew, a misbehaving API, workers killed
  while their call is in progress), and checks that nothing is lost, no quota is exceeded, every dead-lettered message
  has its reason, and a lane's cap on calls in flight holds at the API and leaks no call slot. Then runs each
  condition scenario: an exact sequence of late, repeated or lost deliveries, answers and writes, on a fake clock.
  --quick          the smaller sizes that npm test runs
  --json           print the totals and every scenario as one JSON line, last
  --scenario NAME  run one scenario (repeatable); names: ${[...faultScenarios('quick'), ...conditionScenarios]
    .map((s) => s.name)
    .join(', ')}
  --seed N         seed of the kill points and fault shares (default 1)`;

/** One line on the cap on calls in flight: what the API saw, and how the slots came back. */
function formatCallsInFlight(c: CallsInFlightResult): string {
  const recovered = c.everySlotRecovered
    ? 'every slot recovered'
    : `SLOTS NOT RECOVERED: ${c.unreportedDispatches} dispatches unreported, ${c.slotsLeaked} slots leaked`;
  return `calls in flight: peak ${c.peak} of maxInFlight ${c.maxInFlight} (${c.inFlightViolations} over) in ${c.calls} calls; ${c.dispatches} dispatches (${c.dispatchesOfFailedWorkers} of failed workers, ${c.reportsLost} reports lost); ${c.slotsHeldAtEnd} slots held at the end (${c.slotsHeldForFailedWorkers} for failed workers); ${recovered}`;
}

function formatResults(results: readonly FaultScenarioResult[]): string {
  const rows = results.map((r) => [
    r.name,
    String(r.jobs),
    String(r.faultsInjected),
    String(r.lost),
    `${r.duplicateApiCalls} (${r.duplicatesAfterCrashBeforeRecord})`,
    String(r.quotaViolations),
    String(r.fifoOrderViolations),
    `${r.deadLetteredWithReason}/${r.deadLetteredWithReason + r.deadLetteredWithoutReason}`,
    String(r.orchestratorCrashes),
    r.seconds.toFixed(1),
  ]);
  const headers = [
    'scenario',
    'jobs',
    'faults',
    'lost',
    'dup calls (after crash)',
    'quota violations',
    'FIFO violations',
    'DLQ with reason',
    'orch. crashes',
    'seconds',
  ];
  const columns: Column[] = headers.map((header, i) => ({ header, align: i === 0 ? 'left' : 'right' }));
  const table = formatFixedWidth(
    columns,
    rows.map((cells) => ({ cells })),
  );
  const details = results.map((r) => {
    const faults = Object.entries(r.faults)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
    const kills = Object.entries(r.killPoints)
      .map(([point, n]) => `${point} ${n}`)
      .join(', ');
    const exhausted = Object.entries(r.quotaExhausted)
      .map(([tier, n]) => `${tier} ${n}`)
      .join(', ');
    return `- ${r.name}: ${r.injects}\n    injected: ${faults || 'none'}${kills === '' ? '' : `\n    kill points: ${kills}`}${exhausted === '' ? '' : `\n    quota-exhausted reports: ${exhausted}`}${r.crashErrors.map((e) => `\n    crashed run: ${e}`).join('')}${r.staleHolder === undefined ? '' : `\n    stale holder's run ended: ${r.staleHolder}`}${r.callsInFlight === undefined ? '' : `\n    ${formatCallsInFlight(r.callsInFlight)}`}`;
  });
  return `${table}\n\n${details.join('\n')}`;
}

/** A condition scenario's outcome, as `--json` prints it. */
interface ConditionResult {
  readonly name: string;
  readonly condition: number;
  readonly injects: string;
  readonly held: boolean;
  readonly detail: string;
}

async function runConditions(scenarios: readonly ConditionScenario[]): Promise<ConditionResult[]> {
  const results: ConditionResult[] = [];
  for (const { name, condition, injects, run } of scenarios) {
    process.stderr.write(`  ${name}…\n`);
    results.push({ name, condition, injects, ...(await run()) });
  }
  return results;
}

function formatConditions(results: readonly ConditionResult[]): string {
  return results
    .map((r) => `- condition ${r.condition}, ${r.name}: ${r.held ? 'held' : 'BROKEN'}: ${r.detail}`)
    .join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      scenario: { type: 'string', multiple: true },
      seed: { type: 'string', default: '1' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const seed = Number(values.seed);
  if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be an integer; got ${JSON.stringify(values.seed)}`);
  const size: FaultSize = values.quick ? 'quick' : 'full';
  const all = faultScenarios(size);
  const names = [...all, ...conditionScenarios].map((s) => s.name);
  const wanted = values.scenario ?? names;
  const unknown = wanted.filter((name) => !names.includes(name));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; names: ${names.join(', ')}`);

  const results: FaultScenarioResult[] = [];
  const toRun = all.filter((s) => wanted.includes(s.name));
  if (toRun.length > 0) {
    const emulators = await startEmulators();
    try {
      for (const scenario of toRun) {
        process.stderr.write(`  ${scenario.name}…\n`);
        results.push(await runFaultScenario(scenario, emulators, seed + results.length));
      }
    } finally {
      await emulators.stop();
    }
  }
  const conditions = await runConditions(conditionScenarios.filter((s) => wanted.includes(s.name)));
  const totals = {
    ...totalsOf(results),
    conditionsRun: conditions.length,
    conditionsBroken: conditions.filter((c) => !c.held).length,
  };
  if (results.length > 0) console.log(formatResults(results));
  if (conditions.length > 0) console.log(`\ncondition scenarios:\n${formatConditions(conditions)}`);
  console.log(`\ntotals: ${JSON.stringify(totals)}`);
  if (values.json) console.log(JSON.stringify({ ...totals, results, conditions }));
  const slotsLost = results.some((r) => r.callsInFlight?.everySlotRecovered === false);
  const failed =
    totals.lost > 0 ||
    totals.quotaViolations > 0 ||
    totals.orchestratorCrashes > 0 ||
    totals.unexplainedDuplicates > 0 ||
    totals.deadLetteredWithoutReason > 0 ||
    totals.repeatedDeadLetters > 0 ||
    totals.succeededAndDeadLettered > 0 ||
    totals.inFlightViolations > 0 ||
    totals.conditionsBroken > 0 ||
    slotsLost;
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
