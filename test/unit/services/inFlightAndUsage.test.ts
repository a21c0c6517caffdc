import { parseServiceConfig, type ServiceConfig } from '../../../lib/config';
import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { WorkerEvent } from '../../../lib/ports/Invoker';
import { processWorkerEvent } from '../../../lib/services/worker/processWorkerEvent';
import { runOrchestrator } from '../../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent } from '../../../lib/services/orchestrator/types';
import {
  START,
  ScriptedApi,
  dispatchedEvents,
  drive,
  jobsOf,
  numberAttr,
  orchestratorHarness,
  sendJob,
  sendMain,
} from '../../helpers/serviceFixtures';

/** testConfig's timings (see serviceFixtures), with `extra` sections: a cap on calls in flight, named units. */
function config(extra: Record<string, unknown>): ServiceConfig {
  return parseServiceConfig({
    quotas: [{ limit: 5, per: 'second' }],
    pacing: {
      rampSeconds: 0,
      pauseJitterMs: 0,
      arrivalMarginMs: 0,
      callAllowanceMs: 0,
      dispatchLeadMs: 0,
      maxDispatchLeadMs: 0,
      batchWindowMs: 0,
    },
    circuit: {
      failureThreshold: 3,
      windowSeconds: 10,
      openSeconds: 2,
      healthCheckSeconds: 1,
      healthCheckTimeoutSeconds: 5,
    },
    retry: { maxAttempts: 3, baseDelayMs: 1_000 },
    orchestrator: {
      leaseTtlMs: 5_000,
      flushIntervalMs: 1_000,
      circuitPollMs: 100,
      visibilityTimeoutMs: 30_000,
      workerTimeoutMs: 5_000,
      idleWaitMs: 200,
      idleStopMs: 900_000,
      invokeBackoffMs: 100,
    },
    ...extra,
  });
}

/** Each call the API saw, from its arrival to its answer. */
interface Span {
  readonly from: number;
  readonly to: number;
}

/** The most spans in progress at one instant (a call ending at `t` no longer counts at `t`). */
function peakInProgress(spans: readonly Span[]): number {
  return Math.max(0, ...spans.map(({ from }) => spans.filter((s) => s.from <= from && s.to > from).length));
}

/**
 * A harness whose workers run the real worker code against one API that answers each call `latencyMs` after it
 * arrives (with `answer`, if given), recording every call's span. `lost(event)` says which worker events die mid-call:
 * their call goes out, but the worker reports nothing and never ends the job.
 */
function laneWithApi(
  cfg: ServiceConfig,
  latencyMs: number,
  options: { readonly answer?: (body: string) => ApiResult; readonly lost?: (event: WorkerEvent) => boolean } = {},
) {
  const spans: Span[] = [];
  const h = orchestratorHarness({
    config: cfg,
    worker: async (event, harness) => {
      const api = new ScriptedApi(harness.clock, latencyMs);
      if (options.answer !== undefined) api.answer = options.answer;
      const recording = {
        call: async (body: string, context: { readonly idempotencyKey: string }) => {
          const from = harness.clock.now();
          const result = await api.call(body, context);
          spans.push({ from, to: harness.clock.now() });
          if (options.lost?.(event) === true) await new Promise(() => undefined); // killed before it reports
          return result;
        },
        probe: () => api.probe(),
      };
      await processWorkerEvent(event, {
        clock: harness.clock,
        stores: harness.stores,
        queues: harness.queues,
        api: recording,
        config: harness.config,
        random: () => 0,
      });
    },
  });
  return { h, spans };
}

/** Pacing that batches: several slots within 500 ms go to one worker. */
const BATCHED = { rampSeconds: 0, pauseJitterMs: 0, dispatchLeadMs: 0, maxDispatchLeadMs: 0, batchWindowMs: 500 };

const flushedEvents = (events: readonly OrchestratorEvent[]) =>
  events.filter((e): e is Extract<OrchestratorEvent, { type: 'flushed' }> => e.type === 'flushed');

