import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import {
  START,
  dispatchedEvents,
  drive,
  orchestratorHarness,
  sendJob,
  testConfig,
} from '../../../helpers/serviceFixtures';

describe('the allowance reaches the slot of the message about to go', () => {
  it('when the lead puts slots further ahead than two flush intervals: one flush, not a flush loop at one instant', async () => {
    // Flushes every 200 ms grant 400 ms of allowance; a lead of 1 s puts each slot 1 s ahead of its dispatch.
    const config = testConfig({
      pacing: { dispatchLeadMs: 1_000, maxDispatchLeadMs: 1_000 },
      orchestrator: { flushIntervalMs: 200, leaseTtlMs: 5_000 },
    });
    const h = orchestratorHarness({ config });
    for (let i = 1; i <= 5; i++) await sendJob(h.queues, 'main', { id: `j-${i}` });
    let saves = 0;
    const save = h.stores.ledger.saveLedger.bind(h.stores.ledger);
    jest.spyOn(h.stores.ledger, 'saveLedger').mockImplementation((...args) => {
      // A loop of saves at one instant never lets virtual time pass: stop it here, or the test would hang.
      if (++saves > 1_000) throw new Error('a flush loop: over 1 000 saves');
      return save(...args);
    });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    expect(dispatchedEvents(h.events)).toHaveLength(5);
    // About one save per flush interval over the 3 s run, not one per step.
    expect(saves).toBeLessThan(3_000 / 200 + 10);
  });
});
