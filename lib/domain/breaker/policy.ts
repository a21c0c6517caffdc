/**
 * The two decisions a circuit leaves to its policy, as cockatiel leaves them to its breaker and half-open back-off:
 * *when to open* ({@link OpeningPolicy}) and *when to probe* ({@link ProbePolicy}). The state machine in `circuit.ts`
 * keeps the states, the one-trial rule and the versioning; a different opening rule or probe back-off is a different
 * policy object, not a change to the transitions.
 *
 * What a policy decides is stored in the circuit's state (`failures`, `nextCheckAt`, `reopenStreak`), except the
 * health-check timeout, which {@link ProbePolicy.checkTimeoutAt} recomputes from the half-open state on every call.
 * Policies are therefore pure functions of their arguments and of what they were built from: the orchestrator and
 * every worker build their own from the same settings, and `healthCheckDueAt` must agree with the transitions.
 */
import type { ClosedState, HalfOpenState, Trial } from './state';
import type { BreakerSettings } from './settings';

/** What an {@link OpeningPolicy} decided about a transient failure. */
export type OpeningDecision =
  /** The circuit opens; `reason` is stored in the open state and logged. */
  | { readonly open: true; readonly reason: string }
  /** The circuit stays closed, keeping `failures` (ascending epoch ms) for the next decision. */
  | { readonly open: false; readonly failures: readonly number[] };

/** Decides when a closed circuit opens. */
export interface OpeningPolicy {
  /**
   * Decides on a transient failure of a closed circuit at `now` (epoch ms).
   * @param failures the failures kept by the last decision plus the new one at `now`, ascending (epoch ms).
   * @returns `{ open: true }`, or the failures to keep: an ascending subsequence of `failures`.
   */
  onFailure(failures: readonly number[], now: number): OpeningDecision;
  /** Decides on a job call that the API refused for a reason naming the caller (`reason`, e.g. `HTTP 401 Unauthorized`). */
  onCallerRejected(reason: string): RejectionDecision;
  /**
   * Decides on a job call that the API refused with another 4xx (`reason`), `run` being how many job results in a
   * row, this one included, were such refusals (a job success resets it; see `Circuit.clientErrorRun`).
   */
  onClientError(run: number, reason: string): RejectionDecision;
}

/**
 * What an {@link OpeningPolicy} decided about a refused job call: open with a `reason`, or stay closed. `trial: 'job'`:
 * only a job's call that succeeds may close the circuit again, not a probe (see `Trial`).
 */
export type RejectionDecision =
  { readonly open: true; readonly reason: string; readonly trial?: Trial } | { readonly open: false };

/** When a circuit that opens sends its first health check, and the reopen streak it carries meanwhile. */
export interface FirstCheck {
  /** Epoch ms from which the first health check may be sent. */
  readonly nextCheckAt: number;
  /** Re-opens in a row that the policy counts as flapping; kept through the next close, for the next opening. */
  readonly reopenStreak: number;
}

/** Decides when an open circuit probes the API, and when a probe in flight is given up. */
export interface ProbePolicy {
  /** Opens the circuit `closed` at `now` (epoch ms): when its first health check is due, and its reopen streak. */
  onOpen(closed: ClosedState, now: number): FirstCheck;
  /**
   * When the next health check is due (epoch ms) after the check of `halfOpen` was reported failed at `now`: its
   * `trial` says whether the check was a probe or a job's call.
   */
  afterFailedCheck(halfOpen: HalfOpenState, now: number): number;
  /**
   * When the check of `halfOpen` is presumed lost (epoch ms): from then on another check may replace it, and it can
   * no longer be claimed. Until then it stays the one trial. Counted from the probe's start once a worker claimed it
   * (`probeStartedAt`), and must then exceed the API timeout, so a probe still calling is never presumed lost; from
   * the send while no worker has, so an event Lambda never starts does not hold the circuit forever.
   */
  checkTimeoutAt(halfOpen: HalfOpenState): number;
}

/** Both decisions of a circuit, passed to every transition. */
export interface CircuitPolicy {
  /** When a closed circuit opens. */
  readonly opening: OpeningPolicy;
  /** When an open circuit probes, and when a probe is given up. */
  readonly probe: ProbePolicy;
}

/**
 * Opens on the `failureThreshold`-th transient failure within the last `windowSeconds`. A failure exactly
 * `windowSeconds` old no longer counts. Keeps at most `failureThreshold - 1` failures, the latest.
 *
 * Opens at once on a refusal that names the caller (401, 403): every other job would be refused alike. Opens on
 * another 4xx once `callerRejectThreshold` job results in a row were such refusals: one job's 4xx is its own fault,
 * but many different jobs refused alike, with no success between, point at the caller (e.g. a wrong URL).
 *
 * A circuit opened on a refusal is tried with a job (`trial: 'job'`), unless it was a 401 or 403 and the probe checks
 * the key (`probeChecksKey`): a probe of a health URL that needs no key, or not the jobs' URL, answers 200 all the
 * same, and closing on it would send the slow start's first jobs to be refused again.
 */
