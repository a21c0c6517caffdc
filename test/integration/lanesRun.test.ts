/**
 * `npm start -- --scenario` with a scenario of several lanes, as the CLI runs it: serverless.yml packaged in the lanes
 * form, every lane's queues made from the template on emulators of its own, and one simulated provider per lane that
 * refuses a request without its lane's headers and key. Two lanes share a pool, which their providers count together.
 */
import { packagedTemplate } from '../../tools/local/packageService';
import { lanesSettings, runLocalLanes, type LocalLanesRunResult } from '../../tools/local/lanesRun';
import { parseLanesScenario } from '../../tools/simulation/lanesScenario';

const SCENARIO = {
  name: 'lanes check',
  seed: 5,
  maxSeconds: 90,
  pools: { org: { quotas: [{ limit: 15, per: 'second' }] } },
  lanes: {
    default: {
      quotas: [{ limit: 20, per: 'second' }],
      jobs: { count: 40, fifo: 8, fifoGroups: 2, poison: 1, malformed: 1 },
      pools: ['org'],
      api: { latencyMs: 10 },
      pacing: { rampSeconds: 1 },
    },
    down: {
      quotas: [{ limit: 10, per: 'second' }],
      jobs: { count: 30 },
      pools: ['org'],
      api: { latencyMs: 10, outages: [{ atSeconds: 1, forSeconds: 3 }] },
      circuit: { failureThreshold: 2, windowSeconds: 10, openSeconds: 1, healthCheckSeconds: 1 },
      pacing: { rampSeconds: 1 },
    },
    claude: {
      quotas: [{ limit: 600, per: 'minute' }],
      request: { apiKeyHeader: 'x-api-key', requestHeaders: { 'anthropic-version': '2023-06-01' } },
      jobs: { count: 10 },
      api: { latencyMs: 20 },
    },
  },
};

let result: LocalLanesRunResult;

beforeAll(async () => {
  const scenario = parseLanesScenario(SCENARIO);
  const template = await packagedTemplate((config) => {
    const custom = config.custom as Record<string, Record<string, unknown>>;
    custom.quotaOrchestrator = lanesSettings(scenario, { orchestrator: custom.quotaOrchestrator!.orchestrator });
  });
  result = await runLocalLanes({ scenario, template });
}, 180_000);

const lane = (name: string) => result.lanes.find((l) => l.lane === name)!;

it('ends every job of every lane once, within each lane its quota, with no request the providers refused', () => {
  expect(result.lanes.map((l) => l.lane)).toEqual(['default', 'down', 'claude']);
  expect(lane('default').report).toMatchObject({ jobs: 40, succeeded: 38, deadLettered: 2, lost: 0, duplicates: 0 });
  expect(lane('down').report).toMatchObject({ jobs: 30, succeeded: 30, lost: 0, duplicates: 0 });
  expect(lane('claude').report).toMatchObject({ jobs: 10, succeeded: 10, lost: 0, duplicates: 0 });
  for (const { report, provider, peakCallsPerSecond, lane: name } of result.lanes) {
    expect({ name, rejected: report.rejectedByApi, refused: provider.refused }).toEqual({
      name,
      rejected: 0,
      refused: 0,
    });
    expect(report.fifoOrderViolations).toBe(0);
    expect(peakCallsPerSecond).toBeLessThanOrEqual(name === 'default' ? 20 : 10);
  }
});

it('keeps the two lanes of the pool within it together, as their providers count it', () => {
  expect(result.pools).toEqual([
    { pool: 'org', lanes: ['default', 'down'], tiers: [{ tier: '15/second', peak: expect.any(Number), limit: 15 }] },
  ]);
  const [tier] = result.pools[0]?.tiers ?? [];
  expect(tier?.peak).toBeLessThanOrEqual(15);
  expect(tier?.peak).toBeGreaterThan(0);
});

it("opens only the down lane's circuit, and closes it once its API is back", () => {
  expect(lane('down').report).toMatchObject({ circuitOpened: 1, circuitClosed: 1 });
  expect(lane('default').report.circuitOpened).toBe(0);
  expect(lane('claude').report.circuitOpened).toBe(0);
});

it("sends each lane's calls with its own headers: the key in x-api-key and the version for the Anthropic-like lane", () => {
  expect(Object.keys(lane('claude').provider.headers.calls).sort()).toEqual(['anthropic-version', 'x-api-key']);
  expect(Object.keys(lane('default').provider.headers.calls)).toEqual(['authorization']);
  expect(lane('claude').provider.keyReads).toBeGreaterThan(0);
});
