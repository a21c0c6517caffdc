/**
 * The simulation beside the local stack: each bench scenario run once on virtual time (memory stores) and once end to
 * end on the emulators, with the same jobs, start delays, API and settings, and their utilizations compared.
 */
import { CONFIG_ENV, serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import type { ServiceConfig } from '../../lib/config';
import type { Scenario } from '../simulation/scenario';
import { runSimulation } from '../simulation/runSimulation';
import type { AwsLatencyProfile } from '../simulation/awsLatency';
import { runLocal, type LocalRunResult } from '../local/localRun';
import type { Template } from '../local/template';
import { simulationScenario } from './jobSet';
import { settingsOverrides } from './orchestratorStrategy';
import { formatFixedWidth } from './table';
import type { BenchScenario } from './types';

/** How far apart the two utilizations may be for the simulation to count as agreeing with the local stack. */
export const AGREEMENT = 0.03;

/** One scenario's utilization in the simulation and on the local stack. */
export interface SimVsLocalRow {
  readonly scenario: string;
  readonly simulation: number;
  readonly local: number;
  /** `simulation - local`, 3 decimals. */
  readonly difference: number;
  /** Whether the difference is within {@link AGREEMENT} either way. */
  readonly agrees: boolean;
  /** Run durations in seconds, simulation and local, to tell where a difference comes from. */
  readonly simulationSeconds: number;
  readonly localSeconds: number;
  /** The local stack's mean time per AWS request, by service (see {@link SimVsLocalRow.simulationWithLatency}). */
  readonly awsLatency: AwsLatencyProfile;
  /** The simulation's utilization with that latency added to each of its requests, for comparison. */
  readonly simulationWithLatency: number;
}

/** Receives may wait for messages (long polling): their time is not the service's latency. */
const LONG_POLLS = /^sqs\.ReceiveMessage/;

/** The mean milliseconds of a local run's requests to each service (both functions', receives left out), 1 decimal. */
function measuredLatency(run: LocalRunResult): AwsLatencyProfile {
  const tallies = [...Object.entries(run.orchestrator.requests), ...Object.entries(run.worker.requests)];
  const mean = (service: string): number => {
    const of = tallies.filter(([key]) => key.startsWith(`${service}.`) && !LONG_POLLS.test(key)).map(([, t]) => t);
    const count = of.reduce((sum, t) => sum + t.count, 0);
    return count === 0 ? 0 : Math.round((of.reduce((sum, t) => sum + t.ms, 0) / count) * 10) / 10;
  };
  return { lambdaMs: mean('lambda'), dynamodbMs: mean('dynamodb'), sqsMs: mean('sqs') };
}

/** The worker function's environment in the packaged template (the settings serverless.yml gives the service). */
function packagedEnv(template: Template): Env {
  const worker = Object.values(template.Resources).find(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Handler === 'functions/worker.handler',
  );
  const variables = (worker?.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
  if (variables === undefined) throw new Error('the packaged template has no worker function with an environment');
  const config = Object.values(CONFIG_ENV) as string[];
  return Object.fromEntries(
    Object.entries(variables).filter(([name, value]) => config.includes(name) && typeof value === 'string'),
  ) as Env;
}

/**
 * The simulation's scenario for a bench scenario: {@link simulationScenario}, but with the settings the local run
 * gives its functions, serverless.yml's with the bench scenario's own (its quotas, and an LLM's `maxInFlight` and
 * usage preset) over them, so that both run the same configuration.
 */
export function packagedScenario(bench: BenchScenario, template: Template): Scenario {
  const scenario = simulationScenario(bench);
  const env: Env = {
    ...packagedEnv(template),
    ...Object.fromEntries(
      settingsOverrides(bench).map((key) => {
        const value: unknown = scenario.config[key];
        return [CONFIG_ENV[key], typeof value === 'string' ? value : JSON.stringify(value)];
      }),
    ),
  };
  const config: ServiceConfig = serviceConfigFromEnv(env);
  return { ...scenario, config, ...(bench.awsLatency === undefined ? {} : { awsLatency: bench.awsLatency }) };
}

/**
 * Runs each scenario on the local stack, then in the simulation (each request instant), and once more with the mean
 * time the local stack's emulators took per request (by service) added to each of the simulation's requests, as
 * `awsLatency` adds AWS's, to show what that latency accounts for.
 * @param onStart told each scenario and side as it starts (progress for people).
 */
export async function simVsLocal(
  scenarios: readonly BenchScenario[],
  template: Template,
  onStart: (what: string) => void = () => undefined,
): Promise<SimVsLocalRow[]> {
  const rows: SimVsLocalRow[] = [];
  for (const bench of scenarios) {
    onStart(`${bench.name}: local stack`);
    const run = await runLocal({ scenario: simulationScenario(bench), overrides: settingsOverrides(bench), template });
    const local = run.report;
    const awsLatency = measuredLatency(run);
    onStart(`${bench.name}: simulation`);
    const scenario = packagedScenario(bench, template);
    const simulated = (await runSimulation({ ...scenario, awsLatency })).report;
    const instant = (await runSimulation(scenario)).report;
    const difference = Math.round((instant.utilization - local.utilization) * 1000) / 1000;
    rows.push({
      scenario: bench.name,
      simulation: instant.utilization,
      local: local.utilization,
      difference,
      agrees: Math.abs(difference) <= AGREEMENT,
      simulationSeconds: instant.durationSeconds,
      localSeconds: local.durationSeconds,
      awsLatency,
      simulationWithLatency: simulated.utilization,
    });
  }
  return rows;
}

/** The rows as a table for people. */
export function formatSimVsLocal(rows: readonly SimVsLocalRow[]): string {
  const columns = [
    { header: 'scenario', align: 'left' },
    { header: 'utilization (simulation)', align: 'right' },
    { header: 'utilization (local stack)', align: 'right' },
    { header: 'difference', align: 'right' },
    { header: `within ${AGREEMENT}`, align: 'left' },
    { header: 'duration s (sim / local)', align: 'right' },
    { header: 'local ms per request (Lambda, DynamoDB, SQS)', align: 'right' },
    { header: 'simulation with it', align: 'right' },
  ] as const;
  return formatFixedWidth(
    columns,
    rows.map((r) => ({
      cells: [
        r.scenario,
        r.simulation.toFixed(3),
        r.local.toFixed(3),
        `${r.difference >= 0 ? '+' : ''}${r.difference.toFixed(3)}`,
        r.agrees ? 'yes' : 'no',
        `${r.simulationSeconds.toFixed(1)} / ${r.localSeconds.toFixed(1)}`,
        `${r.awsLatency.lambdaMs}, ${r.awsLatency.dynamodbMs}, ${r.awsLatency.sqsMs}`,
        r.simulationWithLatency.toFixed(3),
      ],
    })),
  );
}
