import type { JobEvent } from '../../ports/Invoker';
import type { WorkerDeps } from './types';

/**
 * The attempt that the call of `event`'s job makes, by the service's own count. A standard-queue job's requeued copy
 * carries it (`event.attempt`), since a retry is a new message. A FIFO retry keeps its message, whose receive count
 * (the orchestrator's `event.attempt`) also grows with every hand-back, stand-down and pause: the attempt is the
 * count of calls of the job that spent one (see `IdempotencyStore.attemptsSpent`), plus this one. A first receive
 * spent none and needs no read; the count never exceeds the receives. A count that cannot be read gives no ground
 * to give the job up: it is taken as one short of the last attempt, or the receives if fewer.
 * @returns a promise that never rejects, started after the claim so that the read runs beside the wait for the slot.
 */
export async function attemptOf(event: JobEvent, deps: WorkerDeps): Promise<number> {
  if (event.queue !== 'fifo' || event.attempt <= 1) return event.attempt;
  const spent = await deps.stores.idempotency.attemptsSpent(event.idempotencyKey).catch(() => undefined);
  if (spent === undefined) return Math.max(1, Math.min(event.attempt, deps.config.retry.maxAttempts - 1));
  return Math.min(spent + 1, event.attempt);
}
