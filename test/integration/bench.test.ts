import { renderBenchChart } from '../../tools/bench/chart';
import { chartPanel, compareStrategies, costLine } from '../../tools/bench/runBench';
import { formatTable } from '../../tools/bench/table';
import { STRATEGIES, type BenchScenario, type StrategyResult } from '../../tools/bench/types';
import { parseTiers } from '../../lib/domain/quota/tiers';
import type { Template } from '../../tools/local/template';
import { packagedTemplate } from '../../tools/local/packageService';

/** A smoke run of `npm run bench`'s comparison, small enough for every `npm test`: the figures live in the bench. */
const SMOKE: BenchScenario = {
  name: 'smoke',
  jobs: 30,
  quotas: parseTiers([{ limit: 20, per: 'second' }]),
  latencyMs: 5,
  workers: 4,
};

describe('the benchmark, as a smoke run', () => {
  let template: Template;
  let results: StrategyResult[];
  const started: string[] = [];

  beforeAll(async () => {
    template = await packagedTemplate();
    results = await compareStrategies(SMOKE, template, (name) => started.push(name));
  }, 120_000);

  it('runs every strategy, in table order', () => {
    expect(started).toEqual([...STRATEGIES]);
    expect(results.map((r) => r.name)).toEqual([...STRATEGIES]);
  });

  it('gets every job through each strategy that could run, and says why one could not', () => {
    for (const result of results) {
      if (result.unavailable !== undefined) {
        expect(result.name).toBe('shared-redis-limiter');
        continue;
      }
      expect(result.apiCalls).toBeGreaterThanOrEqual(SMOKE.jobs);
      // A baseline starts a worker per job at least; the orchestrator's batches (20 a second: two slots in 100 ms)
      // carry several jobs each.
      if (result.name === 'orchestrator') expect(result.invocationsPerJob).toBeLessThan(1);
      else expect(result.invocationsPerJob).toBeGreaterThanOrEqual(1);
      expect(result.callsPerSecond.reduce((sum, n) => sum + n, 0)).toBe(result.apiCalls);
    }
  });

  it('has the orchestrator call the API once per job, never over the quota, and count its AWS requests', () => {
    const orchestrator = results.find((r) => r.name === 'orchestrator');
    expect(orchestrator).toMatchObject({ rejectedByApi: 0, callsPerJob: 1 });
    expect(orchestrator?.dynamodbReadUnitsPerJob).toBeGreaterThan(0);
    expect(orchestrator?.dynamodbWriteUnitsPerJob).toBeGreaterThan(0);
    expect(orchestrator?.sqsRequestsPerJob).toBeGreaterThan(0);
    expect(costLine(orchestrator as StrategyResult).cost?.dynamodb).toBeGreaterThan(0);
  });

  it('renders the table and the chart from the results', () => {
    const table = formatTable(SMOKE.name, results);
    for (const name of STRATEGIES) expect(table).toContain(name);
    const svg = renderBenchChart([chartPanel(SMOKE, results)], 'smoke');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.match(/<polyline/g)?.length).toBe(results.filter((r) => r.unavailable === undefined).length);
  });
});
