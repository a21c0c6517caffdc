import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import defaultScenario from '../simulation/scenarios/default.json';
import { parseScenario } from '../simulation/scenario';
import { formatReport } from '../simulation/report';
import { runSimulation } from '../simulation/runSimulation';
import { ConfigError } from '../../lib/errors';

const USAGE = `Usage: npm run simulate -- [--scenario FILE] [--json]
  Runs the orchestrator and worker services in memory, on virtual time, against a simulated API that enforces the quotas.
  --scenario FILE  a JSON scenario (default: the embedded one, tools/simulation/scenarios/default.json)
  --json           print the report as one JSON line, last`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const raw: unknown =
    values.scenario === undefined ? defaultScenario : JSON.parse(readFileSync(values.scenario, 'utf8'));
  const scenario = parseScenario(raw);
  if (!values.json) console.log(`Scenario: ${scenario.name}`);
  const { report, api } = await runSimulation(scenario);
  const { maxInFlight } = scenario.config;
  const inFlight =
    maxInFlight === undefined
      ? ''
      : `\ncalls in progress at the API: at most ${api.peakCallsInFlight()} at once (maxInFlight ${maxInFlight})`;
  console.log(values.json ? JSON.stringify(report) : `${formatReport(report)}${inFlight}`);
  return report.lost === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof ConfigError ? `Invalid scenario: ${error.message}` : error);
    process.exit(2);
  },
);
