import { circuitPolicyFrom } from '../../domain/breaker/policy';
import { classify } from '../../domain/outcome/classify';
import type { HealthCheckEvent } from '../../ports/Invoker';
import { applyCircuitEvent } from '../circuitUpdates';
import { transitionsOf } from './circuitReports';
import { readyCaller } from './readyCaller';
import type { HealthCheckOutcome, WorkerDeps } from './types';

/**
 * Gets the API caller ready (its key read; see {@link readyCaller}), then claims the circuit's half-open trial
 * `event.checkId` with a conditional write, and only if that write is this delivery's, probes the API and records the
 * verdict. Another delivery of the same event, a late one, or one of a replaced check finds the claim refused and
 * makes no call: so at most one probe runs at a time. The probe's clock (the half-open timeout, counted from the
 * claim) starts with the key in hand, so a slow key read cannot make a probe outlive it. A caller that cannot get
 * ready claims nothing: the check times out unclaimed and another is sent.
 */
export async function processHealthCheck(event: HealthCheckEvent, deps: WorkerDeps): Promise<HealthCheckOutcome> {
  const { clock, stores, config } = deps;
  const policy = circuitPolicyFrom(config.circuit);
  const caller = await readyCaller(deps, event.lane, { checkId: event.checkId });
  if (caller === undefined) return 'not-ready';
  const claim = await applyCircuitEvent(
    stores.circuit,
    event.lane,
    { type: 'health-check-started', checkId: event.checkId },
    clock.now(),
    policy,
    transitionsOf(deps),
  );
  if (!claim.written) return 'not-current';
  const result = await caller.probe();
  const now = clock.now();
  const healthy = classify(result, now).kind === 'success';
  const type = healthy ? 'health-check-ok' : 'health-check-failed';
  await applyCircuitEvent(
    stores.circuit,
    event.lane,
    { type, checkId: event.checkId },
    now,
    policy,
    transitionsOf(deps),
  );
  return healthy ? 'healthy' : 'unhealthy';
}
