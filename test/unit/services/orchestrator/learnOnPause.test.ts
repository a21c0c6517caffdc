/**
 * A 429 that comes with the API's word on its limits: the run folds that word in as soon as it sees the 429's pause,
 * before the pause ends, so that dispatch resumes at the limit the API announced rather than at the one it refused.
 */
import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { applyCircuitEvent } from '../../../../lib/services/circuitUpdates';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent } from '../../../../lib/services/orchestrator/types';
import {
  dispatchedEvents,
  drive,
  LANE,
  orchestratorHarness,
  sendMain,
  START,
  testConfig,
} from '../../../helpers/serviceFixtures';
import { maxWindowUsage } from '../../../helpers/windowReferee';

/** 10 requests a second configured; the API's headers (IETF) speak of a one-second window; learnt limits enforced. */
const config = testConfig({
  quotas: [{ limit: 10, per: 'second' }],
  limits: { headers: 'ietf', per: 'second', learn: 'enforce' },
});

describe('a run that sees a 429 pause', () => {
  it('learns the limit the API announced with it before the pause ends, and resumes at that limit', async () => {
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 60);
    const running = runOrchestrator(h.deps, { deadline: START + 6_000 });
    // 1.1 s in, between two flushes (every 2 s): a worker's 429 says the API now allows 4 a second, and pauses the
    // lane for 400 ms.
    await h.clock.advance(1_100);
    await h.stores.limits.recordReading(LANE, { family: 'requests', limit: 4, at: START + 1_100 });
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'rate-limited', retryAt: START + 1_500 },
      START + 1_100,
      circuitPolicyFrom(config.circuit),
    );
    await drive(h.clock, running, START + 7_000);

    const learnt = h.events.find(
      (e): e is Extract<OrchestratorEvent, { type: 'limit-changed' }> => e.type === 'limit-changed',
    );
    expect(learnt).toMatchObject({ tier: '10/second', from: 10, to: 4, source: 'header' });
    // Within a circuit read (every 250 ms while dispatching) of the pause, not at the next flush (2 s).
    expect((learnt?.at ?? 0) - START).toBeLessThan(1_500);
    const resumed = dispatchedEvents(h.events).filter((e) => e.at >= START + 1_500);
    expect(resumed.length).toBeGreaterThanOrEqual(8);
    expect(maxWindowUsage(resumed, parseTiers([{ limit: 4, per: 'second' }])[0]!)).toBeLessThanOrEqual(4);
  });
});
