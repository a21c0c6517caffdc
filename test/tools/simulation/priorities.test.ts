import prioritiesScenario from '../../../tools/simulation/scenarios/priorities.json';
import { classWaits, lowestBulkShare } from '../../../tools/bench/priorityMeasures';
import { parseScenario } from '../../../tools/simulation/scenario';
import { runSimulation } from '../../../tools/simulation/runSimulation';

/**
 * The priorities scenario on virtual time: on 20 calls a second, a backlog of 600 bulk jobs from the start, and 600
 * main jobs arriving at 15 a second for 20 s, then at 30 a second for 10 s; bulkShare 0.1.
 */
describe('the priorities scenario', () => {
  const scenario = parseScenario(prioritiesScenario);
  const run = runSimulation(scenario);

  it('ends every job once, whatever its class', async () => {
    const { report } = await run;

    expect(report).toMatchObject({ jobs: 1200, succeeded: 1200, lost: 0, duplicates: 0, rejectedByApi: 0 });
  });

  it('gives bulk its share in every 10 s while it has jobs waiting, the main jobs arriving faster than the quota', async () => {
    const { jobs, api, start } = await run;

    // The share is of dispatches; a window of calls at their slots may hold one call less than a tenth of ~200.
    expect(lowestBulkShare(jobs, api.callLog, start, 10)).toBeGreaterThanOrEqual(0.1 - 1 / 200);
  });

  it('lets main jobs go far ahead of arrival order, and bulk jobs still end', async () => {
    const { jobs, api, start } = await run;

    const [main, bulk] = classWaits(jobs, api.callLog, start, 20);
    // In arrival order each main job would wait behind the whole bulk backlog: 27 s at the median.
    expect(main?.arrivalOrderMedianSeconds).toBeGreaterThan(25);
    expect(main?.p99Seconds).toBeLessThan(10);
    expect(main?.medianSeconds).toBeLessThan(3);
    expect(bulk?.jobs).toBe(600);
  });
});
