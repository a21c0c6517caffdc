import { parseServiceConfig, type ServiceConfig } from '../../../lib/config';
import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import { processWorkerEvent } from '../../../lib/services/worker/processWorkerEvent';
import { runOrchestrator } from '../../../lib/services/orchestrator/runOrchestrator';
import {
  LANE,
  START,
  ScriptedApi,
  drive,
  orchestratorHarness,
  sendMain,
  testConfig,
} from '../../helpers/serviceFixtures';

/** Estimates of 400 tokens a call; a minute of 1 000 tokens holds two of them, and each answer uses 100. */
const ESTIMATE = 400;
const USED = 100;
const TOKENS_PER_MINUTE = 1_000;

/** An OpenAI lane (the `openai` preset) with testConfig's timings, a visibility that outlasts the minute, and `units`. */
function openaiLane(units: Record<string, unknown> = {}): ServiceConfig {
  const base = testConfig();
  return parseServiceConfig({
    lane: LANE,
    quotas: [
      { limit: 100, per: 'second' },
      { limit: TOKENS_PER_MINUTE, per: 'minute', unit: 'tokens' },
    ],
    usagePreset: 'openai',
    units,
    pacing: { ...base.pacing, batchWindowMs: 0 },
    orchestrator: { ...base.orchestrator, visibilityTimeoutMs: 120_000 },
  });
}

const completion = (used: number): ApiResult => ({
  kind: 'response',
  status: 200,
  headers: {},
  body: JSON.stringify({ usage: { prompt_tokens: 40, completion_tokens: used - 40, total_tokens: used } }),
});

/**
 * A lane whose workers run the real worker code against an API that answers 50 ms after each call, with `used` tokens
 * used, recording when each call arrived.
 */
function laneWithApi(config: ServiceConfig, used = USED) {
  const calls: number[] = [];
  const h = orchestratorHarness({
    config,
    worker: async (event, harness) => {
      const api = new ScriptedApi(harness.clock, 50, completion(used));
      await processWorkerEvent(event, {
        clock: harness.clock,
        stores: harness.stores,
        queues: harness.queues,
        api: {
          call: (body, context) => {
            calls.push(harness.clock.now());
            return api.call(body, context);
          },
          probe: () => api.probe(),
        },
        config: harness.config,
        random: () => 0,
      });
    },
  });
  return { h, calls };
}

/** The most tokens the provider counts in any minute `(T − 60 s, T]`: each call's estimate, at the call. */
function mostCountedInAMinute(calls: readonly number[]): number {
  return Math.max(0, ...calls.map((t) => calls.filter((c) => c <= t && c > t - 60_000).length * ESTIMATE));
}

describe('a provider that counts the estimate and gives nothing back (the openai preset)', () => {
  it('never sends more than its limiter allows: what an answer did not use is not handed back', async () => {
    const { h, calls } = laneWithApi(openaiLane());
    await sendMain(h.queues, 6, { tokens: ESTIMATE });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 70_000 }), START + 71_000);

    expect(mostCountedInAMinute(calls)).toBeLessThanOrEqual(TOKENS_PER_MINUTE);
    expect(calls.filter((t) => t < START + 60_000)).toHaveLength(2);
    const handedBack = h.events.reduce((sum, e) => sum + (e.type === 'flushed' ? (e.handedBack.tokens ?? 0) : 0), 0);
    expect(handedBack).toBe(0);
  });

  it("reads the workers' reports only at its flushes while such a tier holds the next message: none can hand back", async () => {
    // Answers that use the whole estimate: the tier holds the third message for a minute either way. The run reads in
    // the first 5 s, while the calls dispatched at its start may still report.
    const reads = async (config: ServiceConfig) => {
      const { h } = laneWithApi(config, ESTIMATE);
      await sendMain(h.queues, 3, { tokens: ESTIMATE });
      const at: number[] = [];
      const pending = h.stores.ledger.pendingSettlements.bind(h.stores.ledger);
      jest.spyOn(h.stores.ledger, 'pendingSettlements').mockImplementation((lane) => {
        at.push(h.clock.now());
        return pending(lane);
      });
      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 70_000 }), START + 71_000);
      return at.filter((t) => t < START + 5_000).length;
    };
    // A provider that counts the usage may hand back: the run reads every circuitPollMs (100 ms) while held.
    expect(await reads(openaiLane({ tokens: { counts: 'usage' } }))).toBeGreaterThan(20);
    // One that counts the estimate: only each flush's read (those of the start, then one every 1 000 ms).
    expect(await reads(openaiLane())).toBeLessThanOrEqual(7);
  });
});
