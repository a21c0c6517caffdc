import { parseServiceConfig, type ServiceConfig } from '../../../lib/config';
import { fifoRedriveThreshold } from '../../../lib/domain/outcome/retryPolicy';
import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import type { WorkerEvent } from '../../../lib/ports/Invoker';
import type { SourceQueue } from '../../../lib/ports/QueueReceiver';
import { runOrchestrator } from '../../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent } from '../../../lib/services/orchestrator/types';
import { processWorkerEvent } from '../../../lib/services/worker/processWorkerEvent';
import type { WorkerDeps, WorkerReport } from '../../../lib/services/worker/types';
import { FakeClock } from '../../memory/FakeClock';
import { MemoryInvoker } from '../../memory/MemoryInvoker';
import { MemoryQueues } from '../../memory/MemoryQueues';
import { memoryStores, type MemoryStores } from '../../memory/MemoryStores';
import { WORLD_START } from './harness';

/**
 * A configuration of the lane `api` with `quotas`, and otherwise the defaults but for `overrides` (sections merged
 * over the defaults, as a deployment writes them).
 */
export function serviceConfig(quotas: unknown, overrides: Record<string, unknown> = {}): ServiceConfig {
  return parseServiceConfig({ lane: 'api', quotas, ...overrides });
}

/**
 * One lane's whole service on virtual time, from {@link WORLD_START}: the real orchestrator runs, one a minute as the
 * schedule starts them, and the real worker for every event they send, on the in-memory stores and queues, calling
 * `api`. Where `harness.ts` hands a scenario one worker's world, this runs the lane end to end.
 */
export class ConditionService<A extends ApiCaller = ApiCaller> {
  readonly clock = new FakeClock(WORLD_START);
  readonly stores: MemoryStores = memoryStores();
  readonly queues: MemoryQueues;
  readonly invoker: MemoryInvoker;
  /** What the orchestrator runs reported, in order. */
  readonly events: OrchestratorEvent[] = [];
  /** What the workers reported, in order. */
  readonly reports: WorkerReport[] = [];
  /** Every event a worker was started with, in order. */
  readonly workerEvents: WorkerEvent[] = [];
  /** The API the workers call, built on the service's clock. */
  readonly api: A;
  private ids = 0;
  private ticks = 0;

  constructor(
    readonly config: ServiceConfig,
    apiOn: (clock: FakeClock) => A,
  ) {
    const { clock, stores } = this;
    const api = apiOn(clock);
    this.api = api;
    // The redrive thresholds a deployment has by default (custom.queues): 10, and the FIFO queue's own.
    const fifoMaxReceiveCount = fifoRedriveThreshold(config.retry.maxAttempts);
    this.queues = new MemoryQueues({ clock, maxReceiveCount: 10, fifoMaxReceiveCount });
    const deps: WorkerDeps = {
      clock,
      stores,
      queues: this.queues,
      api,
      config,
      random: () => 0.5,
      onEvent: (report) => this.reports.push(report),
    };
    this.invoker = new MemoryInvoker({
      clock,
      latencyMs: 20,
      handler: (event) => {
        this.workerEvents.push(event);
        return processWorkerEvent(event, deps);
      },
    });
  }

  /** Sends a job message with body `body` to `queue`, in FIFO group `groupId` if given. */
  async send(queue: SourceQueue, body: string, groupId?: string): Promise<void> {
    await this.queues.send(queue, { body, attributes: {}, ...(groupId === undefined ? {} : { groupId }) });
  }

  /**
   * Runs the schedule's ticks, one a minute from the next whole minute of virtual time, until `until` (epoch ms), or
   * until `done` holds between two ticks: each run stops a second before the next tick, or earlier when idle.
   */
  async runUntil(until: number, done: () => boolean = () => false): Promise<void> {
    let finished = false;
    const ticking = (async () => {
      while (this.clock.now() < until && !done()) {
        const tickAt = WORLD_START + this.ticks++ * 60_000;
        if (tickAt > this.clock.now()) await this.clock.sleep(tickAt - this.clock.now());
        await runOrchestrator(
          {
            clock: this.clock,
            stores: this.stores,
            queues: this.queues,
            invoker: this.invoker,
            config: this.config,
            random: () => 0.5,
            owner: `orchestrator-${this.ticks}`,
            newId: () => `id-${++this.ids}`,
            onEvent: (event) => this.events.push(event),
          },
          { deadline: Math.min(tickAt + 59_000, until) },
        );
      }
      // The workers' last calls end within their timeout.
      await this.clock.sleep(this.config.orchestrator.workerTimeoutMs);
      finished = true;
    })();
    if (!(await this.clock.runUntil(() => finished, until + 120_000)))
      throw new Error('the service was still running two minutes after the end of the scenario');
    await ticking;
  }
}
