import { runFaultScenario, type FaultScenarioResult } from '../../../tools/faults/runFaults';
import { faultScenarios } from '../../../tools/faults/scenarios';
import { testEmulators } from '../../helpers/awsClients';

/**
 * The `in-flight-leak` scenario at its quick size (as `npm run faults -- --quick --scenario in-flight-leak`), seed 1:
 * a lane with `maxInFlight`, whose workers are killed while their call is at the API, start late, and get their
 * events twice. The API counts the calls in progress; the state table is read once the scenario has drained.
 */
describe('the in-flight-leak fault scenario (quick size)', () => {
  const scenario = faultScenarios('quick').find((s) => s.name === 'in-flight-leak');
  let result: FaultScenarioResult;
  beforeAll(async () => {
    if (scenario === undefined) throw new Error('no in-flight-leak scenario');
    result = await runFaultScenario(scenario, testEmulators(), 1);
  }, 150_000);

  it('killed workers mid-call, started workers late and delivered events twice', () => {
    expect(result.faults['worker:killed-mid-call']).toBeGreaterThan(0);
    expect(result.faults['lambda:cold-start']).toBeGreaterThan(0);
    expect(result.faults['lambda:delivered-twice']).toBeGreaterThan(0);
  });

  it('never had more calls in progress at the API than maxInFlight, and the cap was reached', () => {
    expect(result.callsInFlight).toMatchObject({
      maxInFlight: scenario?.maxInFlight,
      peak: scenario?.maxInFlight,
      inFlightViolations: 0,
    });
  });

  it('recovered every slot: each worker that did not fail reported its call’s end, and none is held at the end but a failed worker’s', () => {
    expect(result.callsInFlight).toMatchObject({ unreportedDispatches: 0, slotsLeaked: 0, everySlotRecovered: true });
    // Each killed worker's event, a batch's jobs all, could not report.
    expect(result.callsInFlight?.dispatchesOfFailedWorkers).toBeGreaterThanOrEqual(
      result.faults['worker:killed-mid-call'] ?? 0,
    );
  });

  it('lost nothing, exceeded no quota, kept FIFO order, and called a job twice only after its worker was killed mid-call', () => {
    expect(result).toMatchObject({
      lost: 0,
      quotaViolations: 0,
      fifoOrderViolations: 0,
      orchestratorCrashes: 0,
      deadLetteredWithoutReason: 0,
      crashErrors: [],
    });
    expect(result.duplicateApiCalls).toBe(result.duplicatesAfterCrashBeforeRecord);
    expect(result.deadLetteredWithReason).toBe(5 + result.healthyDeadLettered);
  });
});
