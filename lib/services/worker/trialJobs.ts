import { circuitPolicyFrom } from '../../domain/breaker/policy';
import type { CircuitEvent } from '../../domain/breaker/state';
import { applyCircuitEvent } from '../circuitUpdates';
import { transitionsOf } from './circuitReports';
import type { AnsweredCall, WorkerDeps } from './types';

/**
 * The job an open circuit is tried with after a refusal of the caller (see `JobEvent.trial`). Its worker claims the
 * check right before the call, as a health check's worker claims its probe: of the jobs sent as one check (a second
 * delivery, a run that sent it again), only the one whose claim is written calls. Its call's result is the check's:
 * a success closes the circuit, anything else keeps it open.
 */

/**
 * Claims check `checkId` of the circuit of `lane` for the job's call. @returns true when this claim was written; false
 * when the check is no longer current (claimed, replaced, timed out, or the circuit moved on), or the store could not
 * be written: then the job does not call, and an unclaimed check times out and is replaced.
 */
export async function claimTrial(lane: string, checkId: string, deps: WorkerDeps): Promise<boolean> {
  const claim = { type: 'health-check-started', checkId, trial: 'job' } as const;
  return applyTrialEvent(lane, claim, deps.clock.now(), deps);
}

/**
 * Reports the result of the call `call` of the job sent as check `checkId` of the circuit of `lane` as the check's. A
 * report that cannot be written is dropped: the job ends as its call did all the same, and the check, claimed and
 * never reported, times out as failed.
 */
export async function reportTrial(lane: string, checkId: string, call: AnsweredCall, deps: WorkerDeps): Promise<void> {
  const type = call.classification.kind === 'success' ? 'health-check-ok' : 'health-check-failed';
  await applyTrialEvent(lane, { type, checkId }, call.now, deps);
}

/** Applies `event` to the circuit of `lane` at `now`. @returns whether this call's write landed. */
async function applyTrialEvent(lane: string, event: CircuitEvent, now: number, deps: WorkerDeps): Promise<boolean> {
  const { stores, config } = deps;
  const policy = circuitPolicyFrom(config.circuit);
  return applyCircuitEvent(stores.circuit, lane, event, now, policy, transitionsOf(deps)).then(
    (update) => update.written,
    () => false,
  );
}