export class ThresholdOpeningPolicy implements OpeningPolicy {
  constructor(
    private readonly settings: Pick<
      BreakerSettings,
      'failureThreshold' | 'windowSeconds' | 'callerRejectThreshold' | 'probeChecksKey'
    >,
  ) {}

  /** {@inheritDoc OpeningPolicy.onFailure} */
  onFailure(failures: readonly number[], now: number): OpeningDecision {
    const { failureThreshold, windowSeconds } = this.settings;
    const recent = failures.filter((t) => t > now - windowSeconds * 1000).slice(-failureThreshold);
    if (recent.length < failureThreshold) return { open: false, failures: recent };
    return {
      open: true,
      reason: `${failureThreshold} transient ${failureThreshold === 1 ? 'failure' : 'failures'} within ${windowSeconds} s`,
    };
  }

  /** {@inheritDoc OpeningPolicy.onCallerRejected} */
  onCallerRejected(reason: string): RejectionDecision {
    const opened = { open: true, reason: `caller rejected: ${reason}` } as const;
    return this.settings.probeChecksKey ? opened : { ...opened, trial: 'job' };
  }

  /** {@inheritDoc OpeningPolicy.onClientError} */
  onClientError(run: number, reason: string): RejectionDecision {
    return run < this.settings.callerRejectThreshold
      ? { open: false }
      : { open: true, reason: `caller rejected: ${reason} on ${run} jobs in a row`, trial: 'job' };
  }
}

/**
 * Probes after a cool-down, then at a fixed interval:
 * - the first check is due `openSeconds` after opening;
 * - **flapping grows the cool-down**: a circuit that re-opens within `windowSeconds` of closing waits twice as long
 *   as the last time (capped at `maxOpenSeconds`); a circuit that stayed closed longer starts over;
 * - after a failed check, the next is due `healthCheckSeconds` later, whatever the cool-down was; after a failed job's
 *   trial, twice as long as after the one before (`healthCheckSeconds`, then 2, 4… times it), capped at
 *   `maxOpenSeconds`: each trial is a job's call that a revoked key gets refused, not a probe;
 * - a check is presumed lost `healthCheckTimeoutSeconds` after its probe started, or after it was sent if no worker
 *   started it by then (the settings keep that above the API timeout).
 */
export class CooldownProbePolicy implements ProbePolicy {
  constructor(
    private readonly settings: Pick<
      BreakerSettings,
      'windowSeconds' | 'openSeconds' | 'maxOpenSeconds' | 'healthCheckSeconds' | 'healthCheckTimeoutSeconds'
    >,
  ) {}

  /** {@inheritDoc ProbePolicy.onOpen} */
  onOpen(closed: ClosedState, now: number): FirstCheck {
    const { windowSeconds, openSeconds, maxOpenSeconds } = this.settings;
    const flapping = closed.closedAt !== null && now - closed.closedAt < windowSeconds * 1000;
    const reopenStreak = flapping ? closed.reopenStreak + 1 : 0;
    const cooldownSeconds = Math.min(openSeconds * 2 ** reopenStreak, maxOpenSeconds);
    return { nextCheckAt: now + cooldownSeconds * 1000, reopenStreak };
  }

  /** {@inheritDoc ProbePolicy.afterFailedCheck} */
  afterFailedCheck(halfOpen: HalfOpenState, now: number): number {
    const { healthCheckSeconds, maxOpenSeconds } = this.settings;
    if (halfOpen.trial !== 'job') return now + healthCheckSeconds * 1000;
    const grown = Math.min(healthCheckSeconds * 2 ** halfOpen.failedChecks, maxOpenSeconds);
    return now + Math.max(healthCheckSeconds, grown) * 1000;
  }

  /** {@inheritDoc ProbePolicy.checkTimeoutAt} */
  checkTimeoutAt(halfOpen: HalfOpenState): number {
    return (halfOpen.probeStartedAt ?? halfOpen.checkSentAt) + this.settings.healthCheckTimeoutSeconds * 1000;
  }
}

/**
 * The policy that `settings` configure: {@link ThresholdOpeningPolicy} and {@link CooldownProbePolicy}. Build it once
 * where the settings are read, and pass the same object to every transition and to `healthCheckDueAt`.
 */
export function circuitPolicyFrom(settings: BreakerSettings): CircuitPolicy {
  return Object.freeze({ opening: new ThresholdOpeningPolicy(settings), probe: new CooldownProbePolicy(settings) });
}