describe('maxInFlight', () => {
  it('never has more calls in progress than the cap, and dispatches again as soon as a worker reports its call ended', async () => {
    // 5/s would send a call every 200 ms; each takes 1 500 ms, so the cap of 2 binds.
    const { h, spans } = laneWithApi(config({ maxInFlight: 2 }), 1_500);
    await sendMain(h.queues, 8);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 9_000 }), START + 10_000);

    expect(spans).toHaveLength(8);
    expect(peakInProgress(spans)).toBe(2);
    // Each call after the first two goes within a report read (circuitPollMs, 100 ms) of a call's end: the slots
    // are used, not held until they run out.
    const ends = spans.map((s) => s.to).sort((a, b) => a - b);
    const starts = spans.map((s) => s.from).sort((a, b) => a - b);
    starts.slice(2).forEach((start, i) => expect(start - (ends[i] ?? 0)).toBeLessThanOrEqual(100));
    expect(flushedEvents(h.events).at(-1)?.inFlight).toBe(0);
  });

  it('frees the slot of a worker killed mid-call once its call can no longer be running: slot + margin + worker timeout', async () => {
    const killed = 'id-1';
    const { h, spans } = laneWithApi(config({ maxInFlight: 1 }), 500, {
      lost: (event) => jobsOf(event).some((job) => job.dispatchId === killed),
    });
    await sendMain(h.queues, 3);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 9_000 }), START + 10_000);

    const dispatched = dispatchedEvents(h.events);
    expect(dispatched[0]?.dispatchId).toBe(killed);
    // The worker timeout is 5 s and the margin 0: the next call waits for the slot until then, then each goes
    // within a report read of the one before.
    expect(dispatched[1]?.at).toBe(START + 5_000);
    expect(peakInProgress(spans)).toBe(1);
    expect(spans.length).toBeGreaterThanOrEqual(3);
  });

  it('holds across a restart: the next run counts the calls its predecessor left in progress until their workers report', async () => {
    const { h, spans } = laneWithApi(config({ maxInFlight: 2 }), 2_500);
    await sendMain(h.queues, 6);

    // The first run stops while two calls are in progress; the second starts at once.
    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 1_000 }), START + 2_000);
    const first = dispatchedEvents(h.events).length;
    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 12_000 }), START + 13_000);

    expect(first).toBe(2);
    expect(spans).toHaveLength(6);
    expect(peakInProgress(spans)).toBe(2);
  });

  it('gives health checks no slot: a probe goes while every slot is taken', async () => {
    const cfg = config({ maxInFlight: 1 });
    const { h } = laneWithApi(cfg, 4_000, { answer: () => ({ kind: 'response', status: 503, headers: {} }) });
    await sendMain(h.queues, 5);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 20_000 }), START + 21_000);

    expect(h.events.some((e) => e.type === 'health-check-sent')).toBe(true);
  });
});

