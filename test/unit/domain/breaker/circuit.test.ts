import fc from 'fast-check';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import {
  healthCheckDueAt,
  INITIAL_CIRCUIT,
  isDispatchAllowed,
  isHeld,
  isProbeStarted,
  NEVER_DUE,
  transition,
} from '../../../../lib/domain/breaker/circuit';
import { circuitFromJSON, circuitToJSON } from '../../../../lib/domain/breaker/circuitJSON';
import type { Circuit, CircuitEvent, OperatorEvent } from '../../../../lib/domain/breaker/state';
import { circuitPolicyFrom, type CircuitPolicy } from '../../../../lib/domain/breaker/policy';
import { parseBreakerSettings } from '../../../../lib/domain/breaker/settings';
import { MAX_TRANSITION_REASON, MAX_TRANSITIONS_KEPT } from '../../../../lib/domain/breaker/transitionLog';
import {
  circuitIn,
  circuitsAt,
  FAILURE,
  failures,
  OPENED_ON,
  P,
  S,
  started,
  T0,
} from '../../../helpers/circuitFixtures';

const SUCCESS: CircuitEvent = { type: 'success' };
const sent = (checkId: string): CircuitEvent => ({ type: 'health-check-sent', checkId });
const ok = (checkId: string): CircuitEvent => ({ type: 'health-check-ok', checkId });
const failed = (checkId: string): CircuitEvent => ({ type: 'health-check-failed', checkId });
const limited = (retryAt: number): CircuitEvent => ({ type: 'rate-limited', retryAt });
const rejected = (reason = 'HTTP 401 Unauthorized'): CircuitEvent => ({ type: 'caller-rejected', reason });
const clientError = (reason = 'HTTP 404 Not Found'): CircuitEvent => ({ type: 'client-error', reason });

let clock: FakeClock;
beforeEach(() => {
  clock = new FakeClock(T0);
});

const { apply, applyAll, openCircuit, halfOpenCircuit } = circuitsAt(() => clock.now());

function expectChanged(before: Circuit, after: Circuit): void {
  expect(after).not.toBe(before);
  expect(after.version).toBe(before.version + 1);
}

