import type { ClosedState, HalfOpenState } from '../../../../lib/domain/breaker/state';
import { circuitPolicyFrom, CooldownProbePolicy, ThresholdOpeningPolicy } from '../../../../lib/domain/breaker/policy';
import { parseBreakerSettings } from '../../../../lib/domain/breaker/settings';

// The defaults but with the cool-down and the check interval spread out, so the steps are easy to tell apart:
// 5 failures in 30 s open; first check after 10 s; checks every 5 s; cap 300 s; check timeout 15 s; 10 other 4xx in a
// row open.
const S = parseBreakerSettings({ openSeconds: 10, healthCheckSeconds: 5 });
const T0 = 1_700_000_000_000;

const closed = (closedAt: number | null, reopenStreak = 0): ClosedState => ({
  status: 'closed',
  failures: [],
  closedAt,
  reopenStreak,
});
const halfOpen = (extra: Partial<HalfOpenState> = {}): HalfOpenState => ({
  status: 'half-open',
  openedAt: T0 - 10_000,
  checkId: 'c1',
  checkSentAt: T0,
  probeStartedAt: null,
  failedChecks: 0,
  reopenStreak: 0,
  reason: 'caller rejected: HTTP 401 Unauthorized',
  ...extra,
});

describe('ThresholdOpeningPolicy', () => {
  describe('onFailure', () => {
    const policy = new ThresholdOpeningPolicy(S);

    it('stays closed below the threshold, keeping every failure in the window', () => {
      expect(policy.onFailure([T0 - 3_000, T0 - 2_000, T0 - 1_000, T0], T0)).toEqual({
        open: false,
        failures: [T0 - 3_000, T0 - 2_000, T0 - 1_000, T0],
      });
    });

    it('opens at the threshold-th failure in the window', () => {
      expect(policy.onFailure([T0 - 29_999, T0 - 3_000, T0 - 2_000, T0 - 1_000, T0], T0)).toEqual({
        open: true,
        reason: '5 transient failures within 30 s',
      });
    });

    it('forgets failures that are exactly windowSeconds old', () => {
      expect(policy.onFailure([T0 - 30_000, T0 - 3_000, T0 - 2_000, T0 - 1_000, T0], T0)).toEqual({
        open: false,
        failures: [T0 - 3_000, T0 - 2_000, T0 - 1_000, T0],
      });
    });

    it('keeps failures later than now (a worker with a clock behind), counting them in the window', () => {
      expect(policy.onFailure([T0, T0 + 500], T0)).toEqual({ open: false, failures: [T0, T0 + 500] });
    });

    it('opens on the first failure when the threshold is 1', () => {
      expect(
        new ThresholdOpeningPolicy({ ...S, failureThreshold: 1, windowSeconds: 1, callerRejectThreshold: 1 }).onFailure(
          [T0],
          T0,
        ),
      ).toEqual({ open: true, reason: '1 transient failure within 1 s' });
    });
  });

  describe('onCallerRejected', () => {
    it('opens at once, naming the refusal, to be tried with a job: a probe does not show that the key works', () => {
      expect(new ThresholdOpeningPolicy(S).onCallerRejected('HTTP 403 Forbidden')).toEqual({
        open: true,
        reason: 'caller rejected: HTTP 403 Forbidden',
        trial: 'job',
      });
    });

    it('leaves the check to a probe when the probe checks the key (probeChecksKey)', () => {
      expect(
        new ThresholdOpeningPolicy({ ...S, probeChecksKey: true }).onCallerRejected('HTTP 401 Unauthorized'),
      ).toEqual({ open: true, reason: 'caller rejected: HTTP 401 Unauthorized' });
    });
  });

  describe('onClientError', () => {
    const policy = new ThresholdOpeningPolicy({ ...S, callerRejectThreshold: 3 });

    it('stays closed below callerRejectThreshold refusals in a row', () => {
      expect(policy.onClientError(1, 'HTTP 404 Not Found')).toEqual({ open: false });
      expect(policy.onClientError(2, 'HTTP 404 Not Found')).toEqual({ open: false });
    });

    it('opens from callerRejectThreshold refusals in a row on, naming the status and the run', () => {
      expect(policy.onClientError(3, 'HTTP 404 Not Found')).toEqual({
        open: true,
        reason: 'caller rejected: HTTP 404 Not Found on 3 jobs in a row',
        trial: 'job',
      });
      expect(policy.onClientError(40, 'HTTP 400 Bad Request')).toEqual({
        open: true,
        reason: 'caller rejected: HTTP 400 Bad Request on 40 jobs in a row',
        trial: 'job',
      });
    });

    it('has such a circuit tried with a job even when the probe checks the key: it cannot check the jobs’ URL', () => {
      const checksKey = new ThresholdOpeningPolicy({ ...S, callerRejectThreshold: 1, probeChecksKey: true });
      expect(checksKey.onClientError(1, 'HTTP 404 Not Found')).toMatchObject({ open: true, trial: 'job' });
    });
  });
});

