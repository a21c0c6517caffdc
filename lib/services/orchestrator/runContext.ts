import type { OrchestratorSettings, ServiceConfig } from '../../config';
import type { Clock } from '../../ports/Clock';
import type { OrchestratorDeps, OrchestratorEvent, RunOptions, Tally } from './types';

/** What a run context is made of besides the run's bounds: the clock, the settings and the run's listener. */
export type RunContextDeps = Pick<OrchestratorDeps, 'clock' | 'config' | 'onEvent'>;

/**
 * What the rooms of one run share: its clock, its settings, its bounds, its reporting, its waiting and its tally. No
 * port: each room is handed the ones it uses (see `RunPorts`).
 */
export class RunContext {
  /** Counted as the run goes. */
  readonly tally: Tally = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 };
  readonly clock: Clock;
  /** The service's settings: the lane, its quota tiers and units, pacing, circuit and the orchestrator's own. */
  readonly config: ServiceConfig;
  private readonly onEvent: ((event: OrchestratorEvent) => void) | undefined;

  constructor(
    { clock, config, onEvent }: RunContextDeps,
    readonly options: RunOptions,
  ) {
    this.clock = clock;
    this.config = config;
    this.onEvent = onEvent;
  }

  /** The orchestrator's settings. */
  get settings(): OrchestratorSettings {
    return this.config.orchestrator;
  }

  /** Hands `event` to the run's listener, if any. */
  report(event: OrchestratorEvent): void {
    this.onEvent?.(event);
  }

  /** Sleeps until `at`, never past the deadline, and at least 1 ms: a step that waits always lets time pass. */
  async sleepUntil(at: number): Promise<void> {
    await this.clock.sleep(Math.max(1, Math.min(at, this.options.deadline) - this.clock.now()));
  }
}
