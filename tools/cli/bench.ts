import { adaptiveTable, compareAdaptive } from '../bench/adaptiveBench';
import { prioritiesTable, runPriorities } from '../bench/prioritiesBench';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { renderBenchChart } from '../bench/chart';
import { formatCostLines } from '../bench/cost';
import type { OrchestratorResult } from '../bench/orchestratorStrategy';
import { runOrchestratorStrategy } from '../bench/orchestratorStrategy';
import {
  ceilingLines,
  chartPanel,
  compareStrategies,
  costLine,
  figures,
  growthTable,
  hotLaneLines,
} from '../bench/runBench';
import { runBaseline } from '../bench/baselines';
import { simulatedCeiling } from '../bench/simulatedCeiling';
import { measureIdle, measureIdleLanes, type LanesIdleResult } from '../bench/idleCost';
import {
  ceilingScenario,
  growthScenarios,
  hotLaneScenario,
  lateStartsScenario,
  llmScenario,
  outageScenario,
  partlyBusyScenario,
  steadyScenario,
  type BenchSize,
} from '../bench/scenarios';
import { formatTable } from '../bench/table';
import type { BenchScenario, StrategyResult } from '../bench/types';
import { packagedTemplate } from '../local/packageService';
import type { Template } from '../local/template';
import { AGREEMENT, formatSimVsLocal, simVsLocal } from '../bench/simVsLocal';
import { compareLanes, lanesTable } from '../bench/lanesBench';
import { simulatedLanesCeiling, type SimulatedLanesCeiling } from '../bench/simulatedLanesCeiling';
import { HOT_LANE_CALLS_PER_SECOND, replayHotLane } from '../local/hotLaneReplay';

