import { StateUnavailableError } from '../../errors';
import { Backoff } from './backoff';
import type { RunContext } from './runContext';

/**
 * The run's standing with the state store: `in-sync` while its calls succeed; `outage` from the first failed call
 * (at `since`) until a flush and a circuit read have both succeeded again, the next try being at `retryAt`.
 */
export type StateSide =
  { readonly kind: 'in-sync' } | { readonly kind: 'outage'; readonly since: number; readonly retryAt: number };

const IN_SYNC: StateSide = { kind: 'in-sync' };

/**
 * Runs the run's state-store calls and keeps its {@link StateSide}, under the state-outage policy.
 *
 * **State-outage policy** (`orchestrator.stateOutage`). A failed state-store call (DynamoDB unavailable or
 * throttled, a timeout) does not end the run: it keeps its in-memory ledger and the last circuit it read (an open
 * circuit or a 429 pause still holds), reports `state-unavailable`, and tries again with back-off (from
 * `invokeBackoffMs`, doubling up to 10 s, never past the deadline): it retries a failed flush (only the renewal if
 * the ledger was saved), then reads the circuit; once both succeed it reports `state-recovered` (see
 * `OrchestratorRun.syncState`). Meanwhile a message goes only as `LedgerSync.mayDispatch` allows: under
 * `pace-in-memory` (the default) within the last saved allowance or the lease, under `pause` not at all. Health checks
 * wait for recovery too (they need a circuit write). A run whose final save fails keeps the lease until it expires,
 * so the next run cannot miss what this one dispatched.
 */
export class StateLink {
  private current: StateSide = IN_SYNC;
  private readonly retry: Backoff;

  constructor(private readonly run: RunContext) {
    this.retry = new Backoff(run.settings.invokeBackoffMs);
  }

  /** The run's standing with the store. */
  get side(): StateSide {
    return this.current;
  }

  /** Whether the store is left alone at `now`: an outage's back-off has not run out yet. */
  waiting(now: number): boolean {
    return this.current.kind === 'outage' && now < this.current.retryAt;
  }

  /**
   * Runs a state-store call; on {@link StateUnavailableError} starts or extends the outage and returns `undefined`.
   * Anything else, a lost lease included, is thrown.
   */
  async attempt<T>(call: () => Promise<T>): Promise<{ readonly value: T } | undefined> {
    try {
      return { value: await call() };
    } catch (error) {
      if (!(error instanceof StateUnavailableError)) throw error;
      const now = this.run.clock.now();
      const retryAt = now + this.retry.next();
      this.current = { kind: 'outage', since: this.current.kind === 'outage' ? this.current.since : now, retryAt };
      this.run.report({
        type: 'state-unavailable',
        at: now,
        operation: error.operation,
        error: error.message,
        retryAt,
      });
      return undefined;
    }
  }

  /** Ends an outage, reporting `state-recovered`: the caller has just flushed (if due) and read the circuit. */
  recovered(): void {
    if (this.current.kind !== 'outage') return;
    const at = this.run.clock.now();
    this.run.report({ type: 'state-recovered', at, unavailableMs: at - this.current.since });
    this.current = IN_SYNC;
    this.retry.reset();
  }
}
