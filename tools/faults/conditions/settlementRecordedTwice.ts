import { parseServiceConfig } from '../../../lib/config';
import { QuotaLedger, type Settlement } from '../../../lib/domain/quota/ledger';
import type { LedgerStore } from '../../../lib/ports/LedgerStore';
import { processJob } from '../../../lib/services/worker/processJob';
import { dispatchNext, workerWorld } from './harness';
import type { ConditionCheck, ConditionScenario } from './types';

/** A lane counting the `cost` a call reports (`x-actual-cost`), 1,000 a minute. */
const COST_CONFIG = parseServiceConfig({
  lane: 'api',
  quotas: [
    { limit: 5, per: 'second' },
    { limit: 1_000, per: 'minute', unit: 'cost' },
  ],
  orchestrator: { visibilityTimeoutMs: 30_000, workerTimeoutMs: 5_000 },
});

/** A settlement recorder whose appends all land and then fail, as writes whose answers were lost on every try. */
function answersLost(ledger: LedgerStore): Pick<LedgerStore, 'addSettlements'> {
  return {
    async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
      await ledger.addSettlements(lane, ...settlements);
      throw new Error('InternalServerError: the append landed, and its answer was lost');
    },
  };
}

/**
 * Condition 5: a call reserved 700 units of cost and used 300. Every append of its settlement lands and loses its
 * answer, so the worker keeps the message with the settlement in its success record; the next dispatch, a run later,
 * records it again. Each copy is folded in a run of its own.
 */
export const settlementRecordedTwice: ConditionScenario = {
  name: 'settlement-recorded-twice',
  condition: 5,
  injects:
    "a settlement whose appends land and lose their answers on every try, recorded again by the message's next dispatch",
  breaks: 'each copy folded in its own run hands the unused 400 back again: the tier counts less than the API saw',
  async run(): Promise<ConditionCheck> {
    const world = workerWorld(COST_CONFIG);
    const { clock, queues, stores, api, deps } = world;
    await queues.send('main', { body: '{"id":"a"}', attributes: { cost: { dataType: 'Number', value: '700' } } });
    api.answers.push({ kind: 'response', status: 200, headers: { 'x-actual-cost': '300' } });
    const first = await dispatchNext(world, 'main', 'd-1');
    const settling = processJob(first, { ...deps, stores: { ...stores, ledger: answersLost(stores.ledger) } }).catch(
      (error: unknown) => (error instanceof Error ? error.name : 'error'),
    );
    await clock.advance(COST_CONFIG.orchestrator.workerTimeoutMs);
    const firstOutcome = await settling;
    await clock.advance(COST_CONFIG.orchestrator.visibilityTimeoutMs);
    const secondOutcome = await processJob(await dispatchNext(world, 'main', 'd-2'), deps);

    const copies = (await stores.ledger.pendingSettlements(COST_CONFIG.lane)).filter((s) => s.id === 'd-1');
    const ledger = new QuotaLedger(COST_CONFIG.quotas);
    const reservation = ledger.reserve(first.reservation.at, { cost: 700 });
    for (const copy of copies) ledger.settle({ ...copy, reservation });
    const counted = ledger.usage(first.reservation.at).find((u) => u.tier.unit === 'cost')?.used ?? 0;
    const held = counted >= 300 && api.calls.length === 1;
    return {
      held,
      detail: `the first worker ended with ${firstOutcome}, the next dispatch '${secondOutcome}'; ${copies.length} copies of the settlement folded one run each: the cost tier counts ${counted} of the 300 the call used (${api.calls.length} call)`,
    };
  },
};
