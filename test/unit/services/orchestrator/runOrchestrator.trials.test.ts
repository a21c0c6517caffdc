import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import type { ServiceConfig } from '../../../../lib/config';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import { processWorkerEvent } from '../../../../lib/services/worker/processWorkerEvent';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import {
  LANE,
  START,
  ScriptedApi,
  drive,
  httpStatus,
  jobsOf,
  ok,
  orchestratorHarness,
  rel,
  sendMain,
  testConfig,
  type OrchestratorHarness,
} from '../../../helpers/serviceFixtures';

/**
 * An orchestrator whose workers call `api` with the real worker service, the circuit opened at START by a 401: the
 * key was revoked. The API refuses every job until `keyBackAt`, and its health URL, which needs no key, answers 200.
 */
async function revokedKey(
  keyBackAt: number,
  config: ServiceConfig = testConfig(),
): Promise<{ h: OrchestratorHarness; api: ScriptedApi }> {
  const clock = new FakeClock(START);
  const api = new ScriptedApi(clock);
  api.answer = () => (clock.now() < keyBackAt ? httpStatus(401) : ok());
  const h = orchestratorHarness({
    clock,
    config,
    worker: (event, { stores, queues }) =>
      processWorkerEvent(event, { clock, stores, queues, api, config, random: () => 0 }),
  });
  const rejected = { type: 'caller-rejected', reason: 'HTTP 401 Unauthorized' } as const;
  await applyCircuitEvent(h.stores.circuit, LANE, rejected, START, circuitPolicyFrom(config.circuit));
  return { h, api };
}

describe('runOrchestrator: a circuit a refusal of the caller opened', () => {
  it('is tried with one job alone at a time, never closed by a probe, and closed by the first job that succeeds', async () => {
    const { h, api } = await revokedKey(START + 6_000);
    await sendMain(h.queues, 4);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 12_000 }), START + 13_000);

    expect(api.probes).toBe(0);
    expect(h.workerEvents.filter(({ event }) => event.kind === 'health-check')).toEqual([]);
    // The first trial openSeconds (2 s) after the open, then after 1, 2 and 4 s: each refused, until the key is back.
    const calls = rel(api.calls.map((c) => c.at));
    expect(calls.slice(0, 4)).toEqual([2_000, 3_000, 5_000, 9_000]);
    const trials = h.workerEvents.flatMap(({ event }) => jobsOf(event)).filter((job) => job.trial !== undefined);
    expect(trials.map((job) => rel([job.slotAt])[0])).toEqual([2_000, 3_000, 5_000, 9_000]);
    expect(h.workerEvents.slice(0, 4).every(({ event }) => event.kind === 'job')).toBe(true);
    // The job that passed closed the circuit; the others followed it.
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', closedAt: START + 9_000 },
    });
    expect(calls).toHaveLength(7);
    expect(h.queues.depth('main') + h.queues.depth('requeue') + h.queues.depth('main-dlq')).toBe(0);
  });

  it('receives one message for each trial, leaving the rest of the backlog unreceived', async () => {
    const { h } = await revokedKey(Number.POSITIVE_INFINITY);
    await sendMain(h.queues, 5);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 6_000 }), START + 7_000);

    expect(summary).toMatchObject({ dispatched: 3, healthChecks: 0 });
    // The first message, refused and kept, is tried again from the requeue queue; the others were never received.
    expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0, 0, 0]);
    expect(new Set(h.workerEvents.flatMap(({ event }) => jobsOf(event)).map((job) => job.body))).toEqual(
      new Set(['{"id":"j-1"}']),
    );
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', trial: 'job', failedChecks: 3 },
    });
  });

  it('is closed by a probe when the probe checks the key', async () => {
    const { h, api } = await revokedKey(START + 1_000, testConfig({ circuit: { probeChecksKey: true } }));
    await sendMain(h.queues, 2);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 4_000 }), START + 5_000);

    expect(api.probes).toBe(1);
    expect(rel(api.calls.map((c) => c.at))).toEqual([2_100, 2_300]);
  });
});