describe('usage read from the answer', () => {
  // A visibility long enough to wait out the minute tier (as deployed: 120 s): a message blocked by a full window
  // waits for its slot, and sees each flush's hand-back, rather than being hidden until the window ends.
  const anthropic = {
    quotas: [
      { limit: 100, per: 'second' },
      { limit: 1_000, per: 'minute', unit: 'output_tokens' },
    ],
    usagePreset: 'anthropic',
    orchestrator: {
      leaseTtlMs: 5_000,
      flushIntervalMs: 1_000,
      circuitPollMs: 100,
      visibilityTimeoutMs: 120_000,
      workerTimeoutMs: 5_000,
      idleWaitMs: 200,
      idleStopMs: 900_000,
      invokeBackoffMs: 100,
    },
  };
  const answer = (outputTokens: number) => (): ApiResult => ({
    kind: 'response',
    status: 200,
    headers: {},
    body: JSON.stringify({
      type: 'message',
      usage: { input_tokens: 10, cache_creation_input_tokens: 0, output_tokens: outputTokens },
    }),
  });

  it('hands the unused part of each estimate back within a flush, and the next dispatches use it', async () => {
    // Estimates of 400 output tokens a call: 2 fit the minute at a time; each call uses only 100.
    const { h, spans } = laneWithApi(config(anthropic), 50, { answer: answer(100) });
    await sendMain(h.queues, 6, { output_tokens: 400 });

    // A run long enough to wait for the minute: the messages it cannot send yet wait for their slots, not hidden.
    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 70_000 }), START + 71_000);

    // Without hand-back only 2 calls would go within the minute; each gives 300 back, so all 6 go in a few flushes.
    expect(spans).toHaveLength(6);
    const handedBack = flushedEvents(h.events).reduce((sum, e) => sum + (e.handedBack.output_tokens ?? 0), 0);
    expect(handedBack).toBe(6 * 300);
    // While the token tier holds the next message, the run reads the workers' reports every circuitPollMs (100 ms)
    // rather than waiting for its next flush (every 1 000 ms): the third call goes within a read of the first two ending.
    const third = [...spans].sort((a, b) => a.from - b.from)[2];
    expect((third?.from ?? Infinity) - START).toBeLessThanOrEqual(60 + 100);
  });

  it('reserves the estimates of every job of a batch', async () => {
    // 100/s puts several slots within the batch window; the minute's 2 400 tokens hold 6 estimates of 400.
    const quotas = [
      { limit: 100, per: 'second' },
      { limit: 2_400, per: 'minute', unit: 'output_tokens' },
    ];
    const { h, spans } = laneWithApi(
      config({ ...anthropic, quotas, pacing: { ...BATCHED, arrivalMarginMs: 0, callAllowanceMs: 0 } }),
      50,
      { answer: answer(400) },
    );
    await sendMain(h.queues, 10, { output_tokens: 400 });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 10_000 }), START + 11_000);

    expect(h.workerEvents.some(({ event }) => event.kind === 'batch')).toBe(true);
    expect(spans).toHaveLength(6);
  });

  it('charges usage above the estimate in full: dispatch then waits for the window', async () => {
    // Two calls estimated at 300 tokens use 900 each: once that is known, a third estimated at 300 must wait for the
    // minute to pass, though 300 + 300 + 300 would have fitted.
    const { h, spans } = laneWithApi(config(anthropic), 50, { answer: answer(900) });
    await sendMain(h.queues, 2, { output_tokens: 300 });
    const run = runOrchestrator(h.deps, { deadline: START + 10_000 });
    await h.clock.advanceTo(START + 2_000);
    await sendJob(h.queues, 'main', { id: 'third' }, { attributes: { output_tokens: numberAttr(300) } });

    await drive(h.clock, run, START + 11_000);

    expect(spans).toHaveLength(2);
    expect(flushedEvents(h.events).every((e) => e.handedBack.output_tokens === undefined)).toBe(true);
  });

  it('dead-letters a message without an estimate of a unit that has no default, with the reason, and goes on', async () => {
    const { h, spans } = laneWithApi(config(anthropic), 50, { answer: answer(1) });
    await sendJob(h.queues, 'main', { id: 'no-estimate' });
    await sendJob(h.queues, 'main', { id: 'negative' }, { attributes: { output_tokens: numberAttr(-3) } });
    await sendJob(
      h.queues,
      'main',
      { id: 'text' },
      { attributes: { output_tokens: { dataType: 'String', value: 'many' } } },
    );
    await sendJob(h.queues, 'main', { id: 'fine' }, { attributes: { output_tokens: numberAttr(10) } });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    const reasons = h.events.flatMap((e) => (e.type === 'dead-lettered' ? [e.reason] : []));
    expect(reasons).toEqual([
      "malformed: attribute 'output_tokens' is missing: the message must carry its estimate of the unit 'output_tokens', which has no default",
      `malformed: attribute 'output_tokens' must be a Number holding an integer from 0 to 1000000000000; got Number "-3"`,
      `malformed: attribute 'output_tokens' must be a Number holding an integer from 0 to 1000000000000; got String "many"`,
    ]);
    expect(spans).toHaveLength(1);
  });
});

describe('maxInFlight and the receives', () => {
  it('receives no more than the slots can take while the messages stay covered: no message is received twice', async () => {
    // 50/s would prefetch 50 messages a refill; 2 slots of 4 s calls send one every 2 s, so most of a refill would
    // outlive its visibility's cover (25 s) in the buffer, reappear and be received again.
    const { h, spans } = laneWithApi(config({ quotas: [{ limit: 50, per: 'second' }], maxInFlight: 2 }), 4_000);
    await sendMain(h.queues, 30);
    const received: string[] = [];
    const receive = h.queues.receive.bind(h.queues);
    jest.spyOn(h.queues, 'receive').mockImplementation(async (...args) => {
      const messages = await receive(...args);
      received.push(...messages.map((m) => m.messageId));
      return messages;
    });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 80_000 }), START + 81_000);

    expect(spans).toHaveLength(30);
    expect(peakInProgress(spans)).toBe(2);
    expect(received).toHaveLength(30);
    expect(new Set(received).size).toBe(30);
  });
});
