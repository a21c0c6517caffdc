import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { drawCase } from '../swarm/drawCase';
import { runSeed, type SeedResult } from '../swarm/runSwarm';
import { formatSummary, summarize } from '../swarm/swarmReport';

const USAGE = `Usage: npm run swarm -- [--seeds N] [--from S] [--seed S] [--json]
  Runs the simulation on virtual time once per seed, each seed drawing its own backlog and faults (late and repeated
  deliveries, events Lambda holds, writes that land and lose their answer, DynamoDB unavailable, worker and
  orchestrator crashes, clock skew, outages, 429s with Retry-After, revoked keys, flaky jobs), and checks every
  invariant as the run goes. A breach prints the command that replays it; exit 1 if any seed breached.
  --seeds N   how many seeds (default 500)
  --from S    the first seed (default 1)
  --seed S    replay one seed, and print what it drew
  --json      print the summary as one JSON line, last`;

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`--${name} must be a whole number >= 0; got ${JSON.stringify(value)}`);
  return n;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seeds: { type: 'string' },
      from: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const one = values.seed === undefined ? undefined : integer(values.seed, 'seed', 0);
  const from = one ?? integer(values.from, 'from', 1);
  const seeds = one === undefined ? integer(values.seeds, 'seeds', 500) : 1;
  if (one !== undefined) {
    const { scenario, faults, families } = drawCase(one);
    console.log(JSON.stringify({ seed: one, families, faults, scenario: { ...scenario, config: undefined } }, null, 2));
  }
  const started = performance.now();
  const results: SeedResult[] = [];
  for (let seed = from; seed < from + seeds; seed++) results.push(await runSeed(seed));
  const summary = summarize(results, (performance.now() - started) / 1000);
  console.log(formatSummary(summary));
  if (values.json) console.log(JSON.stringify(summary));
  return summary.breaches > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
