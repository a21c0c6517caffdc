import type { Circuit, CircuitEvent } from '../../domain/breaker/state';
import { circuitPolicyFrom } from '../../domain/breaker/policy';
import type { Classification } from '../../domain/outcome/classify';
import { applyCircuitEvent, type OnCircuitTransition } from '../circuitUpdates';
import type { WorkerDeps } from './types';
import { poolStateName } from '../../domain/quota/poolSettlements';

/**
 * Reports a failed call to the circuit: a 429 pauses the lane until the API's Retry-After (or the retry delay), and
 * every pool of the lane whose `rateLimitScope` is `pool` too (the pool's circuit item, which its run reads: see
 * `PoolRun`); a transient failure counts toward opening; a refusal of the caller (401, 403) opens it; another 4xx
 * lengthens the run of refusals. Returns the circuit after the report, `undefined` when the result is none of the
 * circuit's business.
 */
export async function reportFailure(
  classification: Classification,
  delayMs: number,
  now: number,
  lane: string,
  deps: WorkerDeps,
): Promise<Circuit | undefined> {
  const event = circuitEventOf(classification, delayMs, now);
  if (event === undefined) return undefined;
  const after = await reportToCircuit(event, now, lane, deps);
  if (event.type === 'rate-limited')
    for (const pool of deps.config.pools ?? [])
      if (pool.rateLimitScope === 'pool') await reportToCircuit(event, now, poolStateName(pool.name), deps);
  return after;
}

/** The event a failed call classified as `classification` makes on the circuit, if any (see {@link reportFailure}). */
function circuitEventOf(classification: Classification, delayMs: number, now: number): CircuitEvent | undefined {
  switch (classification.kind) {
    case 'rate-limited':
      return { type: 'rate-limited', retryAt: now + (classification.retryAfterMs ?? delayMs) };
    case 'transient':
      return { type: 'transient-failure' };
    case 'caller-rejected':
      return { type: 'caller-rejected', reason: classification.reason };
    case 'client-error':
      return { type: 'client-error', reason: classification.reason };
    default:
      return undefined;
  }
}

/**
 * Reports a success to the lane's circuit when it ends a run of 4xx refusals, the only change a success makes. The run
 * is the one the check before the call read (`known`; see `CircuitView`), or else read eventually consistent (half a
 * read unit). Either way a run that began while the call ran, or in the last second, may be missed: then the next
 * success whose call leaves after it ends it, or the next refusal lengthens it by one more than it should.
 */
export async function endRefusalRun(now: number, lane: string, deps: WorkerDeps, known?: number): Promise<void> {
  if ((known ?? (await deps.stores.circuit.refusalRun(lane))) > 0)
    await reportToCircuit({ type: 'success' }, now, lane, deps);
}

/** Applies `event` to the lane's circuit, tells {@link WorkerDeps.onEvent} of a change of status it wrote, and returns the circuit after. */
async function reportToCircuit(event: CircuitEvent, now: number, lane: string, deps: WorkerDeps): Promise<Circuit> {
  const { after } = await applyCircuitEvent(
    deps.stores.circuit,
    lane,
    event,
    now,
    circuitPolicyFrom(deps.config.circuit),
    transitionsOf(deps),
  );
  return after;
}

/** The hook that hands the circuit transitions a worker writes to {@link WorkerDeps.onEvent}. */
export function transitionsOf(deps: WorkerDeps): OnCircuitTransition | undefined {
  const { onEvent } = deps;
  return onEvent === undefined ? undefined : (transition) => onEvent({ type: 'circuit-transition', ...transition });
}
