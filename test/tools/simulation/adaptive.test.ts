import adaptiveScenario from '../../../tools/simulation/scenarios/adaptive.json';
import { parseScenario } from '../../../tools/simulation/scenario';
import { runSimulation } from '../../../tools/simulation/runSimulation';

/**
 * The adaptive scenario on virtual time: configured 20/s, the API allows 12/s and then 8/s, and says so in its
 * headers. What the service learns from them is what decides the refusals and the run's length.
 */
describe('the adaptive scenario', () => {
  const withLearning = (learn: 'enforce' | 'shadow') =>
    parseScenario({ ...adaptiveScenario, limits: { ...adaptiveScenario.limits, learn } });

  it('enforcing what the headers say, is refused at most 1 % of its calls and ends every job once', async () => {
    const { report } = await runSimulation(withLearning('enforce'));

    expect(report).toMatchObject({ jobs: 600, succeeded: 600, lost: 0, duplicates: 0 });
    expect(report.rejectedByApi).toBeLessThanOrEqual(0.01 * report.apiCalls);
  });

  it('in shadow, paces at the configured limit: refused far more, and far slower', async () => {
    const [enforced, shadow] = await Promise.all([
      runSimulation(withLearning('enforce')),
      runSimulation(withLearning('shadow')),
    ]);

    expect(shadow.report.rejectedByApi).toBeGreaterThan(0.1 * shadow.report.apiCalls);
    expect(enforced.report.durationSeconds).toBeLessThan(0.75 * shadow.report.durationSeconds);
  });
});
