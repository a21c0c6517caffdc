import type { ServiceConfig } from '../../../lib/config';
import type { ApiCaller, ApiResult, Preparation, ReadyCaller } from '../../../lib/ports/ApiCaller';
import type { Clock } from '../../../lib/ports/Clock';
import type { JobEvent } from '../../../lib/ports/Invoker';
import { jobEventOf, parseJob } from '../../../lib/services/parseJob';
import type { WorkerDeps } from '../../../lib/services/worker/types';
import { FakeClock } from '../../memory/FakeClock';
import { MemoryQueues } from '../../memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../memory/MemoryStores';

/**
 * An API caller whose key takes `keyReadMs` on `clock` to read, as the example HTTP caller's read from SSM Parameter
 * Store (decrypted with KMS) does on a new container or once its cache has expired: `prepare` reads it, and a caller
 * not prepared reads it inside each request, as the example caller does. With `failure`, the read fails so.
 */
export class SlowKeyApi implements ApiCaller {
  constructor(
    private readonly api: ReadyCaller,
    private readonly clock: Clock,
    private readonly keyReadMs: number,
    private readonly failure?: string,
  ) {}

  /** Reads the key, then answers ready with the API behind it, or not ready with `failure`. */
  async prepare(): Promise<Preparation> {
    await this.clock.sleep(this.keyReadMs);
    return this.failure === undefined
      ? { kind: 'ready', caller: this.api }
      : { kind: 'not-ready', reason: this.failure };
  }

  /** Reads the key, then calls; a failed read is a network error, as the example caller reports it. */
  async call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    const read = await this.prepare();
    return read.kind === 'ready' ? read.caller.call(body, context) : { kind: 'network-error', message: read.reason };
  }

  /** Reads the key, then probes, as {@link SlowKeyApi.call} calls. */
  async probe(): Promise<ApiResult> {
    const read = await this.prepare();
    return read.kind === 'ready' ? read.caller.probe() : { kind: 'network-error', message: read.reason };
  }
}

/** A worker's world on a fake clock: memory stores and queues, and the dependencies to run it with an API caller. */
export interface WorkerWorld {
  readonly clock: FakeClock;
  readonly stores: MemoryStores;
  readonly queues: MemoryQueues;
  readonly config: ServiceConfig;
  /** The worker's dependencies, calling through `api`. */
  deps(api: ApiCaller): WorkerDeps;
}

/** A {@link WorkerWorld} of `config` whose clock starts at `start`. */
export function workerWorld(config: ServiceConfig, start: number): WorkerWorld {
  const clock = new FakeClock(start);
  const stores = memoryStores();
  const queues = new MemoryQueues({ clock });
  return {
    clock,
    stores,
    queues,
    config,
    deps: (api) => ({ clock, stores, queues, api, config, random: () => 0.5 }),
  };
}

/**
 * Queues job `id` (body `{"id": id}`) on the main queue, receives it, and returns the event the orchestrator would
 * send for it at `sentAt`, with its slot at `slotAt` and to be called by `callBy`.
 * @throws Error if the message cannot be received or parsed.
 */
export async function dispatchedJob(
  world: WorkerWorld,
  id: string,
  times: { readonly sentAt: number; readonly slotAt: number; readonly callBy: number },
): Promise<JobEvent> {
  await world.queues.send('main', { body: JSON.stringify({ id }), attributes: {} });
  const [message] = await world.queues.receive('main', { max: 1, visibilityMs: 60_000, waitMs: 0 });
  if (message === undefined) throw new Error(`job ${id} could not be received`);
  const parsed = parseJob(message, world.config.units);
  if (!parsed.ok) throw new Error(parsed.reason);
  const reservation = { at: times.slotAt, costs: parsed.job.costs, windows: {} };
  return jobEventOf(world.config.lane, message, parsed.job, `d-${id}`, reservation, times.callBy, times.sentAt);
}
