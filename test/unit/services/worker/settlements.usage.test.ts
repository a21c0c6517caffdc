import { parseServiceConfig, type ServiceConfig } from '../../../../lib/config';
import type { ApiResult } from '../../../../lib/domain/outcome/apiResult';
import { processJob } from '../../../../lib/services/worker/processJob';
import { processWorkerEvent } from '../../../../lib/services/worker/processWorkerEvent';
import {
  LANE,
  httpStatus,
  numberAttr,
  receiveJobEvent,
  sendJob,
  workerHarness,
} from '../../../helpers/serviceFixtures';

/**
 * A lane counting tokens, reading OpenAI-shaped answers, with `extra` settings: by default of a provider that counts
 * the usage (`units.tokens.counts: usage`, where the `openai` preset counts the estimate).
 */
function llmConfig(extra: Record<string, unknown> = {}): ServiceConfig {
  return parseServiceConfig({
    lane: LANE,
    quotas: [
      { limit: 100, per: 'minute' },
      { limit: 90_000, per: 'minute', unit: 'tokens' },
    ],
    usagePreset: 'openai',
    units: { tokens: { counts: 'usage' } },
    pacing: { arrivalMarginMs: 0, callAllowanceMs: 0, dispatchLeadMs: 0, maxDispatchLeadMs: 0 },
    ...extra,
  });
}

const completion = (totalTokens: number): ApiResult => ({
  kind: 'response',
  status: 200,
  headers: {},
  body: JSON.stringify({
    id: 'chatcmpl-1',
    usage: { prompt_tokens: 10, completion_tokens: totalTokens - 10, total_tokens: totalTokens },
  }),
});

async function oneJob(config: ServiceConfig, answer: ApiResult, tokens = 500) {
  const h = workerHarness(config);
  h.api.fallback = answer;
  await sendJob(h.queues, 'main', { id: 'j-1' }, { attributes: { tokens: numberAttr(tokens) } });
  const event = await receiveJobEvent(h, 'main', 'd-1');
  const outcome = await processJob(event, h.deps);
  return { h, event, outcome, settlements: await h.stores.ledger.pendingSettlements(LANE) };
}

describe('a worker reports what its call used', () => {
  it('settles the estimate with the usage the answer reports, naming its dispatch', async () => {
    const { event, outcome, settlements } = await oneJob(llmConfig(), completion(180));
    expect(outcome).toBe('succeeded');
    expect(settlements).toEqual([{ reservation: event.reservation, actual: { tokens: 180 }, id: 'd-1' }]);
  });

  it('owes nothing when the usage equals the estimate, or when the answer does not say (the estimate stands)', async () => {
    expect((await oneJob(llmConfig(), completion(500))).settlements).toEqual([]);
    expect(
      (await oneJob(llmConfig(), { kind: 'response', status: 200, headers: {}, body: 'not json' })).settlements,
    ).toEqual([]);
    expect(
      (await oneJob(llmConfig(), { kind: 'response', status: 200, headers: {}, body: '{"usage": {}}' })).settlements,
    ).toEqual([]);
  });

  describe('to a provider that counts the estimate (the openai preset)', () => {
    const openai = () => llmConfig({ units: {} });

    it('hands nothing back when the call used less than its estimate (it owes nothing), and charges usage above it', async () => {
      expect(openai().units.tokens?.counts).toBe('estimate');
      expect((await oneJob(openai(), completion(180))).settlements).toEqual([]);
      const { event, settlements } = await oneJob(openai(), completion(640));
      expect(settlements).toEqual([{ reservation: event.reservation, actual: { tokens: 640 }, id: 'd-1' }]);
    });

    it('on a lane with maxInFlight, only frees the slot of a call that used less, changing no count', async () => {
      const { event, settlements } = await oneJob(llmConfig({ units: {}, maxInFlight: 4 }), completion(180));
      expect(settlements).toEqual([{ reservation: event.reservation, actual: {}, id: 'd-1' }]);
    });
  });

  it('on a lane with maxInFlight, frees the call slot when usage equals the estimate, with a settlement that changes no count', async () => {
    const { event, settlements } = await oneJob(llmConfig({ maxInFlight: 4 }), completion(500));
    expect(settlements).toEqual([{ reservation: event.reservation, actual: {}, id: 'd-1' }]);
  });

  it('on a lane with maxInFlight, frees the slot of a call that failed too, once', async () => {
    const { event, outcome, settlements } = await oneJob(llmConfig({ maxInFlight: 4 }), httpStatus(503));
    expect(outcome).toBe('retried');
    expect(settlements).toEqual([{ reservation: event.reservation, actual: {}, id: 'd-1' }]);
  });

  it('frees every slot of a batch, each with its own settlement as its call ends', async () => {
    const h = workerHarness(llmConfig({ maxInFlight: 4 }));
    h.api.answer = (_body, call) => (call === 1 ? completion(120) : completion(500));
    for (const id of ['a', 'b']) await sendJob(h.queues, 'main', { id }, { attributes: { tokens: numberAttr(500) } });
    const jobs = [await receiveJobEvent(h, 'main', 'b-1'), await receiveJobEvent(h, 'main', 'b-1.1')];

    await processWorkerEvent({ kind: 'batch', lane: LANE, jobs, sentAt: h.clock.now() }, h.deps);

    const settlements = await h.stores.ledger.pendingSettlements(LANE);
    expect(settlements.map((s) => [s.id, s.actual]).sort()).toEqual([
      ['b-1', { tokens: 120 }],
      ['b-1.1', {}],
    ]);
  });

  it('a second delivery of the same event, which makes no call, frees nothing more', async () => {
    const { h, event } = await oneJob(llmConfig({ maxInFlight: 4 }), completion(500));
    await processJob(event, h.deps);
    expect(await h.stores.ledger.pendingSettlements(LANE)).toHaveLength(1);
  });
});