const USAGE = `Usage: npm run bench -- [--quick] [--json] [--chart FILE]
  Runs one job set through four strategies side by side against the same quota-enforcing API:
  naive fan-out with SDK-style retries, per-worker Bottleneck limiters, one Bottleneck limiter shared in Redis,
  and this orchestrator end to end on the local stack, in the scenarios steady, outage, late-starts and llm (an
  LLM API with request, input-token and output-token tiers and a cap on calls in flight); then the orchestrator
  alone at growing sizes, at its ceiling, on a hot lane (1,000 calls/s with usage reported) and with two classes of
  work (priorities); and every strategy on lanes: three APIs, two of them sharing a pool, one of those down for a while. Prints tables and cost lines, and
  writes a chart of calls per second.
  --quick       small sizes (about 6 minutes), for a smoke run
  --json        print the whole result as one JSON line, last
  --sim-vs-local  only compare the simulation's utilization with the local stack's on steady, outage, late-starts
                and llm (the orchestrator alone, once each way); they should agree within 0.03
  --hot-lane    only the hot-lane run (1,000 calls/s, maxInFlight 1,000, usage reported): the largest item written
                and the peak write units a second on any one item
  --lanes       only the lanes scenario, for every strategy
  --adaptive    only the adaptive scenario (the API allows less than configured, and less again mid-run, and
                says so in its headers), for every strategy
  --priorities  only the priorities scenario (a bulk backlog and main jobs arriving faster and faster), the
                orchestrator alone: each class's waits, and the least share bulk was given
  --chart FILE  where to write the SVG chart (default: out/bench.svg)`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      'sim-vs-local': { type: 'boolean', default: false },
      'hot-lane': { type: 'boolean', default: false },
      lanes: { type: 'boolean', default: false },
      adaptive: { type: 'boolean', default: false },
      priorities: { type: 'boolean', default: false },
      chart: { type: 'string', default: 'out/bench.svg' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const size: BenchSize = values.quick ? 'quick' : 'full';
  const began = Date.now();
  process.stderr.write('Packaging serverless.yml (osls package)…\n');
  const template = await packagedTemplate();
  if (values['sim-vs-local']) return compareSimulation(size, template, values.json);
  if (values['hot-lane']) return hotLaneOnly(size, template, values.json);
  if (values.lanes) return lanesOnly(size, values.json);
  if (values.adaptive) return adaptiveOnly(size, template, values.json);
  if (values.priorities) return prioritiesOnly(size, template, values.json);

  const steady = steadyScenario(size);
  const outage = outageScenario(size);
  const progress = (scenario: BenchScenario) => (name: string) =>
    process.stderr.write(`  ${scenario.name}: ${name}…\n`);
  const steadyResults = await compareStrategies(steady, template, progress(steady));
  const partlyBusy = partlyBusyScenario(size);
  progress(partlyBusy)('per-worker-limiter');
  const partlyBusyResult = await runBaseline('per-worker-limiter', partlyBusy);
  const outageResults = await compareStrategies(outage, template, progress(outage));
  const lateStarts = lateStartsScenario(size);
  const lateStartsResults = await compareStrategies(lateStarts, template, progress(lateStarts));
  const llm = llmScenario(size);
  const llmResults = await compareStrategies(llm, template, progress(llm));
  const adaptive = await compareAdaptive(size, template, (name) => process.stderr.write(`  adaptive: ${name}…\n`));
  process.stderr.write('  priorities: orchestrator…\n');
  const priorities = await runPriorities(size, template);
  const growth = growthScenarios(size);
  const growthResults: OrchestratorResult[] = [];
  for (const scenario of growth) {
    process.stderr.write(`  ${scenario.name}: orchestrator…\n`);
    growthResults.push(await runOrchestratorStrategy(scenario, { template }));
  }
  const ceiling = ceilingScenario(size);
  process.stderr.write(`  ceiling: orchestrator…\n`);
  const ceilingResult = await runOrchestratorStrategy(ceiling, { template });
  process.stderr.write(`  ceiling: simulation…\n`);
  const simulated = await simulatedCeiling(ceiling, size === 'full' ? 20_000 : 5_000);
  const hotLane = await runHotLane(size, template);
  const idleRuns = size === 'full' ? 5 : 2;
  process.stderr.write(`  idle: ${idleRuns} runs over empty queues…\n`);
  const idle = await measureIdle(template, idleRuns);
  process.stderr.write(`  idle lanes: ${idleRuns} runs over 2 and 3 lanes' empty queues…\n`);
  const idleLanes = await measureIdleLanes(packagedTemplate, idleRuns);
  const lanes = await compareLanes(size, packagedTemplate, (name) => process.stderr.write(`  lanes: ${name}…\n`));
  process.stderr.write('  ceiling: 10 lanes in the simulation…\n');
  const lanesJobs = size === 'full' ? 2_000 : 500;
  const simulatedLanes = [
    await simulatedLanesCeiling(ceiling, 10, lanesJobs, false),
    await simulatedLanesCeiling(ceiling, 10, lanesJobs),
  ];

  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const date = new Date().toISOString().slice(0, 10);
  const chartPath = resolve(values.chart);
  mkdirSync(dirname(chartPath), { recursive: true });
  writeFileSync(
    chartPath,
    renderBenchChart(
      [chartPanel(steady, steadyResults), chartPanel(outage, outageResults), chartPanel(lateStarts, lateStartsResults)],
      `${machine}; ${date}`,
    ),
  );

  const table = (scenario: BenchScenario, results: readonly StrategyResult[]): string =>
    formatTable(
      scenario.name,
      results,
      results.map((r) => costLine(r).cost?.total),
    );
  const { perRun } = idle;
  const out = [
    `machine: ${machine}; date: ${date}; size: ${size}`,
    table(steady, steadyResults),
    formatCostLines(steadyResults.map(costLine)),
    `per-worker-limiter with ${partlyBusy.busyWorkers} of its ${partlyBusy.workers} workers busy (${partlyBusy.jobs} jobs): utilization ${partlyBusyResult.utilization.toFixed(3)}, ${partlyBusyResult.durationSeconds.toFixed(1)} s against ${partlyBusyResult.idealSeconds.toFixed(1)} s ideal`,
    table(outage, outageResults),
    table(lateStarts, lateStartsResults),
    table(llm, llmResults),
    adaptiveTable(adaptive.scenario, adaptive.results),
    prioritiesTable(priorities, size),
    growthTable(growthResults, growth),
    ceilingLines(ceilingResult, simulated, ceiling),
    hotLaneLines(hotLane.result, hotLane.scenario, hotLane.replay),
    `idle (${idle.runs} runs over empty queues): ${perRun.billedSeconds.toFixed(2)} s billed, ${perRun.dynamodbReadUnits.toFixed(1)} read and ${perRun.dynamodbWriteUnits.toFixed(1)} write units, ${perRun.sqsRequests.toFixed(1)} SQS requests per run; $${idle.idleCostPerMonthUsd.toFixed(2)} a month at ${idle.runsPerMonth} runs`,
    idleLanesLine(idleLanes),
    lanesTable(lanes.scenario, lanes.results),
    simulatedLanesLine(simulatedLanes),
    `chart: ${chartPath}; whole bench: ${((Date.now() - began) / 1000).toFixed(0)} s`,
  ];
  console.log(out.join('\n\n'));
  if (values.json) {
    console.log(
      JSON.stringify({
        machine,
        date,
        size,
        steady: steadyResults.map(figures),
        partlyBusy: figures(partlyBusyResult),
        outage: outageResults.map(figures),
        'late-starts': lateStartsResults.map(figures),
        llm: llmResults.map(figures),
        adaptive: adaptive.results.map(figures),
        priorities,
        growth: growthResults.map(figures),
        ceiling: { ...figures(ceilingResult), simulated },
        'hot-lane': { ...figures(hotLane.result), replay: hotLane.replay },
        idle,
        idleCostPerMonthUsd: Math.round(idle.idleCostPerMonthUsd * 1000) / 1000,
        idleLanes: {
          lanes: Object.fromEntries(
            Object.entries(idleLanes.byLanes).map(([n, r]) => [n, Math.round(r.idleCostPerMonthUsd * 1000) / 1000]),
          ),
          extraLanePerMonthUsd: Math.round(idleLanes.extraLanePerMonthUsd * 1000) / 1000,
        },
        lanes: lanes.results,
        simulatedLanes,
      }),
    );
  }
  return 0;
}

