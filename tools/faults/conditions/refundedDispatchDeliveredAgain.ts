import { processJob } from '../../../lib/services/worker/processJob';
import { dispatchNext, workerWorld } from './harness';
import type { ConditionCheck, ConditionScenario } from './types';

/**
 * Condition 1: two dispatches of one message, and the one that stood back and refunded is delivered again. Dispatch
 * d-1's invoke may have started: its message came back after its visibility and went out again as d-2, while d-1's
 * event waited in Lambda's queue. d-2 finds d-1 calling, stands back and gives its reservation back; d-1's call then
 * fails, and Lambda delivers d-2's event a second time, before its `callBy`.
 */
export const refundedDispatchDeliveredAgain: ConditionScenario = {
  name: 'refunded-dispatch-delivered-again',
  condition: 1,
  injects:
    "a second dispatch of a message that stood back and refunded, delivered again once the first dispatch's call failed",
  breaks: 'it claims the key over the failed record and calls on the reservation it gave back: the tiers under-count',
  async run(): Promise<ConditionCheck> {
    const world = workerWorld();
    const { clock, queues, stores, api, deps } = world;
    const start = clock.now();
    await queues.send('main', { body: '{"id":"a"}', attributes: {} });
    const first = await dispatchNext(world, 'main', 'd-1', { slotAt: start + 30_000, callBy: start + 30_100 });
    await clock.advance(30_000);
    const second = await dispatchNext(world, 'main', 'd-2', { callBy: clock.now() + 1_000 });
    api.latencyMs = 500;
    api.answers.push({ kind: 'response', status: 503, headers: {} });
    const calling = processJob(first, deps);
    const stoodBack = await processJob(second, deps);
    await clock.advance(500);
    await calling;
    api.latencyMs = 0;
    const again = await processJob(second, deps);

    const refunds = (await stores.ledger.pendingSettlements(deps.config.lane)).filter((s) => s.id === 'd-2');
    const held = stoodBack === 'busy-elsewhere' && api.calls.length === 1 && refunds.length === 1;
    return {
      held,
      detail: held
        ? `d-2 stood back and refunded once; delivered again, it ended '${again}' without a call`
        : `d-2 ended '${stoodBack}', then '${again}': ${api.calls.length} calls for one message, ${refunds.length} refunds of d-2`,
    };
  },
};
