import type { OrchestratorSettings } from '../../config';
import type { OrchestratorDeps, OrchestratorEvent, RunOptions, Tally } from './types';

/** What the rooms of one run share: its dependencies (store and queues guarded), its bounds and its tally. */
export class RunContext {
  /** Counted as the run goes. */
  readonly tally: Tally = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 };

  constructor(
    /** The run's dependencies, with the store and the queues already guarded (see `guardedPorts`). */
    readonly deps: OrchestratorDeps,
    readonly options: RunOptions,
  ) {}

  /** The orchestrator's settings. */
  get settings(): OrchestratorSettings {
    return this.deps.config.orchestrator;
  }

  /** Hands `event` to the run's listener, if any. */
  report(event: OrchestratorEvent): void {
    this.deps.onEvent?.(event);
  }

  /** Sleeps until `at`, never past the deadline, and at least 1 ms: a step that waits always lets time pass. */
  async sleepUntil(at: number): Promise<void> {
    const { clock } = this.deps;
    await clock.sleep(Math.max(1, Math.min(at, this.options.deadline) - clock.now()));
  }
}