describe('transition', () => {
  describe('closed', () => {
    it('records a transient failure with its instant', () => {
      const next = apply(INITIAL_CIRCUIT, FAILURE);
      expectChanged(INITIAL_CIRCUIT, next);
      expect(next.state).toEqual({ status: 'closed', failures: [T0], closedAt: null, reopenStreak: 0 });
    });

    it('stays closed below the threshold and opens at the threshold-th failure in the window', async () => {
      let circuit = INITIAL_CIRCUIT;
      for (let i = 0; i < 4; i++) {
        circuit = apply(circuit, FAILURE);
        await clock.advance(1_000);
      }
      expect(circuit.state.status).toBe('closed');
      circuit = apply(circuit, FAILURE);
      expect(circuit.state).toEqual({
        status: 'open',
        openedAt: T0 + 4_000,
        nextCheckAt: T0 + 14_000,
        failedChecks: 0,
        reopenStreak: 0,
        reason: OPENED_ON,
      });
      expect(circuit.version).toBe(5);
    });

    it('counts a failure that is one ms inside the window', async () => {
      const four = applyAll(INITIAL_CIRCUIT, failures(4));
      await clock.advance(29_999);
      expect(apply(four, FAILURE).state.status).toBe('open');
    });

    it('forgets failures that are exactly windowSeconds old', async () => {
      const four = applyAll(INITIAL_CIRCUIT, failures(4));
      await clock.advance(30_000);
      expect(apply(four, FAILURE).state).toEqual({
        status: 'closed',
        failures: [T0 + 30_000],
        closedAt: null,
        reopenStreak: 0,
      });
    });

    it('does not let a success reset the failures in the window', () => {
      const four = applyAll(INITIAL_CIRCUIT, failures(4));
      expect(apply(four, SUCCESS)).toBe(four);
      expect(apply(four, FAILURE).state.status).toBe('open');
    });

    it('opens on the first failure when the threshold is 1', () => {
      expect(apply(INITIAL_CIRCUIT, FAILURE, parseBreakerSettings({ failureThreshold: 1 })).state.status).toBe('open');
    });

    it.each([
      ['a health-check send', sent('c1')],
      ['a health-check ok', ok('c1')],
      ['a health-check failure', failed('c1')],
    ])('ignores %s', (_label, event) => {
      const circuit = apply(INITIAL_CIRCUIT, FAILURE);
      expect(apply(circuit, event)).toBe(circuit);
    });
  });

  describe('open', () => {
    it.each([
      ['a stale transient failure', FAILURE],
      ['a stale success', SUCCESS],
      ['a health-check ok', ok('c1')],
      ['a health-check failure', failed('c1')],
    ])('ignores %s', (_label, event) => {
      const circuit = openCircuit();
      expect(apply(circuit, event)).toBe(circuit);
    });

    it('refuses a health check one ms before nextCheckAt', async () => {
      const circuit = openCircuit();
      await clock.advance(9_999);
      expect(apply(circuit, sent('c1'))).toBe(circuit);
    });

    it('sends a health check at nextCheckAt, going half-open with that check as the one trial', async () => {
      const circuit = openCircuit({ failedChecks: 2, reopenStreak: 1 });
      await clock.advance(10_000);
      const next = apply(circuit, sent('c1'));
      expectChanged(circuit, next);
      expect(next.state).toEqual({
        status: 'half-open',
        openedAt: T0,
        checkId: 'c1',
        checkSentAt: T0 + 10_000,
        probeStartedAt: null,
        failedChecks: 2,
        reopenStreak: 1,
        reason: OPENED_ON,
      });
    });

    it('sends a health check any time after nextCheckAt', async () => {
      const circuit = openCircuit();
      await clock.advance(60_000);
      expect(apply(circuit, sent('c1')).state).toMatchObject({ status: 'half-open', checkSentAt: T0 + 60_000 });
    });

    it('never allows dispatch', () => {
      expect(isDispatchAllowed(openCircuit())).toBe(false);
    });
  });

  describe('half-open', () => {
    it.each([
      ['a stale transient failure', FAILURE],
      ['a stale success', SUCCESS],
      ['an ok of another check', ok('c0')],
      ['a failure of another check', failed('c0')],
    ])('ignores %s', (_label, event) => {
      const circuit = halfOpenCircuit();
      expect(apply(circuit, event)).toBe(circuit);
    });

    it('refuses a second check one ms before the first times out', async () => {
      const circuit = halfOpenCircuit();
      await clock.advance(14_999);
      expect(apply(circuit, sent('c2'))).toBe(circuit);
    });

    it('replaces a check that timed out, counting the lost one as failed', async () => {
      const circuit = halfOpenCircuit({ failedChecks: 1 });
      await clock.advance(15_000);
      const next = apply(circuit, sent('c2'));
      expectChanged(circuit, next);
      expect(next.state).toEqual({ ...circuit.state, checkId: 'c2', checkSentAt: T0 + 15_000, failedChecks: 2 });
    });

    it('closes on the ok of the current check, with no failures and the streak kept', async () => {
      const circuit = halfOpenCircuit({ reopenStreak: 2 });
      await clock.advance(700);
      const next = apply(circuit, ok('c1'));
      expectChanged(circuit, next);
      expect(next.state).toEqual({ status: 'closed', failures: [], closedAt: T0 + 700, reopenStreak: 2 });
      expect(isDispatchAllowed(next)).toBe(true);
    });

    it('reopens on the failure of the current check, with the next check healthCheckSeconds later', async () => {
      const circuit = halfOpenCircuit({ failedChecks: 3, reopenStreak: 1 });
      await clock.advance(700);
      const next = apply(circuit, failed('c1'));
      expectChanged(circuit, next);
      expect(next.state).toEqual({
        status: 'open',
        openedAt: T0 - 10_000,
        nextCheckAt: T0 + 5_700,
        failedChecks: 4,
        reopenStreak: 1,
        reason: OPENED_ON,
      });
    });

    it('still accepts the result of a timed-out check that no other check has replaced', async () => {
      const circuit = halfOpenCircuit();
      await clock.advance(60_000);
      expect(apply(circuit, ok('c1')).state.status).toBe('closed');
    });

    it('ignores the late result of a check that was replaced', async () => {
      await clock.advance(15_000);
      const replaced = apply(halfOpenCircuit({ checkSentAt: T0 }), sent('c2'));
      expect(apply(replaced, ok('c1'))).toBe(replaced);
      expect(apply(replaced, failed('c1'))).toBe(replaced);
    });

    describe('the probe claim (health-check-started)', () => {
      it('records the start of the current check, not yet started, once', async () => {
        const circuit = halfOpenCircuit();
        await clock.advance(1_500);
        const claimed = apply(circuit, started('c1'));
        expectChanged(circuit, claimed);
        expect(claimed.state).toEqual({ ...circuit.state, probeStartedAt: T0 + 1_500 });
        expect(isProbeStarted(claimed)).toBe(true);
        expect(apply(claimed, started('c1'))).toBe(claimed);
      });

      it('refuses a claim of another check', () => {
        const circuit = halfOpenCircuit();
        expect(apply(circuit, started('c0'))).toBe(circuit);
      });

      it('refuses a claim from the moment the unstarted check times out, one ms earlier still accepting it', async () => {
        const circuit = halfOpenCircuit();
        await clock.advance(14_999);
        expect(apply(circuit, started('c1'))).not.toBe(circuit);
        await clock.advance(1);
        expect(apply(circuit, started('c1'))).toBe(circuit);
      });

      it('refuses a late claim of a check that was replaced', async () => {
        await clock.advance(15_000);
        const replaced = apply(halfOpenCircuit({ checkSentAt: T0 }), sent('c2'));
        expect(apply(replaced, started('c1'))).toBe(replaced);
        expect(apply(replaced, started('c2')).state).toMatchObject({ checkId: 'c2', probeStartedAt: T0 + 15_000 });
      });

      it.each([
        ['closed', () => INITIAL_CIRCUIT],
        ['open', () => openCircuit()],
      ])('refuses a claim while %s', (_label, make) => {
        const circuit = make();
        expect(apply(circuit, started('c1'))).toBe(circuit);
      });

      it('counts the timeout from the probe start, so a started probe is not replaced while it may run', async () => {
        const circuit = halfOpenCircuit();
        await clock.advance(10_000);
        const claimed = apply(circuit, started('c1'));
        expect(healthCheckDueAt(claimed, P.probe)).toBe(T0 + 25_000);
        await clock.advance(14_999);
        expect(apply(claimed, sent('c2'))).toBe(claimed);
        await clock.advance(1);
        const replaced = apply(claimed, sent('c2'));
        expect(replaced.state).toMatchObject({
          checkId: 'c2',
          checkSentAt: T0 + 25_000,
          probeStartedAt: null,
          failedChecks: 1,
        });
      });
    });

    it('never allows dispatch', () => {
      expect(isDispatchAllowed(halfOpenCircuit())).toBe(false);
    });
  });

  describe('any state, rate-limited', () => {
    const states: [string, () => Circuit][] = [
      ['closed', () => applyAll(INITIAL_CIRCUIT, failures(2))],
      ['open', () => openCircuit()],
      ['half-open', () => halfOpenCircuit()],
    ];

    it.each(states)('pauses a %s circuit until retryAt, keeping its state', (_label, make) => {
      const circuit = make();
      const next = apply(circuit, limited(T0 + 3_000));
      expectChanged(circuit, next);
      expect(next.state).toBe(circuit.state);
      expect(next.pausedUntil).toBe(T0 + 3_000);
    });

    it.each(states)('keeps a %s circuit unchanged when retryAt is not later than the pause', (_label, make) => {
      const circuit = apply(make(), limited(T0 + 3_000));
      expect(apply(circuit, limited(T0 + 3_000))).toBe(circuit);
      expect(apply(circuit, limited(T0 + 1_000))).toBe(circuit);
    });

    it('never opens the circuit, however many 429s arrive', () => {
      let circuit = INITIAL_CIRCUIT;
      for (let i = 1; i <= 50; i++) circuit = apply(circuit, limited(T0 + i));
      expect(circuit.state).toBe(INITIAL_CIRCUIT.state);
      expect(circuit.version).toBe(50);
    });

    it('keeps dispatch allowed while paused (the dispatcher enforces the pause)', () => {
      expect(isDispatchAllowed(apply(INITIAL_CIRCUIT, limited(T0 + 60_000)))).toBe(true);
    });

    it('refuses a retryAt that is not finite', () => {
      expect(() => apply(INITIAL_CIRCUIT, limited(Number.POSITIVE_INFINITY))).toThrow(RangeError);
      expect(() => apply(INITIAL_CIRCUIT, limited(Number.NaN))).toThrow(RangeError);
    });
  });

  describe('caller rejections', () => {
    it('opens at once on a caller rejection, storing the reason and the first check the probe policy gives', () => {
      const next = apply(INITIAL_CIRCUIT, rejected());
      expectChanged(INITIAL_CIRCUIT, next);
      expect(next.state).toEqual({
        status: 'open',
        openedAt: T0,
        nextCheckAt: T0 + 10_000,
        failedChecks: 0,
        reopenStreak: 0,
        reason: 'caller rejected: HTTP 401 Unauthorized',
        trial: 'job',
      });
    });

    it('keeps the transient failures of a closed circuit untouched by a caller rejection it does not open on', () => {
      const stubbed = circuitPolicyFrom(S);
      const policy: CircuitPolicy = {
        ...stubbed,
        opening: {
          onFailure: (f, n) => stubbed.opening.onFailure(f, n),
          onCallerRejected: () => ({ open: false }),
          onClientError: () => ({ open: false }),
        },
      };
      const closed = applyAll(INITIAL_CIRCUIT, failures(2));
      expect(transition(closed, rejected(), clock.now(), policy)).toBe(closed);
    });

    it.each([
      ['open', () => openCircuit({ reason: 'caller rejected: HTTP 403 Forbidden', trial: 'job' })],
      ['half-open', () => halfOpenCircuit({ reason: 'caller rejected: HTTP 403 Forbidden', trial: 'job' })],
    ])('leaves a %s circuit whose check is a job’s as it is, reason included', (_label, make) => {
      const circuit = make();
      expect(apply(circuit, rejected())).toBe(circuit);
    });

    it('counts other 4xx in a row and opens at callerRejectThreshold, naming the status and the run', () => {
      const settings = parseBreakerSettings({ callerRejectThreshold: 3 });
      let circuit = INITIAL_CIRCUIT;
      circuit = apply(circuit, clientError(), settings);
      circuit = apply(circuit, clientError(), settings);
      expect(circuit).toMatchObject({ clientErrorRun: 2, state: { status: 'closed' }, version: 2 });
      circuit = apply(circuit, clientError(), settings);
      expect(circuit.clientErrorRun).toBe(3);
      expect(circuit.state).toMatchObject({
        status: 'open',
        openedAt: T0,
        reason: 'caller rejected: HTTP 404 Not Found on 3 jobs in a row',
      });
    });

    it('resets the run on a job success, with a write, and writes nothing for a success without a run', () => {
      const settings = parseBreakerSettings({ callerRejectThreshold: 3 });
      const two = [clientError(), clientError()].reduce((c, e) => apply(c, e, settings), INITIAL_CIRCUIT);
      const reset = apply(two, SUCCESS, settings);
      expectChanged(two, reset);
      expect(reset).toMatchObject({ clientErrorRun: 0, state: two.state });
      expect(apply(reset, SUCCESS, settings)).toBe(reset);
      expect(apply(apply(reset, clientError(), settings), clientError(), settings).state.status).toBe('closed');
    });

    it('leaves the run alone on transient failures and 429s, which say nothing about the caller', () => {
      const one = apply(INITIAL_CIRCUIT, clientError());
      expect(apply(one, FAILURE).clientErrorRun).toBe(1);
      expect(apply(one, limited(T0 + 5_000)).clientErrorRun).toBe(1);
    });

    it('keeps counting while open, and through a close by a probe, so the first 4xx after it reopens at once', async () => {
      const settings = parseBreakerSettings({ callerRejectThreshold: 2 });
      let circuit = applyAll(apply(INITIAL_CIRCUIT, clientError(), settings), failures(S.failureThreshold));
      expect(circuit).toMatchObject({ clientErrorRun: 1, state: { status: 'open', reason: OPENED_ON } });
      await clock.advance(10_000);
      circuit = applyAll(circuit, [sent('c1'), started('c1'), ok('c1')]);
      expect(circuit).toMatchObject({ clientErrorRun: 1, state: { status: 'closed' } });
      circuit = apply(circuit, clientError(), settings);
      expect(circuit.state).toMatchObject({
        status: 'open',
        reason: 'caller rejected: HTTP 404 Not Found on 2 jobs in a row',
        trial: 'job',
      });
    });

    it('keeps the reason through a failed check, and the check passing closes as ever', async () => {
      const jobStarted: CircuitEvent = { type: 'health-check-started', checkId: 'c1', trial: 'job' };
      let circuit = apply(INITIAL_CIRCUIT, rejected());
      await clock.advance(10_000);
      circuit = applyAll(circuit, [sent('c1'), jobStarted, failed('c1')]);
      expect(circuit.state).toMatchObject({
        status: 'open',
        failedChecks: 1,
        reason: 'caller rejected: HTTP 401 Unauthorized',
      });
      await clock.advance(5_000);
      circuit = applyAll(circuit, [sent('c2'), { ...jobStarted, checkId: 'c2' }, ok('c2')]);
      expect(circuit.state).toEqual({ status: 'closed', failures: [], closedAt: T0 + 15_000, reopenStreak: 0 });
    });

    it('lets the opening policy decide, passing the run that includes the new refusal', () => {
      const stubbed = circuitPolicyFrom(S);
      const runs: number[] = [];
      const policy: CircuitPolicy = {
        ...stubbed,
        opening: {
          ...stubbed.opening,
          onFailure: (f, n) => stubbed.opening.onFailure(f, n),
          onCallerRejected: () => ({ open: false }),
          onClientError: (run) => (runs.push(run), { open: false }),
        },
      };
      const circuit = transition(transition(INITIAL_CIRCUIT, clientError(), T0, policy), clientError(), T0, policy);
      expect(runs).toEqual([1, 2]);
      expect(circuit.state.status).toBe('closed');
    });
  });

  describe('cool-down growth', () => {
    /** Opens the circuit now, then sends a check at nextCheckAt and closes on its ok. Returns the open circuit. */
    async function openThenRecover(circuit: Circuit): Promise<{ opened: Circuit; closed: Circuit }> {
      const opened = applyAll(circuit, failures(S.failureThreshold));
      if (opened.state.status !== 'open') throw new Error('expected open');
      await clock.advanceTo(opened.state.nextCheckAt);
      const closed = applyAll(opened, [sent('c'), ok('c')]);
      return { opened, closed };
    }

    it('doubles the cool-down on each re-open within windowSeconds of a close, up to maxOpenSeconds', async () => {
      let circuit = INITIAL_CIRCUIT;
      const cooldowns: number[] = [];
      const streaks: number[] = [];
      for (let i = 0; i < 7; i++) {
        const { opened, closed } = await openThenRecover(circuit);
        if (opened.state.status !== 'open') throw new Error('expected open');
        cooldowns.push((opened.state.nextCheckAt - opened.state.openedAt) / 1000);
        streaks.push(opened.state.reopenStreak);
        circuit = closed;
        await clock.advance(1_000);
      }
      expect(cooldowns).toEqual([10, 20, 40, 80, 160, 300, 300]);
      expect(streaks).toEqual([0, 1, 2, 3, 4, 5, 6]);
    });

    it('counts a re-open one ms before windowSeconds after the close as flapping', async () => {
      const { closed } = await openThenRecover(INITIAL_CIRCUIT);
      await clock.advance(29_999);
      expect(applyAll(closed, failures(5)).state).toMatchObject({
        status: 'open',
        reopenStreak: 1,
        nextCheckAt: clock.now() + 20_000,
      });
    });

    it('starts over once the circuit has stayed closed for windowSeconds', async () => {
      const { closed } = await openThenRecover(INITIAL_CIRCUIT);
      await clock.advance(30_000);
      expect(applyAll(closed, failures(5)).state).toMatchObject({
        status: 'open',
        reopenStreak: 0,
        nextCheckAt: clock.now() + 10_000,
      });
    });

    it('resets a long streak after a long closed period', async () => {
      const closed = circuitIn({ status: 'closed', failures: [], closedAt: T0, reopenStreak: 6 });
      await clock.advance(3_600_000);
      expect(applyAll(closed, failures(5)).state).toMatchObject({
        status: 'open',
        reopenStreak: 0,
        nextCheckAt: clock.now() + 10_000,
      });
    });

    it('keeps the grown cool-down out of failed checks, which retry every healthCheckSeconds', async () => {
      const circuit = circuitIn({
        status: 'open',
        openedAt: T0,
        nextCheckAt: T0 + 40_000,
        failedChecks: 0,
        reopenStreak: 2,
        reason: OPENED_ON,
      });
      await clock.advanceTo(T0 + 40_000);
      let next = applyAll(circuit, [sent('a'), failed('a')]);
      expect(next.state).toEqual({
        status: 'open',
        openedAt: T0,
        nextCheckAt: T0 + 45_000,
        failedChecks: 1,
        reopenStreak: 2,
        reason: OPENED_ON,
      });
      await clock.advance(4_999);
      expect(apply(next, sent('b'))).toBe(next);
      await clock.advance(1);
      next = apply(next, sent('b'));
      expect(next.state).toMatchObject({ status: 'half-open', checkId: 'b', failedChecks: 1 });
    });
  });

  describe('policy passed in', () => {
    /** A policy unlike the default, so that each stored value shows which decision it came from. */
    const seen: { failures: readonly number[]; now: number }[] = [];
    const stub: CircuitPolicy = {
      opening: {
        onFailure: (failures, now) => {
          seen.push({ failures: [...failures], now });
          return failures.length >= 4
            ? { open: true, reason: 'stub: failures' }
            : { open: false, failures: failures.slice(1) };
        },
        onCallerRejected: (reason) =>
          reason.includes('403') ? { open: false } : { open: true, reason: `stub: ${reason}` },
        onClientError: (run, reason) =>
          run >= 2 ? { open: true, reason: `stub: ${reason} x${run}` } : { open: false },
      },
      probe: {
        onOpen: (closed, now) => ({ nextCheckAt: now + 123, reopenStreak: closed.reopenStreak + 7 }),
        afterFailedCheck: (halfOpen, now) => now + 1_000 * (halfOpen.failedChecks + 1),
        checkTimeoutAt: (halfOpen) => halfOpen.checkSentAt + 42,
      },
    };
    beforeEach(() => {
      seen.length = 0;
    });

    it('hands the opening policy the kept failures and the new one in ascending order, and keeps what it returns', () => {
      const closed = circuitIn({ status: 'closed', failures: [T0 - 20, T0 + 20], closedAt: null, reopenStreak: 0 });
      const next = transition(closed, FAILURE, T0, stub);
      expect(seen).toEqual([{ failures: [T0 - 20, T0, T0 + 20], now: T0 }]);
      expect(next.state).toEqual({ status: 'closed', failures: [T0, T0 + 20], closedAt: null, reopenStreak: 0 });
    });

    it('opens when the opening policy says so, with the first check and streak the probe policy gives', () => {
      const closed = circuitIn({
        status: 'closed',
        failures: [T0 - 3, T0 - 2, T0 - 1],
        closedAt: T0 - 60_000_000,
        reopenStreak: 2,
      });
      expect(transition(closed, FAILURE, T0, stub).state).toEqual({
        status: 'open',
        openedAt: T0,
        nextCheckAt: T0 + 123,
        failedChecks: 0,
        reopenStreak: 9,
        reason: 'stub: failures',
      });
    });

    it('reopens after a failed check with the next check the probe policy gives', () => {
      const circuit = halfOpenCircuit({ failedChecks: 2 });
      expect(transition(circuit, failed('c1'), T0 + 5, stub).state).toMatchObject({
        status: 'open',
        nextCheckAt: T0 + 3_005,
        failedChecks: 3,
      });
    });

    it("replaces a check in flight from the probe policy's timeout on, where healthCheckDueAt says", () => {
      const circuit = halfOpenCircuit();
      expect(healthCheckDueAt(circuit, stub.probe)).toBe(T0 + 42);
      expect(transition(circuit, sent('c2'), T0 + 41, stub)).toBe(circuit);
      expect(transition(circuit, sent('c2'), T0 + 42, stub).state).toMatchObject({
        status: 'half-open',
        checkId: 'c2',
        checkSentAt: T0 + 42,
      });
    });
  });

  describe('versioning', () => {
    it('bumps the version by exactly one per change and keeps the reference otherwise, over a full outage', async () => {
      const events: CircuitEvent[] = [...failures(5), SUCCESS, sent('early'), limited(T0 + 1)];
      let circuit = INITIAL_CIRCUIT;
      const versions = [circuit.version];
      for (const event of events) circuit = apply(circuit, event);
      versions.push(circuit.version);
      await clock.advance(10_000);
      for (const event of [sent('a'), sent('b'), failed('x'), failed('a'), ok('a')]) circuit = apply(circuit, event);
      versions.push(circuit.version);
      // 5 failures + 1 pause; then the send of 'a' and its failure. Everything else was a no-op.
      expect(versions).toEqual([0, 6, 8]);
    });

    it('lets exactly one of two racing orchestrators win the conditional write for a health check', async () => {
      let stored = openCircuit();
      const save = (next: Circuit): boolean => {
        if (stored.version !== next.version - 1) return false;
        stored = next;
        return true;
      };
      await clock.advance(10_000);
      const seenByA = stored;
      const seenByB = stored;
      expect(save(apply(seenByA, sent('from-a')))).toBe(true);
      expect(save(apply(seenByB, sent('from-b')))).toBe(false);
      // B reloads and decides again: the check in flight is not yet timed out, so B sends nothing.
      const reloaded = stored;
      expect(apply(reloaded, sent('from-b'))).toBe(reloaded);
      expect(stored.state).toMatchObject({ status: 'half-open', checkId: 'from-a' });
    });

    it('returns frozen circuits', () => {
      expect(Object.isFrozen(INITIAL_CIRCUIT)).toBe(true);
      expect(Object.isFrozen(INITIAL_CIRCUIT.state)).toBe(true);
      expect(Object.isFrozen(apply(INITIAL_CIRCUIT, FAILURE))).toBe(true);
    });
  });

  describe('operator-paused and operator-resumed', () => {
    const pause = (by = 'alice'): CircuitEvent => ({ type: 'operator-paused', by });
    const resume = (by = 'bob'): CircuitEvent => ({ type: 'operator-resumed', by });

    it('holds the lane with who and since when, keeping the state, and records the pause', () => {
      const next = apply(INITIAL_CIRCUIT, pause());
      expectChanged(INITIAL_CIRCUIT, next);
      expect(next.hold).toEqual({ since: T0, by: 'alice' });
      expect(next.state).toBe(INITIAL_CIRCUIT.state);
      expect(next.transitions).toEqual([
        { at: T0, from: 'closed', to: 'closed', reason: 'paused by operator (alice)' },
      ]);
      expect(isHeld(next)).toBe(true);
      expect(isDispatchAllowed(next)).toBe(false);
    });

    it('leaves a paused lane as it is, keeping the first hold', async () => {
      const paused = apply(INITIAL_CIRCUIT, pause('alice'));
      await clock.advance(5_000);
      expect(apply(paused, pause('carol'))).toBe(paused);
    });

    it('clears the hold on resume and records it; a lane not paused is left as it is', async () => {
      const paused = apply(INITIAL_CIRCUIT, pause());
      await clock.advance(5_000);
      const resumed = apply(paused, resume());
      expectChanged(paused, resumed);
      expect(resumed.hold).toBeNull();
      expect(isDispatchAllowed(resumed)).toBe(true);
      expect(resumed.transitions.at(-1)).toEqual({
        at: T0 + 5_000,
        from: 'closed',
        to: 'closed',
        reason: 'resumed by operator (bob)',
      });
      expect(apply(resumed, resume())).toBe(resumed);
      expect(apply(INITIAL_CIRCUIT, resume())).toBe(INITIAL_CIRCUIT);
    });

    it('sends no health check while held, even once due, and sends it after the resume', async () => {
      const held = apply(openCircuit(), pause());
      await clock.advance(10_000);
      expect(healthCheckDueAt(held, P.probe)).toBeUndefined();
      expect(apply(held, sent('c1'))).toBe(held);
      const resumed = apply(held, resume());
      expect(healthCheckDueAt(resumed, P.probe)).toBe(T0 + 10_000);
      expect(apply(resumed, sent('c1')).state).toMatchObject({ status: 'half-open', checkId: 'c1' });
    });

    it('lets no worker start the probe of a check sent before the pause, but counts the result of one already started', () => {
      expect(apply(apply(halfOpenCircuit(), pause()), started('c1')).state).toMatchObject({
        status: 'half-open',
        probeStartedAt: null,
      });
      const probing = apply(apply(halfOpenCircuit(), started('c1')), pause());
      expect(apply(probing, ok('c1')).state).toMatchObject({ status: 'closed', closedAt: T0 });
    });

    it("still counts jobs' results while held: the jobs dispatched before the pause open the circuit", () => {
      const held = applyAll(apply(INITIAL_CIRCUIT, pause()), failures(5));
      expect(held.state).toMatchObject({ status: 'open', reason: OPENED_ON });
      expect(held.hold).toEqual({ since: T0, by: 'alice' });
    });

    it('refuses a blank operator name', () => {
      expect(() => apply(INITIAL_CIRCUIT, pause(' '))).toThrow(RangeError);
    });
  });

  describe('operator-opened', () => {
    const force = (by = 'alice'): CircuitEvent => ({ type: 'operator-opened', by });

    it('opens a closed circuit for the operator: a check never comes due, and the reason names the operator', async () => {
      const closed = circuitIn({ status: 'closed', failures: [T0 - 1], closedAt: T0 - 1_000, reopenStreak: 2 });
      const next = apply(closed, force());
      expectChanged(closed, next);
      expect(next.state).toEqual({
        status: 'open',
        openedAt: T0,
        nextCheckAt: NEVER_DUE,
        failedChecks: 0,
        reopenStreak: 2,
        reason: 'opened by operator (alice)',
        byOperator: true,
      });
      expect(next.transitions).toEqual([{ at: T0, from: 'closed', to: 'open', reason: 'opened by operator (alice)' }]);
      expect(healthCheckDueAt(next, P.probe)).toBeUndefined();
      await clock.advance(30 * 86_400_000);
      expect(apply(next, sent('c1'))).toBe(next);
    });

    it('takes over a circuit the breaker opened: open since it opened, with no more checks', () => {
      const open = openCircuit({ openedAt: T0 - 60_000, failedChecks: 3 });
      const next = apply(open, force());
      expect(next.state).toEqual({
        status: 'open',
        openedAt: T0 - 60_000,
        nextCheckAt: NEVER_DUE,
        failedChecks: 3,
        reopenStreak: 0,
        reason: 'opened by operator (alice)',
        byOperator: true,
      });
      expect(next.transitions).toEqual([{ at: T0, from: 'open', to: 'open', reason: 'opened by operator (alice)' }]);
    });

    it('drops the check in flight of a half-open circuit: its result changes nothing', () => {
      const next = apply(apply(halfOpenCircuit(), started('c1')), force());
      expect(next.state).toMatchObject({ status: 'open', byOperator: true });
      expect(apply(next, ok('c1'))).toBe(next);
      expect(apply(next, failed('c1'))).toBe(next);
    });

    it('leaves a circuit the operator opened as it is', () => {
      const forced = apply(INITIAL_CIRCUIT, force('alice'));
      expect(apply(forced, force('bob'))).toBe(forced);
    });
  });

  describe('operator-closed', () => {
    const close: CircuitEvent = { type: 'operator-closed', by: 'bob' };
    const froms: [string, () => Circuit][] = [
      ['open', () => openCircuit({ reopenStreak: 1 })],
      ['half-open', () => halfOpenCircuit({ reopenStreak: 1 })],
      [
        'forced open',
        () =>
          apply(circuitIn({ status: 'closed', failures: [], closedAt: null, reopenStreak: 1 }), {
            type: 'operator-opened',
            by: 'alice',
          }),
      ],
    ];

    it.each(froms)(
      'closes a circuit %s, keeping its reopen streak and its 429 pause, and ends the client-error run',
      (_label, make) => {
        const from = { ...make(), pausedUntil: T0 + 5_000, clientErrorRun: 4 };
        const next = apply(from, close);
        expectChanged(from, next);
        expect(next.state).toEqual({ status: 'closed', failures: [], closedAt: T0, reopenStreak: 1 });
        expect(next.pausedUntil).toBe(T0 + 5_000);
        expect(next.clientErrorRun).toBe(0);
        expect(next.transitions.at(-1)).toEqual({
          at: T0,
          from: from.state.status,
          to: 'closed',
          reason: 'closed by operator (bob)',
        });
        expect(isDispatchAllowed(next)).toBe(true);
      },
    );

    it('leaves a closed circuit as it is, its failures included', () => {
      const closed = applyAll(INITIAL_CIRCUIT, failures(2));
      expect(apply(closed, close)).toBe(closed);
    });

    it('keeps the hold: a paused lane stays paused', () => {
      const next = apply(apply(openCircuit(), { type: 'operator-paused', by: 'alice' }), close);
      expect(next.hold).toEqual({ since: T0, by: 'alice' });
      expect(isDispatchAllowed(next)).toBe(false);
    });
  });

  describe('transitions', () => {
    it('records each change of status with its instant and reason, oldest first', async () => {
      let circuit = applyAll(INITIAL_CIRCUIT, failures(5));
      await clock.advance(10_000);
      circuit = applyAll(circuit, [sent('c1'), started('c1'), failed('c1')]);
      await clock.advance(5_000);
      circuit = applyAll(circuit, [sent('c2'), ok('c2')]);
      expect(circuit.transitions).toEqual([
        { at: T0, from: 'closed', to: 'open', reason: OPENED_ON },
        { at: T0 + 10_000, from: 'open', to: 'half-open', reason: 'health check c1 sent' },
        { at: T0 + 10_000, from: 'half-open', to: 'open', reason: 'health check c1 failed' },
        { at: T0 + 15_000, from: 'half-open', to: 'closed', reason: 'health check c2 passed' },
      ]);
    });

    it("records an outage's opening, first check and close, not the probe cycles after its first failed check", async () => {
      let circuit = applyAll(INITIAL_CIRCUIT, failures(5));
      for (const id of ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8']) {
        await clock.advance(10_000);
        circuit = applyAll(circuit, [sent(id), started(id), failed(id)]);
      }
      await clock.advance(10_000);
      circuit = applyAll(circuit, [sent('c9'), ok('c9')]);
      expect(circuit.transitions.map(({ from, to, reason }) => `${from} → ${to}: ${reason}`)).toEqual([
        `closed → open: ${OPENED_ON}`,
        'open → half-open: health check c1 sent',
        'half-open → open: health check c1 failed',
        'half-open → closed: health check c9 passed',
      ]);
    });

    it('records no change that keeps the status: a failure counted, a 429, a claim, a replaced check', async () => {
      const counted = applyAll(INITIAL_CIRCUIT, [FAILURE, limited(T0 + 1_000), clientError()]);
      expect(counted.transitions).toEqual([]);
      const halfOpen = apply(halfOpenCircuit(), started('c1'));
      await clock.advance(20_000);
      expect(apply(halfOpen, sent('c2')).transitions).toEqual([]);
    });

    it(`keeps the last ${MAX_TRANSITIONS_KEPT}`, async () => {
      let circuit = INITIAL_CIRCUIT;
      for (let i = 1; i <= 6; i++) {
        await clock.advance(1_000);
        circuit = applyAll(circuit, [
          { type: 'operator-paused', by: `p${i}` },
          { type: 'operator-resumed', by: `r${i}` },
        ]);
      }
      expect(circuit.transitions).toHaveLength(MAX_TRANSITIONS_KEPT);
      expect(circuit.transitions[0]).toMatchObject({ reason: 'paused by operator (p2)' });
      expect(circuit.transitions.at(-1)).toMatchObject({ at: T0 + 6_000, reason: 'resumed by operator (r6)' });
    });

    it(`cuts a reason longer than ${MAX_TRANSITION_REASON} characters`, () => {
      const next = apply(INITIAL_CIRCUIT, rejected(`HTTP 401 ${'x'.repeat(500)}`));
      const reason = next.transitions[0]?.reason ?? '';
      expect(reason).toHaveLength(MAX_TRANSITION_REASON);
      expect(reason.endsWith('…')).toBe(true);
      expect(reason.startsWith('caller rejected: HTTP 401 xxx')).toBe(true);
    });
  });

  describe('invariants', () => {
    type Step = {
      readonly dtMs: number;
      readonly kind:
        | 'failure'
        | 'success'
        | 'limited'
        | 'rejected'
        | 'client-error'
        | 'sent'
        | 'started'
        | 'ok'
        | 'failed'
        | OperatorEvent['type'];
      readonly id: string;
      readonly retryInMs: number;
    };

    const settingsArb = fc
      .record({
        failureThreshold: fc.integer({ min: 1, max: 4 }),
        windowSeconds: fc.integer({ min: 1, max: 20 }),
        openSeconds: fc.integer({ min: 1, max: 10 }),
        healthCheckSeconds: fc.integer({ min: 1, max: 10 }),
        extraOpenSeconds: fc.integer({ min: 0, max: 30 }),
        healthCheckTimeoutSeconds: fc.integer({ min: 1, max: 10 }),
        callerRejectThreshold: fc.integer({ min: 1, max: 4 }),
      })
      .map(({ extraOpenSeconds, ...rest }) =>
        parseBreakerSettings({ ...rest, maxOpenSeconds: rest.openSeconds + extraOpenSeconds }),
      );

    const stepArb: fc.Arbitrary<Step> = fc.record({
      dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1_500 }), fc.integer({ min: 1, max: 20_000 })),
      kind: fc.oneof(
        { arbitrary: fc.constant('failure' as const), weight: 4 },
        { arbitrary: fc.constantFrom('success' as const, 'limited' as const), weight: 1 },
        { arbitrary: fc.constantFrom('rejected' as const, 'client-error' as const), weight: 1 },
        {
          arbitrary: fc.constantFrom('sent' as const, 'started' as const, 'ok' as const, 'failed' as const),
          weight: 4,
        },
        {
          arbitrary: fc.constantFrom(
            'operator-paused' as const,
            'operator-resumed' as const,
            'operator-opened' as const,
            'operator-closed' as const,
          ),
          weight: 1,
        },
      ),
      id: fc.constantFrom('a', 'b', 'c'),
      retryInMs: fc.integer({ min: -5_000, max: 60_000 }),
    });

    function eventOf(step: Step, now: number): CircuitEvent {
      switch (step.kind) {
        case 'failure':
          return FAILURE;
        case 'success':
          return SUCCESS;
        case 'limited':
          return limited(now + step.retryInMs);
        case 'rejected':
          return rejected();
        case 'client-error':
          return clientError();
        case 'sent':
          return sent(step.id);
        case 'started':
          return started(step.id);
        case 'ok':
          return ok(step.id);
        case 'failed':
          return failed(step.id);
        default:
          return { type: step.kind, by: step.id };
      }
    }

    it('hold for any event sequence: +1 version per change, one trial and one probe at a time, closed below the thresholds, none while held', async () => {
      await fc.assert(
        fc.asyncProperty(settingsArb, fc.array(stepArb, { maxLength: 60 }), async (settings, steps) => {
          clock = new FakeClock(T0);
          const windowMs = settings.windowSeconds * 1000;
          const timeoutMs = settings.healthCheckTimeoutSeconds * 1000;
          const policy = circuitPolicyFrom(settings);
          let circuit = INITIAL_CIRCUIT;
          /** The probe running, as a claim that won: until its result or its timeout, no other claim may win. */
          let running: { readonly checkId: string; readonly since: number } | undefined;
          for (const step of steps) {
            await clock.advance(step.dtMs);
            const now = clock.now();
            const event = eventOf(step, now);
            const prev = circuit;
            circuit = transition(prev, event, now, policy);
            const { state } = circuit;

            // The version grows by exactly 1 on a real change; no change keeps the reference.
            if (circuit !== prev) {
              expect(circuit.version).toBe(prev.version + 1);
              expect({ ...circuitToJSON(circuit), version: 0 }).not.toEqual({ ...circuitToJSON(prev), version: 0 });
            }
            expect(circuit.pausedUntil).toBeGreaterThanOrEqual(prev.pausedUntil);

            // Every change of status or hold is the last transition kept; at most MAX_TRANSITIONS_KEPT are.
            expect(circuit.transitions.length).toBeLessThanOrEqual(MAX_TRANSITIONS_KEPT);
            if (state.status !== prev.state.status || (circuit.hold === null) !== (prev.hold === null)) {
              expect(circuit.transitions.at(-1)).toMatchObject({ at: now, from: prev.state.status, to: state.status });
            } else if (!('by' in event)) {
              expect(circuit.transitions).toBe(prev.transitions);
            }
            // While an operator holds the lane, or the circuit open, no check goes and no probe starts.
            if (prev.hold !== null || (prev.state.status === 'open' && prev.state.byOperator === true)) {
              if (event.type === 'health-check-sent' || event.type === 'health-check-started')
                expect(circuit).toBe(prev);
            }
            // An operator's forced open or close ends any probe running: its result no longer counts.
            if (circuit !== prev && (event.type === 'operator-opened' || event.type === 'operator-closed'))
              running = undefined;

            // One trial at a time: a new check starts only from open after the cool-down, or after the previous
            // check timed out; a result moves the circuit only if it belongs to the one check in flight.
            if (circuit !== prev && state.status === 'half-open' && event.type === 'health-check-sent') {
              if (prev.state.status === 'open') expect(now).toBeGreaterThanOrEqual(prev.state.nextCheckAt);
              else if (prev.state.status === 'half-open')
                expect(now).toBeGreaterThanOrEqual((prev.state.probeStartedAt ?? prev.state.checkSentAt) + timeoutMs);
              else throw new Error('a closed circuit sent a health check');
            }
            if (circuit !== prev && (event.type === 'health-check-ok' || event.type === 'health-check-failed')) {
              expect(prev.state).toMatchObject({ status: 'half-open', checkId: event.checkId });
              running = undefined;
            }

            // One probe at a time: a claim wins only for the current check, not yet started and not timed out, and
            // never while another claimed probe has neither reported nor run for its whole timeout.
            if (event.type === 'health-check-started' && circuit !== prev) {
              expect(prev.state).toMatchObject({ status: 'half-open', checkId: event.checkId, probeStartedAt: null });
              if (prev.state.status === 'half-open') expect(now).toBeLessThan(prev.state.checkSentAt + timeoutMs);
              if (running !== undefined) expect(now).toBeGreaterThanOrEqual(running.since + timeoutMs);
              running = { checkId: event.checkId, since: now };
            }
            if (state.status === 'half-open' && state.probeStartedAt !== null)
              expect(state.probeStartedAt).toBeGreaterThanOrEqual(state.checkSentAt);

            // A client-error run opens a closed circuit at the threshold; a caller rejection opens it at once.
            if (prev.state.status === 'closed' && event.type === 'client-error') {
              expect(state.status).toBe(circuit.clientErrorRun >= settings.callerRejectThreshold ? 'open' : 'closed');
            }
            if (prev.state.status === 'closed' && event.type === 'caller-rejected')
              expect(state).toMatchObject({ status: 'open', reason: 'caller rejected: HTTP 401 Unauthorized' });
            if (event.type === 'success') expect(circuit.clientErrorRun).toBe(0);

            // A closed circuit holds fewer than failureThreshold failures in its window.
            if (state.status === 'closed') {
              expect(state.failures.filter((t) => t > now - windowMs).length).toBeLessThan(settings.failureThreshold);
            }
            if (prev.state.status === 'closed' && state.status === 'open' && state.byOperator === undefined) {
              expect(state.nextCheckAt - now).toBeGreaterThanOrEqual(settings.openSeconds * 1000);
              expect(state.nextCheckAt - now).toBeLessThanOrEqual(settings.maxOpenSeconds * 1000);
            }

            expect(isDispatchAllowed(circuit)).toBe(state.status === 'closed' && circuit.hold === null);
            expect(circuitFromJSON(JSON.parse(JSON.stringify(circuitToJSON(circuit))))).toEqual(circuit);
          }
        }),
      );
    });
  });
});

