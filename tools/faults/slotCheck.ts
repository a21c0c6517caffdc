import { CallSlots } from '../../lib/domain/inflight/callSlots';
import type { Settlement } from '../../lib/domain/quota/ledger';
import type { LedgerJSON } from '../../lib/domain/quota/ledgerJSON';
import type { WorkerDeps } from '../../lib/services/worker/types';

/** The dispatch ids the workers' reports (settlements) named, by how their write ended. */
export interface Reports {
  /** Written: the orchestrator frees the slot at its next read. */
  readonly recorded: Set<string>;
  /** The write failed, or the store turned it away: the slot frees when its hold runs out. */
  readonly lost: Set<string>;
}

/** `deps` whose ledger store also tells `reports` of the dispatch id of each settlement it writes, recorded or lost. */
export function reportingTo(deps: WorkerDeps, reports: Reports): WorkerDeps {
  const { ledger } = deps.stores;
  const note = (settlements: readonly Settlement[], into: Set<string>) => {
    for (const { id } of settlements) if (id !== undefined) into.add(id);
  };
  return {
    ...deps,
    stores: {
      ...deps.stores,
      ledger: {
        addSettlements: async (lane, ...settlements) => {
          try {
            const accepted = await ledger.addSettlements(lane, ...settlements);
            note(settlements, accepted ? reports.recorded : reports.lost);
            return accepted;
          } catch (error) {
            note(settlements, reports.lost);
            throw error;
          }
        },
      },
    },
  };
}

/** The dispatch ids a worker event carries: its job's, or each of a batch's jobs'. */
export function dispatchIdsOf(event: unknown): string[] {
  const { jobs } = (event ?? {}) as { readonly jobs?: unknown };
  const list: unknown[] = Array.isArray(jobs) ? jobs : [event];
  return list.flatMap((job) => {
    const { dispatchId } = (job ?? {}) as { readonly dispatchId?: unknown };
    return typeof dispatchId === 'string' ? [dispatchId] : [];
  });
}

/** How a drained scenario's call slots were freed: see {@link slotsRecovered}. */
export interface SlotsRecovered {
  /** Dispatches the runs made: each took a call slot. */
  readonly dispatches: number;
  /**
   * Of those, dispatches no report named, though their worker did not fail and no write of a report for them was
   * lost: their slot was held for nothing until it ran out.
   */
  readonly unreported: number;
  /** Calls the orchestrator still counts in flight at the end: the saved ledger's `slots`, with the workers' pending reports folded in. */
  readonly heldAtEnd: number;
  /** Of those, the slots of workers that failed or whose report was lost, which nothing frees but their hold running out. */
  readonly heldForFailed: number;
  /** The others: slots of calls that have ended and were never freed. */
  readonly leaked: number;
}

/** What {@link slotsRecovered} reads. */
export interface SlotsRecoveredInput {
  /** The dispatch ids the runs reported `dispatched`. */
  readonly dispatched: ReadonlySet<string>;
  /** The dispatch ids the workers' reports named (see {@link reportingTo}). */
  readonly reports: { readonly recorded: ReadonlySet<string>; readonly lost: ReadonlySet<string> };
  /**
   * Dispatch ids of the workers that failed (killed mid-call, crashed, timed out): each job of their event, since a
   * worker that dies reports for none of them.
   */
  readonly failed: ReadonlySet<string>;
  /** The lane's saved ledger, if any. */
  readonly saved: LedgerJSON | undefined;
  /** The settlements the workers recorded that no run has folded yet. */
  readonly pending: readonly Settlement[];
  /** The lane's `maxInFlight`. */
  readonly cap: number;
  /** How long a slot is held after its call's slot at most: the arrival margin plus the worker's timeout. */
  readonly holdMs: number;
  /** The instant the scenario drained, on the service's clock. */
  readonly now: number;
}

/**
 * Whether every call slot of a drained scenario (every message ended, no worker running, the runs stopped after
 * their final flush) came back, in two ways:
 * - each dispatch's worker reported the end of its call (or that it made none), which frees its slot at the next
 *   read of the reports; only workers that failed (killed mid-call, timed out) did not, nor those whose write of
 *   the report failed, and their slots free themselves when their hold (slot + arrival margin + worker timeout) runs
 *   out;
 * - a successor of the last run, reading the state table at `now`, counts no call in flight but the holds of those
 *   dispatches that have not run out yet: every other call has ended, so any other slot has leaked.
 */
export function slotsRecovered({
  dispatched,
  reports,
  failed,
  saved,
  pending,
  cap,
  holdMs,
  now,
}: SlotsRecoveredInput): SlotsRecovered {
  const slots = new CallSlots(cap, holdMs, saved?.slots);
  for (const { id } of pending) if (id !== undefined) slots.release(id);
  const heldAtEnd = slots.inFlight(now);
  // Dispatches that could not report: their slots free themselves when their hold runs out.
  const silent = (id: string) => !reports.recorded.has(id) && (failed.has(id) || reports.lost.has(id));
  const heldForFailed = slots.toJSON().a.filter(([id]) => silent(id)).length;
  const unreported = [...dispatched].filter((id) => !reports.recorded.has(id) && !silent(id)).length;
  return { dispatches: dispatched.size, unreported, heldAtEnd, heldForFailed, leaked: heldAtEnd - heldForFailed };
}
