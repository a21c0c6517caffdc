import { ceilingScenario } from '../../../tools/bench/scenarios';
import { simulatedCeiling } from '../../../tools/bench/simulatedCeiling';
import { NO_LATENCY } from '../../../tools/simulation/awsLatency';

describe('simulatedCeiling', () => {
  it('sustains 2,000 dispatches a second with AWS latencies on every request (virtual time, so deterministic)', async () => {
    const ceiling = await simulatedCeiling(ceilingScenario('quick'), 5_000);
    expect(ceiling.dispatchesPerSecond).toBeGreaterThanOrEqual(2_000);
    // Receives and invokes are where the orchestrator's requests spend their latency.
    expect(Object.keys(ceiling.orchestratorTime).slice(0, 2)).toEqual(['sqs.receive', 'lambda.invoke']);
  });

  it('counts no latency without a profile', async () => {
    const ceiling = await simulatedCeiling({ ...ceilingScenario('quick'), awsLatency: NO_LATENCY }, 500);
    expect(ceiling.orchestratorTime).toEqual({});
    expect(ceiling.dispatchesPerSecond).toBeGreaterThan(0);
  });
});
