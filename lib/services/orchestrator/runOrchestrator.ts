import type { ServiceConfig } from '../../config';
import { CallSlots } from '../../domain/inflight/callSlots';
import { Pacer } from '../../domain/pacing/pacer';
import { QuotaLedger, type LedgerJSON } from '../../domain/quota/ledger';
import { StateUnavailableError } from '../../errors';
import { loadCircuit } from '../circuitUpdates';
import { Backoff } from './backoff';
import { guardQueues, guardStores } from './guardedPorts';
import { OrchestratorRun } from './orchestratorRun';
import { RunContext } from './runContext';
import type { OrchestratorDeps, RunOptions, RunQuota, RunSummary } from './types';

const NOTHING_DONE = { dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 } as const;

/**
 * One orchestrator run (steps 1–4 of docs/architecture.md): take the lease, rehydrate ledger and circuit, then
 * until the deadline read the circuit every `circuitPollMs` (a worker's change, an open circuit or a 429 pause,
 * reaches dispatch within that) — sending only health checks while it is not closed, and nothing while an operator
 * holds the lane (see `pauseLane`: the buffered messages go back to their queues, the lease is kept and flushed) —
 * receive requeue ▸ fifo ▸ main, wait for each pacing slot and invoke a worker; flush the ledger every
 * `flushIntervalMs` and at exit, and release the lease. A run that has had nothing to do for `idleStopMs` (every
 * queue empty, the circuit and the quota letting work through) ends early; the next tick starts the next one. It
 * never dispatches without the lease: a flush that finds the lease lost ends the run at once.
 *
 * Only a lost lease ({@link LeaseLostError}), a corrupt stored item ({@link StateFormatError}: retrying cannot mend
 * it, and a ledger that cannot be read cannot bound a dispatch, so it surfaces as the run's error for the alarms)
 * and genuine bugs end a run early. Everything the AWS services may throw after the SDK's own retries is absorbed:
 *
 * **State-outage policy** (`orchestrator.stateOutage`). A failed state-store call (DynamoDB unavailable or
 * throttled, a timeout) does not end the run: it keeps its in-memory ledger and the last circuit it read (an open
 * circuit or a 429 pause still holds), reports `state-unavailable`, and tries again with back-off (from
 * `invokeBackoffMs`, doubling up to 10 s, never past the deadline): it retries a failed flush (only the renewal if
 * the ledger was saved), then reads the circuit; once both succeed it reports `state-recovered`. Meanwhile, under
 * `pace-in-memory` (the default), a message goes only if, for every tier, either
 * - its units fit the allowance the last *saved* ledger holds (see `LedgerSync`'s flush), which a successor
 *   counts; or
 * - the tier slides and `now + arrivalMarginMs + window <= lease.expiresAt`: a successor may only dispatch from the
 *   expiry of the last renewed lease, so no window of its dispatches can hold this one.
 *
 * Day, month and long sliding tiers therefore never go past quota already reserved, short tiers keep being paced on
 * the in-memory ledger, and nothing goes at or after `lease.expiresAt` (a renewal that succeeds later resumes the
 * run; one that finds the lease taken over ends it). Under `pause`, nothing is dispatched from the first failed
 * state call until recovery. Health checks wait for recovery too (they need a circuit write). A run
 * whose final save fails keeps the lease until it expires, so the next run cannot miss what this one dispatched.
 * At start, a failed lease, ledger or circuit read is retried the same way; at the deadline the run returns
 * `unavailable`.
 *
 * **Queues.** A failed receive, or a failed send to a dead-letter queue, backs off the same way (the message stays at
 * the head; if its visibility runs out meanwhile it is received again later). A message sent to its DLQ whose
 * delete then fails is received again after its visibility and dead-lettered again (a second copy in the DLQ, nothing
 * lost). A failed hand-back at exit is
 * skipped: the message reappears after its visibility. Each is reported as `queue-unavailable`.
 *
 * **Quota exhaustion.** SQS counts every receive, so a run receives only what it could send while the message is
 * held: before each receive it asks the pacer when one unit could go next (every tier and the 429 pause); if that is
 * after the run's end or after a message received now would have to go (its visibility less a worker's run), it
 * receives nothing, hands back what is buffered (visibility 0: no receive is taken, none given back) and waits.
 * Beyond the visibility the quota is exhausted: `quota-exhausted` names the tier and until when, once per episode
 * (each run that finds it so reports it again), and `quota-available` marks its end. A received head whose cost
 * does not fit in time is hidden until its slot (at most 12 hours after its receive) and reported `message-held`.
 *
 * **Invokes.** A throttled or refused invoke refunds its quota and backs off; one that failed but may have started
 * (a 5xx, a timeout: `InvokeFailedError.mayHaveStarted`) keeps its quota and backs off; one Lambda refuses for the
 * event itself ({@link InvokeRejectedError}, e.g. over the async payload limit) dead-letters the message with that
 * reason.
 *
 * @throws StateFormatError when a stored ledger or circuit cannot be read; any error that is none of the above.
 */