describe('CooldownProbePolicy', () => {
  describe('onOpen', () => {
    const policy = new CooldownProbePolicy(S);

    it('makes the first check due openSeconds after opening a circuit never closed before', () => {
      expect(policy.onOpen(closed(null, 3), T0)).toEqual({ nextCheckAt: T0 + 10_000, reopenStreak: 0 });
    });

    it('doubles the cool-down per re-open within windowSeconds of the close, up to maxOpenSeconds', () => {
      const cooldowns = [0, 1, 2, 3, 4, 5, 8].map((streak) => policy.onOpen(closed(T0 - 29_999, streak), T0));
      expect(cooldowns.map((c) => c.reopenStreak)).toEqual([1, 2, 3, 4, 5, 6, 9]);
      expect(cooldowns.map((c) => (c.nextCheckAt - T0) / 1000)).toEqual([20, 40, 80, 160, 300, 300, 300]);
    });

    it('starts over once the circuit has stayed closed for windowSeconds', () => {
      expect(policy.onOpen(closed(T0 - 30_000, 6), T0)).toEqual({ nextCheckAt: T0 + 10_000, reopenStreak: 0 });
    });
  });

  describe('afterFailedCheck', () => {
    it('makes the next check due healthCheckSeconds after the failure, whatever the streak and failed checks', () => {
      const policy = new CooldownProbePolicy(S);
      expect(policy.afterFailedCheck(halfOpen(), T0 + 700)).toBe(T0 + 5_700);
      expect(policy.afterFailedCheck(halfOpen({ failedChecks: 9, reopenStreak: 4 }), T0 + 700)).toBe(T0 + 5_700);
    });

    it('doubles the wait after each failed job trial, from healthCheckSeconds up to maxOpenSeconds', () => {
      const policy = new CooldownProbePolicy(S);
      const waits = [0, 1, 2, 3, 5, 6, 60].map(
        (failedChecks) => (policy.afterFailedCheck(halfOpen({ failedChecks, trial: 'job' }), T0) - T0) / 1000,
      );
      expect(waits).toEqual([5, 10, 20, 40, 160, 300, 300]);
    });

    it('never waits less than healthCheckSeconds after a failed job trial, even above maxOpenSeconds', () => {
      const policy = new CooldownProbePolicy({ ...S, healthCheckSeconds: 600 });
      expect(policy.afterFailedCheck(halfOpen({ failedChecks: 4, trial: 'job' }), T0)).toBe(T0 + 600_000);
    });
  });

  describe('checkTimeoutAt', () => {
    it('presumes a check no worker started lost healthCheckTimeoutSeconds after it was sent', () => {
      expect(new CooldownProbePolicy(S).checkTimeoutAt(halfOpen({ checkSentAt: T0 + 1 }))).toBe(T0 + 15_001);
    });

    it('presumes a started probe lost healthCheckTimeoutSeconds after its start, however late it started', () => {
      expect(
        new CooldownProbePolicy(S).checkTimeoutAt(halfOpen({ checkSentAt: T0, probeStartedAt: T0 + 14_000 })),
      ).toBe(T0 + 29_000);
    });
  });
});

describe('circuitPolicyFrom', () => {
  it('builds the threshold opening and the cool-down probing from the same settings', () => {
    const settings = parseBreakerSettings({
      failureThreshold: 2,
      windowSeconds: 4,
      openSeconds: 3,
      healthCheckSeconds: 2,
      healthCheckTimeoutSeconds: 7,
    });
    const policy = circuitPolicyFrom(settings);
    expect(policy.opening).toBeInstanceOf(ThresholdOpeningPolicy);
    expect(policy.probe).toBeInstanceOf(CooldownProbePolicy);
    expect(policy.opening.onFailure([T0 - 3_999, T0], T0)).toEqual({
      open: true,
      reason: '2 transient failures within 4 s',
    });
    expect(policy.probe.onOpen(closed(T0 - 3_999), T0)).toEqual({ nextCheckAt: T0 + 6_000, reopenStreak: 1 });
    expect(policy.probe.afterFailedCheck(halfOpen(), T0)).toBe(T0 + 2_000);
    expect(policy.probe.checkTimeoutAt(halfOpen())).toBe(T0 + 7_000);
  });

  it('returns a frozen policy', () => {
    expect(Object.isFrozen(circuitPolicyFrom(S))).toBe(true);
  });
});