describe('isDispatchAllowed', () => {
  describe('closed', () => {
    it('allows dispatch, even with failures recorded', () => {
      expect(isDispatchAllowed(INITIAL_CIRCUIT)).toBe(true);
      expect(isDispatchAllowed(applyAll(INITIAL_CIRCUIT, failures(4)))).toBe(true);
    });
  });

  describe('open and half-open', () => {
    it('refuses dispatch', () => {
      expect(isDispatchAllowed(openCircuit())).toBe(false);
      expect(isDispatchAllowed(halfOpenCircuit())).toBe(false);
    });
  });
  describe('held', () => {
    it('refuses dispatch on a closed circuit an operator paused', () => {
      expect(isDispatchAllowed(apply(INITIAL_CIRCUIT, { type: 'operator-paused', by: 'alice' }))).toBe(false);
    });
  });
});

describe('healthCheckDueAt', () => {
  describe('closed', () => {
    it('has no health check due', () => {
      expect(healthCheckDueAt(INITIAL_CIRCUIT, P.probe)).toBeUndefined();
    });
  });

  describe('open', () => {
    it('is due at nextCheckAt', () => {
      expect(healthCheckDueAt(openCircuit(), P.probe)).toBe(T0 + 10_000);
    });

    it('has none due while an operator holds the circuit open', () => {
      expect(healthCheckDueAt(apply(openCircuit(), { type: 'operator-opened', by: 'alice' }), P.probe)).toBeUndefined();
    });
  });

  describe('half-open', () => {
    it('is due when the check in flight times out', () => {
      expect(
        healthCheckDueAt(
          halfOpenCircuit(),
          circuitPolicyFrom(parseBreakerSettings({ healthCheckTimeoutSeconds: 2 })).probe,
        ),
      ).toBe(T0 + 2_000);
    });

    it('is due when the started probe times out, counted from its start', () => {
      const policy = circuitPolicyFrom(parseBreakerSettings({ healthCheckTimeoutSeconds: 2 }));
      expect(healthCheckDueAt(halfOpenCircuit({ probeStartedAt: T0 + 700 }), policy.probe)).toBe(T0 + 2_700);
    });

    it('agrees with transition about when a replacement check is accepted', async () => {
      const circuit = halfOpenCircuit();
      await clock.advanceTo((healthCheckDueAt(circuit, P.probe) ?? 0) - 1);
      expect(apply(circuit, sent('c2'))).toBe(circuit);
      await clock.advance(1);
      expect(apply(circuit, sent('c2'))).not.toBe(circuit);
    });
  });
});
