import { EmfMetrics } from '../../../lib/adapters/metrics/emfMetrics';
import { METRICS } from '../../../lib/adapters/metrics/serviceMetrics';
import { OrchestratorMetrics } from '../../../lib/wiring/eventMetrics';
import { captureStdout } from '../../helpers/emf';
import { START } from '../../helpers/serviceFixtures';

/** A deployment's metrics: every one carries its service, stage and lane. */
const SCOPE = { service: 'quota-orchestrator', stage: 'prod', lane: 'llm' };

afterEach(() => jest.restoreAllMocks());

describe('OrchestratorMetrics of named units and calls in flight', () => {
  it('counts the units handed back per unit, and the calls in flight at each flush', () => {
    const stdout = captureStdout();
    const metrics = new OrchestratorMetrics(new EmfMetrics(), SCOPE, START);
    metrics.observe({
      type: 'flushed',
      at: START,
      settlements: 3,
      handedBack: { output_tokens: 1_200, input_tokens: 4 },
      usage: [],
      inFlight: 7,
    });
    metrics.observe({ type: 'flushed', at: START + 2_000, settlements: 0, handedBack: {}, usage: [] });
    metrics.end(START + 2_001);

    expect(stdout.metric(METRICS.unitsHandedBack)).toEqual([
      { unit: 'Count', dimensions: { ...SCOPE, unit: 'output_tokens' }, value: 1_200 },
      { unit: 'Count', dimensions: { ...SCOPE, unit: 'input_tokens' }, value: 4 },
    ]);
    expect(stdout.metric(METRICS.callsInFlight)).toEqual([{ unit: 'Count', dimensions: SCOPE, value: 7 }]);
  });
});
