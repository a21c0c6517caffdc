import { parseServiceConfig, type ServiceConfig } from '../../../lib/config';
import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import type { JobEvent } from '../../../lib/ports/Invoker';
import type { SourceQueue } from '../../../lib/ports/QueueReceiver';
import { jobEventOf, parseJob } from '../../../lib/services/parseJob';
import type { WorkerDeps } from '../../../lib/services/worker/types';
import { FakeClock } from '../../memory/FakeClock';
import { MemoryQueues } from '../../memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../memory/MemoryStores';

/** Virtual start of every condition scenario's world: a Monday, 00:00 UTC. */
export const WORLD_START = Date.UTC(2026, 0, 5);

/**
 * The configuration of a condition scenario's world: 5 calls a second, calls counted at their slot (no arrival
 * margin), 3 attempts, a 30 s visibility over a 5 s worker timeout, and the defaults otherwise.
 */
export const WORLD_CONFIG: ServiceConfig = parseServiceConfig({
  lane: 'api',
  quotas: [{ limit: 5, per: 'second' }],
  pacing: { rampSeconds: 0, pauseJitterMs: 0, arrivalMarginMs: 0, callAllowanceMs: 0, dispatchLeadMs: 0 },
  retry: { maxAttempts: 3, baseDelayMs: 1_000 },
  orchestrator: { visibilityTimeoutMs: 30_000, workerTimeoutMs: 5_000 },
});

/** An API that answers each call with the next of `answers` (then 200), `latencyMs` after it arrives, and records it. */
export class RecordingApi implements ApiCaller {
  readonly calls: { readonly at: number; readonly idempotencyKey: string }[] = [];
  readonly answers: ApiResult[] = [];
  latencyMs = 0;

  constructor(private readonly clock: FakeClock) {}

  async call(_body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    this.calls.push({ at: this.clock.now(), idempotencyKey: context.idempotencyKey });
    const result = this.answers.shift() ?? { kind: 'response', status: 200, headers: {} };
    if (this.latencyMs > 0) await this.clock.sleep(this.latencyMs);
    return result;
  }

  async probe(): Promise<ApiResult> {
    return { kind: 'response', status: 200, headers: {} };
  }
}

/** A worker's world on virtual time: the in-memory stores and queues, a {@link RecordingApi}, and the worker's deps. */
export interface WorkerWorld {
  readonly clock: FakeClock;
  readonly stores: MemoryStores;
  readonly queues: MemoryQueues;
  readonly api: RecordingApi;
  readonly deps: WorkerDeps;
}

/** A fresh {@link WorkerWorld} at {@link WORLD_START}, configured with `config`; jitter is fixed at one half. */
export function workerWorld(config: ServiceConfig = WORLD_CONFIG): WorkerWorld {
  const clock = new FakeClock(WORLD_START);
  const stores = memoryStores();
  const queues = new MemoryQueues({ clock });
  const api = new RecordingApi(clock);
  return { clock, stores, queues, api, deps: { clock, stores, queues, api, config, random: () => 0.5 } };
}

/**
 * Receives the next message of `queue` (hidden for the visibility timeout) and makes the event the orchestrator would
 * send for it as dispatch `dispatchId`: its slot at `slotAt`, to be called by `callBy` (both default now).
 * @throws Error when the queue has nothing to deliver or the message is malformed.
 */
export async function dispatchNext(
  world: WorkerWorld,
  queue: SourceQueue,
  dispatchId: string,
  { slotAt = world.clock.now(), callBy = slotAt }: { readonly slotAt?: number; readonly callBy?: number } = {},
): Promise<JobEvent> {
  const { config } = world.deps;
  const [message] = await world.queues.receive(queue, {
    max: 1,
    visibilityMs: config.orchestrator.visibilityTimeoutMs,
    waitMs: 0,
  });
  if (message === undefined) throw new Error(`nothing to receive from '${queue}'`);
  const parsed = parseJob(message, config.units);
  if (!parsed.ok) throw new Error(parsed.reason);
  const reservation = { at: slotAt, costs: parsed.job.costs, windows: {} };
  return jobEventOf(config.lane, message, parsed.job, dispatchId, reservation, callBy, world.clock.now());
}