/** The simulated ceiling of 10 lanes, without and with a pool they all share. */
function simulatedLanesLine(results: readonly SimulatedLanesCeiling[]): string {
  return [
    'ceiling of one orchestrator serving 10 lanes (the simulation, the ceiling scenario per lane):',
    ...results.map(
      (r) =>
        `  ${r.pooled ? 'sharing a pool' : 'no pool'}, ${r.jobs} jobs: ${r.dispatchesPerSecond} dispatches in the busiest second${r.pooled ? `; the pool's busiest item took ${r.poolItemPeakWritesPerSecond} writes in a second (${r.poolItemPeak})` : ''}`,
    ),
  ].join('\n');
}

/** `--priorities`: the orchestrator alone on the priorities scenario. */
async function prioritiesOnly(size: BenchSize, template: Template, json: boolean): Promise<number> {
  process.stderr.write('  priorities: orchestrator…\n');
  const priorities = await runPriorities(size, template);
  console.log(`size: ${size}\n\n${prioritiesTable(priorities, size)}`);
  if (json) console.log(JSON.stringify({ size, priorities }));
  return 0;
}

/** `--adaptive`: every strategy on the adaptive scenario alone. */
async function adaptiveOnly(size: BenchSize, template: Template, json: boolean): Promise<number> {
  const { scenario, results } = await compareAdaptive(size, template, (name) =>
    process.stderr.write(`  adaptive: ${name}…\n`),
  );
  console.log(`size: ${size}\n\n${adaptiveTable(scenario, results)}`);
  if (json) console.log(JSON.stringify({ size, adaptive: results.map(figures) }));
  return 0;
}

/** `--lanes`: every strategy on the lanes scenario alone. */
async function lanesOnly(size: BenchSize, json: boolean): Promise<number> {
  const { scenario, results } = await compareLanes(size, packagedTemplate, (name) =>
    process.stderr.write(`  lanes: ${name}…\n`),
  );
  console.log(`size: ${size}\n\n${lanesTable(scenario, results)}`);
  if (json) console.log(JSON.stringify({ size, lanes: results }));
  return 0;
}

/** `--sim-vs-local`: the simulation's utilization beside the local stack's, per scenario. */
async function compareSimulation(size: BenchSize, template: Template, json: boolean): Promise<number> {
  const scenarios = [steadyScenario(size), outageScenario(size), lateStartsScenario(size), llmScenario(size)];
  const rows = await simVsLocal(scenarios, template, (what) => process.stderr.write(`  ${what}…\n`));
  console.log(`simulation against local stack (size: ${size}):\n${formatSimVsLocal(rows)}`);
  if (json) console.log(JSON.stringify({ size, agreement: AGREEMENT, simVsLocal: rows }));
  return 0;
}

/** The hot lane end to end on the local stack, then its items replayed at 1,000 calls a second (see `replayHotLane`). */
async function runHotLane(size: BenchSize, template: Template) {
  const scenario = hotLaneScenario(size);
  process.stderr.write(`  hot-lane: orchestrator…\n`);
  const result = await runOrchestratorStrategy(scenario, { template });
  process.stderr.write(`  hot-lane: items replayed at ${HOT_LANE_CALLS_PER_SECOND} calls/s…\n`);
  const replay = await replayHotLane(size === 'full' ? 10 : 4);
  return { scenario, result, replay };
}

/** `--hot-lane`: the hot-lane run alone. */
async function hotLaneOnly(size: BenchSize, template: Template, json: boolean): Promise<number> {
  const { scenario, result, replay } = await runHotLane(size, template);
  console.log(`size: ${size}\n\n${hotLaneLines(result, scenario, replay)}`);
  if (json) console.log(JSON.stringify({ size, 'hot-lane': { ...figures(result), replay } }));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);

/** The idle cost of deployments of several lanes: a month of runs over 2 and 3 idle lanes, and what one more lane adds. */
function idleLanesLine({ byLanes, extraLanePerMonthUsd }: LanesIdleResult): string {
  const each = Object.entries(byLanes)
    .map(
      ([n, r]) =>
        `${n} lanes $${r.idleCostPerMonthUsd.toFixed(3)} (${r.perRun.sqsRequests.toFixed(1)} SQS requests, ${r.perRun.dynamodbWriteUnits.toFixed(1)} write units per run)`,
    )
    .join(', ');
  return `idle lanes (each lane's queues asked for work, no lease for an empty one): ${each} a month; each lane more $${extraLanePerMonthUsd.toFixed(3)}`;
}