export async function runOrchestrator(deps: OrchestratorDeps, options: RunOptions): Promise<RunSummary> {
  const run = new RunContext(deps, options);
  const { clock, config } = run;
  const stores = guardStores(deps.stores);
  const retry = new Backoff(config.orchestrator.invokeBackoffMs);
  const untilDeadline = <T>(call: () => Promise<T>) => retryUntilDeadline(run, retry, call);

  const acquired = await untilDeadline(() =>
    stores.lease.acquireLease(config.lane, deps.owner, clock.now(), config.orchestrator.leaseTtlMs),
  );
  if (acquired === undefined) return { lease: 'unavailable', ...NOTHING_DONE };
  const lease = acquired.value;
  if (lease === null) return { lease: 'held-elsewhere', ...NOTHING_DONE };
  const saved = await untilDeadline(() => stores.ledger.loadLedger(config.lane));
  const circuit = saved === undefined ? undefined : await untilDeadline(() => loadCircuit(stores.circuit, config.lane));
  if (saved === undefined || circuit === undefined) {
    // Nothing was dispatched: the next run need not wait for the lease to expire, if the store lets it go.
    await stores.lease.releaseLease(lease).catch((error: unknown) => {
      if (!(error instanceof StateUnavailableError)) throw error;
    });
    return { lease: 'unavailable', ...NOTHING_DONE };
  }
  const { invoker, newId, random } = deps;
  const ports = { stores, queues: guardQueues(deps.queues), invoker, newId, random };
  return new OrchestratorRun(run, ports, lease, rehydrate(config, saved.value), circuit.value).execute();
}

/** The run's quota rehydrated from the `saved` ledger, or a fresh one when the lane has none yet. */
function rehydrate(config: ServiceConfig, saved: LedgerJSON | undefined): RunQuota {
  const ledgerOptions = { timeZone: config.timeZone, arrivalMarginMs: config.pacing.arrivalMarginMs };
  const ledger =
    saved === undefined
      ? new QuotaLedger(config.quotas, ledgerOptions)
      : QuotaLedger.fromJSON(config.quotas, saved, ledgerOptions);
  const slots =
    config.maxInFlight === undefined
      ? undefined
      : new CallSlots(
          config.maxInFlight,
          config.pacing.arrivalMarginMs + config.orchestrator.workerTimeoutMs,
          saved?.slots,
        );
  return { ledger, slots, pacer: new Pacer(ledger, config.pacing, slots) };
}

/**
 * Calls `call` until it succeeds, backing off with `retry` after each store failure; `undefined` once the deadline
 * comes first (or `shouldStop` says so).
 */
async function retryUntilDeadline<T>(
  run: RunContext,
  retry: Backoff,
  call: () => Promise<T>,
): Promise<{ readonly value: T } | undefined> {
  const { clock, options } = run;
  for (;;) {
    try {
      const value = await call();
      retry.reset();
      return { value };
    } catch (error) {
      if (!(error instanceof StateUnavailableError)) throw error;
      const now = clock.now();
      const retryAt = now + retry.next();
      run.report({ type: 'state-unavailable', at: now, operation: error.operation, error: error.message, retryAt });
      if (retryAt >= options.deadline || (options.shouldStop?.() ?? false)) return undefined;
      await clock.sleep(retryAt - now);
    }
  }
}
