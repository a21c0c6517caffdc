import type { ServiceConfig } from '../../lib/config';
import type { BatchEvent, JobEvent } from '../../lib/ports/Invoker';
import type { ReceivedMessage } from '../../lib/ports/QueueReceiver';
import { LANE, START, receiveJobEvent, sendJob, testConfig, type WorkerHarness } from './serviceFixtures';

/** {@link testConfig}'s idempotency TTL, how long the worker's records are kept: the default, 22 days. */
export const IDEMPOTENCY_TTL_MS = testConfig().orchestrator.idempotencyTtlMs;

/** {@link testConfig} with a tier of the `cost` unit too, so that the worker reads the cost a call used (`x-actual-cost`). */
export const COST_CONFIG: ServiceConfig = testConfig({
  quotas: [
    { limit: 5, per: 'second' },
    { limit: 1_000, per: 'second', unit: 'cost' },
  ],
});

/** Receives up to ten messages of `queue` at once, with 30 s visibility. */
export async function receiveAll(h: WorkerHarness, queue: 'main' | 'fifo' | 'requeue'): Promise<ReceivedMessage[]> {
  return h.queues.receive(queue, { max: 10, visibilityMs: 30_000, waitMs: 0 });
}

/** A batch event of `ids`' jobs (keys `k-<id>`), received now, dispatch ids `d-<id>`. */
export async function batchOf(h: WorkerHarness, ids: readonly string[]): Promise<BatchEvent> {
  for (const id of ids) await sendJob(h.queues, 'main', { id }, { idempotencyKey: `k-${id}` });
  const jobs = [];
  for (const id of ids) jobs.push(await receiveJobEvent(h, 'main', `d-${id}`));
  return { kind: 'batch', lane: LANE, jobs, sentAt: h.clock.now() };
}

/** `job` with its slot and its reservation `slotMs` after {@link START}, to be called by `callByMs` after it. */
export function atSlot(job: JobEvent, slotMs: number, callByMs: number): JobEvent {
  return {
    ...job,
    slotAt: START + slotMs,
    callBy: START + callByMs,
    reservation: { ...job.reservation, at: START + slotMs },
  };
}
