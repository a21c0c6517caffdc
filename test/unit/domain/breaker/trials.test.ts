import { INITIAL_CIRCUIT, isDispatchAllowed } from '../../../../lib/domain/breaker/circuit';
import { parseBreakerSettings } from '../../../../lib/domain/breaker/settings';
import type { Circuit, CircuitEvent } from '../../../../lib/domain/breaker/state';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import { circuitsAt, failures, OPENED_ON, S, started, T0 } from '../../../helpers/circuitFixtures';

const sent = (checkId: string): CircuitEvent => ({ type: 'health-check-sent', checkId });
const jobStarted = (checkId: string): CircuitEvent => ({ type: 'health-check-started', checkId, trial: 'job' });
const ok = (checkId: string): CircuitEvent => ({ type: 'health-check-ok', checkId });
const failed = (checkId: string): CircuitEvent => ({ type: 'health-check-failed', checkId });
const unauthorized: CircuitEvent = { type: 'caller-rejected', reason: 'HTTP 401 Unauthorized' };
const notFound: CircuitEvent = { type: 'client-error', reason: 'HTTP 404 Not Found' };
const REVOKED = 'caller rejected: HTTP 401 Unauthorized';

let clock: FakeClock;
beforeEach(() => {
  clock = new FakeClock(T0);
});

const { apply, applyAll, openCircuit, halfOpenCircuit } = circuitsAt(() => clock.now());

/** The circuit a 401 opened, its first check due 10 s later and sent then as `c1`. */
async function jobTrialSent(): Promise<Circuit> {
  const opened = apply(INITIAL_CIRCUIT, unauthorized);
  await clock.advance(10_000);
  return apply(opened, sent('c1'));
}

describe('transition: a circuit tried with a job', () => {
  describe('opening', () => {
    it('is how a 401 or 403 opens it, and how a run of other 4xx opens it', () => {
      expect(apply(INITIAL_CIRCUIT, unauthorized).state).toMatchObject({ status: 'open', trial: 'job' });
      const run = parseBreakerSettings({ callerRejectThreshold: 2 });
      const opened = apply(apply(INITIAL_CIRCUIT, notFound, run), notFound, run);
      expect(opened.state).toMatchObject({ status: 'open', trial: 'job' });
    });

    it('leaves a 401 to a probe when the probe checks the key', () => {
      const checksKey = parseBreakerSettings({ ...S, probeChecksKey: true });
      expect(apply(INITIAL_CIRCUIT, unauthorized, checksKey).state).not.toHaveProperty('trial');
    });

    it('leaves an outage to a probe', () => {
      expect(applyAll(INITIAL_CIRCUIT, failures(S.failureThreshold)).state).not.toHaveProperty('trial');
    });
  });

  describe('its check', () => {
    it('goes half-open with the check as the job’s trial, and records it as one', async () => {
      const circuit = await jobTrialSent();
      expect(circuit.state).toMatchObject({ status: 'half-open', checkId: 'c1', trial: 'job', probeStartedAt: null });
      expect(circuit.transitions.at(-1)).toMatchObject({ from: 'open', to: 'half-open', reason: 'trial job c1 sent' });
      expect(isDispatchAllowed(circuit)).toBe(false);
    });

    it('is claimed by its job only, not by a probe', async () => {
      const circuit = await jobTrialSent();
      expect(apply(circuit, started('c1'))).toBe(circuit);
      expect(apply(circuit, jobStarted('c1')).state).toMatchObject({ probeStartedAt: T0 + 10_000 });
    });

    it('lets no job claim the check of a circuit tried with a probe', () => {
      const circuit = halfOpenCircuit();
      expect(apply(circuit, jobStarted('c1'))).toBe(circuit);
    });

    it('closes when the job’s call succeeds, ending the run of refusals, and records it', async () => {
      const run = parseBreakerSettings({ callerRejectThreshold: 2 });
      const opened = apply(apply(INITIAL_CIRCUIT, notFound, run), notFound, run);
      await clock.advance(10_000);
      const closed = applyAll(opened, [sent('c1'), jobStarted('c1'), ok('c1')]);
      expect(closed).toMatchObject({ clientErrorRun: 0, state: { status: 'closed', closedAt: T0 + 10_000 } });
      expect(closed.transitions.at(-1)).toMatchObject({ to: 'closed', reason: 'trial job c1 passed' });
    });

    it('reopens when the job is refused again, tried with a job still, each wait twice the last', async () => {
      let circuit = await jobTrialSent();
      const waits: number[] = [];
      for (const checkId of ['c1', 'c2', 'c3', 'c4']) {
        if (checkId !== 'c1') circuit = apply(circuit, sent(checkId));
        circuit = applyAll(circuit, [jobStarted(checkId), failed(checkId)]);
        if (circuit.state.status !== 'open') throw new Error('expected open');
        expect(circuit.state).toMatchObject({ reason: REVOKED, trial: 'job' });
        waits.push(circuit.state.nextCheckAt - clock.now());
        await clock.advanceTo(circuit.state.nextCheckAt);
      }
      expect(waits).toEqual([5_000, 10_000, 20_000, 40_000]);
    });

    it('keeps the job’s trial when a check that timed out is replaced', async () => {
      const circuit = await jobTrialSent();
      await clock.advance(S.healthCheckTimeoutSeconds * 1000);
      expect(apply(circuit, sent('c2')).state).toMatchObject({ checkId: 'c2', trial: 'job', failedChecks: 1 });
    });
  });

  describe('a refusal of the caller while open for another reason', () => {
    it('turns the check of a circuit open for an outage into a job’s, keeping when it is due', () => {
      const circuit = openCircuit();
      const next = apply(circuit, unauthorized);
      expect(next.state).toEqual({ ...circuit.state, reason: REVOKED, trial: 'job' });
      expect(next.version).toBe(circuit.version + 1);
    });

    it('sends a half-open circuit’s probe back, the job due at once: the probe’s result is stale then', async () => {
      const probing = apply(halfOpenCircuit({ reason: OPENED_ON }), started('c1'));
      const next = apply(probing, unauthorized);
      expect(next.state).toMatchObject({ status: 'open', nextCheckAt: T0, reason: REVOKED, trial: 'job' });
      expect(next.transitions.at(-1)).toMatchObject({ from: 'half-open', to: 'open', reason: REVOKED });
      expect(apply(next, ok('c1'))).toBe(next);
    });

    it('turns it into a job’s on a run of other 4xx as long as the threshold', () => {
      const run = parseBreakerSettings({ ...S, callerRejectThreshold: 2 });
      const once = apply(openCircuit(), notFound, run);
      expect(once.state).not.toHaveProperty('trial');
      expect(apply(once, notFound, run).state).toMatchObject({ trial: 'job', reason: /on 2 jobs in a row$/ });
    });

    it('leaves a circuit an operator forced open as it is', () => {
      const forced = apply(openCircuit(), { type: 'operator-opened', by: 'alice' });
      expect(apply(forced, unauthorized)).toBe(forced);
    });

    it('leaves the check to a probe when the probe checks the key', () => {
      const circuit = openCircuit();
      const checksKey = parseBreakerSettings({ ...S, probeChecksKey: true });
      expect(apply(circuit, unauthorized, checksKey)).toBe(circuit);
    });
  });
});
