import { processJob } from '../../../lib/services/worker/processJob';
import { dispatchNext, workerWorld } from './harness';
import type { ConditionCheck, ConditionScenario } from './types';

/**
 * Condition 2: a late repeat of a dispatch that called. The job's first dispatch called and failed, its retry failed
 * too, and then Lambda delivers the first dispatch's event again, after its `callBy`.
 */
export const lateRepeatOfCalledDispatch: ConditionScenario = {
  name: 'late-repeat-of-a-dispatch-that-called',
  condition: 2,
  injects: "the first attempt's event delivered again, late, after that attempt and the next one both failed",
  breaks:
    'the late event claims the key over the retry’s failed record: it gives back a reservation its call used, requeues a second copy of the job at attempt 1, and reports a late start',
  async run(): Promise<ConditionCheck> {
    const world = workerWorld();
    const { clock, queues, stores, api, deps } = world;
    await queues.send('main', { body: '{"id":"a"}', attributes: {} });
    const unavailable = { kind: 'response', status: 503, headers: {} } as const;
    api.answers.push(unavailable, unavailable);
    const first = await dispatchNext(world, 'main', 'd-1');
    await processJob(first, deps);
    await clock.advance(1_000);
    await processJob(await dispatchNext(world, 'requeue', 'd-2'), deps);
    await clock.advance(1_000);
    const late = await processJob(first, deps);

    const settlements = await stores.ledger.pendingSettlements(deps.config.lane);
    const copies = queues.messages('requeue').map((m) => m.attributes.attempt?.value ?? '?');
    const held = api.calls.length === 2 && settlements.length === 0 && copies.join() === '3';
    return {
      held,
      detail: held
        ? `the late repeat ended '${late}': nothing given back, one copy of the job queued (attempt 3)`
        : `the late repeat ended '${late}': ${settlements.length} settlements (${settlements.map((s) => s.id).join(', ')}), copies queued at attempts ${copies.join(', ')}, ${api.calls.length} calls`,
    };
  },
};
