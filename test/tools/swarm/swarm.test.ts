import { REGRESSION_SEEDS } from '../../../tools/swarm/regressionSeeds';
import { replayCommand, runSeed, type SeedResult } from '../../../tools/swarm/runSwarm';

/** How many seeds `npm test` runs: seeds 1 to SEEDS. */
const SEEDS = 2_000;

/** One line per breach of `results`, with the command that replays it. */
function breaches(results: readonly SeedResult[]): string[] {
  return results.flatMap((r) => r.breaches.map((b) => `${replayCommand(r.seed)}: ${b.invariant}: ${b.detail}`));
}

describe('the seeded swarm', () => {
  it(`keeps every promise on seeds 1 to ${SEEDS}`, async () => {
    const results: SeedResult[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) results.push(await runSeed(seed));

    expect(breaches(results)).toEqual([]);
    // The seeds drew their faults: a range that injected nothing would pass as well.
    const injected = new Set(results.flatMap((r) => Object.keys(r.faults)));
    for (const kind of ['worker:crash-after-call', 'orchestrator:killed', 'api:rate-limited', 'ssm:key-read-failed'])
      expect(injected).toContain(kind);
  }, 600_000);

  it.each(REGRESSION_SEEDS.map((r) => [r.seed, r.found] as const))(
    'keeps every promise on regression seed %i (%s)',
    async (seed) => {
      expect(breaches([await runSeed(seed)])).toEqual([]);
    },
  );

  it('replays a seed exactly', async () => {
    expect(await runSeed(7)).toEqual(await runSeed(7));
  });
});
