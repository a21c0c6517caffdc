import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { processHealthCheck } from '../../../../lib/services/worker/processHealthCheck';
import type { WorkerReport } from '../../../../lib/services/worker/types';
import { SlowKeyApi } from '../../../../tools/faults/conditions/slowKeyWorld';
import {
  LANE,
  START,
  httpStatus,
  openCircuit,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';

describe('processHealthCheck', () => {
  /** A circuit opened at START and half-open since START + openSeconds with check `c-1`. */
  async function halfOpen(h: WorkerHarness): Promise<void> {
    await openCircuit(h.stores.circuit, h.config, START);
    await h.clock.advanceTo(START + 2_000);
    const { after } = await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-sent', checkId: 'c-1' },
      h.clock.now(),
      circuitPolicyFrom(h.config.circuit),
    );
    expect(after.state).toMatchObject({ status: 'half-open', checkId: 'c-1' });
  }

  const check = (checkId = 'c-1', sentAt = START + 2_000) =>
    ({ kind: 'health-check', lane: LANE, checkId, sentAt }) as const;

  it('claims the check, probes, and closes the circuit when the probe succeeds', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(100);

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('healthy');

    expect(h.api.probes).toBe(1);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: { status: 'closed', failures: [], closedAt: START + 2_100, reopenStreak: 0 },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [
        { at: START, from: 'closed', to: 'open', reason: '3 transient failures within 10 s' },
        { at: START + 2_000, from: 'open', to: 'half-open', reason: 'health check c-1 sent' },
        { at: START + 2_100, from: 'half-open', to: 'closed', reason: 'health check c-1 passed' },
      ],
      version: 6,
    });
  });

  it('records the probe start before it calls, so the timeout counts from there', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.latencyMs = 1_000;
    await h.clock.advance(1_500);

    const probing = processHealthCheck(check(), h.deps);
    await h.clock.advance(1);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'half-open', checkId: 'c-1', probeStartedAt: START + 3_500 },
    });
    await h.clock.advance(1_000);
    await expect(probing).resolves.toBe('healthy');
  });

  it('keeps the circuit open when the probe fails, with the next check healthCheckSeconds later and the reason kept', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(100);
    h.api.probeAnswers.push(httpStatus(503));

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual({
      state: {
        status: 'open',
        openedAt: START,
        nextCheckAt: START + 2_100 + 1_000,
        failedChecks: 1,
        reopenStreak: 0,
        reason: '3 transient failures within 10 s',
      },
      pausedUntil: 0,
      clientErrorRun: 0,
      hold: null,
      transitions: [
        { at: START, from: 'closed', to: 'open', reason: '3 transient failures within 10 s' },
        { at: START + 2_000, from: 'open', to: 'half-open', reason: 'health check c-1 sent' },
        { at: START + 2_100, from: 'half-open', to: 'open', reason: 'health check c-1 failed' },
      ],
      version: 6,
    });
  });

  it('counts a probe refused with 401 as failed: the circuit stays open until the key is fixed', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.probeAnswers.push(httpStatus(401));

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'open', failedChecks: 1 },
    });
  });

  it('makes no call for a check that is not current, and changes nothing', async () => {
    const h = workerHarness();
    await halfOpen(h);
    const before = await loadCircuit(h.stores.circuit, LANE);

    await expect(processHealthCheck(check('c-0', START), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual(before);
  });

  it('makes no call when the circuit is closed, and writes nothing', async () => {
    const h = workerHarness();

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
    await expect(h.stores.circuit.loadCircuit(LANE)).resolves.toBeUndefined();
  });

  it('makes no call for a second delivery of a check whose probe is running: one probe at a time', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.latencyMs = 3_000;

    const first = processHealthCheck(check(), h.deps);
    await h.clock.advance(1_000);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');
    await h.clock.advance(2_000);

    await expect(first).resolves.toBe('healthy');
    expect(h.api.probes).toBe(1);
  });

  it('makes no call for a delivery of a check after its first delivery ended', async () => {
    const h = workerHarness();
    await halfOpen(h);
    h.api.probeAnswers.push(httpStatus(503));
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('unhealthy');

    await h.clock.advance(10_000);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(1);
  });

  it('makes no call for a check that started too late: past the timeout, the orchestrator may already have replaced it', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(5_000);

    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');

    expect(h.api.probes).toBe(0);
  });

  it('makes no call for the late delivery of a check that was replaced, while the replacement probes', async () => {
    const h = workerHarness();
    await halfOpen(h);
    await h.clock.advance(5_000);
    const policy = circuitPolicyFrom(h.config.circuit);
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-sent', checkId: 'c-2' },
      h.clock.now(),
      policy,
    );
    h.api.latencyMs = 2_000;

    const replacement = processHealthCheck(check('c-2', START + 7_000), h.deps);
    await h.clock.advance(500);
    await expect(processHealthCheck(check(), h.deps)).resolves.toBe('not-current');
    await h.clock.advance(1_500);

    await expect(replacement).resolves.toBe('healthy');
    expect(h.api.probes).toBe(1);
  });

  describe('with a key to read', () => {
    it('reads it before it claims the check: the timeout counts from the claim, with the key in hand', async () => {
      const h = workerHarness();
      await halfOpen(h);
      h.api.latencyMs = 4_000;
      const deps = { ...h.deps, api: new SlowKeyApi(h.api, h.clock, 3_000) };

      const probing = processHealthCheck(check(), deps);
      await h.clock.advance(1);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
        state: { status: 'half-open', checkId: 'c-1', probeStartedAt: null },
      });
      await h.clock.advance(2_999);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
        state: { status: 'half-open', checkId: 'c-1', probeStartedAt: START + 5_000 },
      });
      // A 3 s read and a 4 s answer outlive the 5 s timeout, yet the check is still the one trial when it answers.
      await h.clock.advance(4_000);
      await expect(probing).resolves.toBe('healthy');
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'closed' } });
    });

    it('prepares the caller for a probe, so that a caller whose probes carry no key reads none', async () => {
      const h = workerHarness();
      await halfOpen(h);
      const api = new SlowKeyApi(h.api, h.clock, 0);
      const prepare = jest.spyOn(api, 'prepare');

      const probing = processHealthCheck(check(), { ...h.deps, api });
      await h.clock.advance(100);

      await expect(probing).resolves.toBe('healthy');
      expect(prepare.mock.calls).toEqual([['probe']]);
    });

    it('claims nothing and probes nothing when the key cannot be read: the check times out unclaimed', async () => {
      const h = workerHarness();
      await halfOpen(h);
      const before = await loadCircuit(h.stores.circuit, LANE);
      const reports: WorkerReport[] = [];
      const api = new SlowKeyApi(h.api, h.clock, 50, 'no authorization: AccessDeniedException');
      const deps = { ...h.deps, api, onEvent: (report: WorkerReport) => reports.push(report) };

      const probing = processHealthCheck(check(), deps);
      await h.clock.advance(50);

      await expect(probing).resolves.toBe('not-ready');
      expect(h.api.probes).toBe(0);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toEqual(before);
      expect(reports).toEqual([
        {
          type: 'caller-not-ready',
          lane: LANE,
          at: START + 2_050,
          reason: 'no authorization: AccessDeniedException',
          checkId: 'c-1',
        },
      ]);
    });
  });
});
