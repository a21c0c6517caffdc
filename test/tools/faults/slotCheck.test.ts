import type { Settlement } from '../../../lib/domain/quota/ledger';
import type { LedgerJSON } from '../../../lib/domain/quota/ledgerJSON';
import type { WorkerDeps } from '../../../lib/services/worker/types';
import {
  dispatchIdsOf,
  reportingTo,
  slotsRecovered,
  type Reports,
  type SlotsRecoveredInput,
} from '../../../tools/faults/slotCheck';
import { workerHarness } from '../../helpers/serviceFixtures';

const HOLD_MS = 2_200;
const NOW = 100_000;

/** A saved ledger whose `slots` hold `known` calls in progress as `[dispatch id, until]`, and `held` as `[count, until]`. */
function ledgerWith(
  known: readonly (readonly [string, number])[],
  held?: readonly (readonly [number, number])[],
): LedgerJSON {
  return { v: 1, tiers: {}, slots: held === undefined ? { a: known } : { a: known, h: held } };
}

const settlement = (id?: string): Settlement => ({
  reservation: { at: 0, costs: {}, windows: {} },
  actual: {},
  ...(id === undefined ? {} : { id }),
});

const reportsOf = (recorded: readonly string[], lost: readonly string[] = []): Reports => ({
  recorded: new Set(recorded),
  lost: new Set(lost),
});

function input(overrides: Partial<SlotsRecoveredInput>): SlotsRecoveredInput {
  return {
    dispatched: new Set(),
    reports: reportsOf([]),
    failed: new Set(),
    saved: undefined,
    pending: [],
    cap: 3,
    holdMs: HOLD_MS,
    now: NOW,
    ...overrides,
  };
}

describe('slotsRecovered', () => {
  it('finds every slot recovered when each dispatch reported and the saved ledger holds no call', () => {
    const result = slotsRecovered(
      input({ dispatched: new Set(['d-1', 'd-2']), reports: reportsOf(['d-1', 'd-2']), saved: ledgerWith([]) }),
    );
    expect(result).toEqual({ dispatches: 2, unreported: 0, heldAtEnd: 0, heldForFailed: 0, leaked: 0 });
  });

  it('does not expect a report from a worker that failed (killed mid-call, timed out), and counts its slot apart while its hold lasts', () => {
    const result = slotsRecovered(
      input({
        dispatched: new Set(['d-1', 'd-2']),
        reports: reportsOf(['d-1']),
        failed: new Set(['d-2']),
        saved: ledgerWith([['d-2', NOW + 500]]),
      }),
    );
    expect(result).toEqual({ dispatches: 2, unreported: 0, heldAtEnd: 1, heldForFailed: 1, leaked: 0 });
  });

  it('does not expect the report of a dispatch whose write was lost, nor its slot to be free before its hold runs out', () => {
    const result = slotsRecovered(
      input({
        dispatched: new Set(['d-1', 'd-2']),
        reports: reportsOf(['d-1'], ['d-2']),
        saved: ledgerWith([['d-2', NOW + 500]]),
      }),
    );
    expect(result).toMatchObject({ unreported: 0, heldAtEnd: 1, heldForFailed: 1, leaked: 0 });
  });

  it('counts as leaked the slot of a failed worker whose report was recorded all the same', () => {
    const result = slotsRecovered(
      input({
        dispatched: new Set(['d-1']),
        reports: reportsOf(['d-1']),
        failed: new Set(['d-1']),
        saved: ledgerWith([['d-1', NOW + 500]]),
      }),
    );
    expect(result).toMatchObject({ unreported: 0, heldForFailed: 0, leaked: 1 });
  });

  it('counts a dispatch whose worker did not fail and never reported', () => {
    expect(slotsRecovered(input({ dispatched: new Set(['d-1', 'd-2']), reports: reportsOf(['d-1']) })).unreported).toBe(
      1,
    );
  });

  it('counts as leaked a call still held at the end that no failed worker explains, known by id or held by count', () => {
    const result = slotsRecovered(input({ saved: ledgerWith([['d-1', NOW + 1]], [[2, NOW + 1_000]]) }));
    expect(result).toMatchObject({ heldAtEnd: 3, heldForFailed: 0, leaked: 3 });
  });

  it('folds the pending reports in, as the next run would, and forgets holds that have run out', () => {
    const saved = ledgerWith(
      [
        ['d-1', NOW + 500],
        ['d-2', NOW + 500],
        ['d-3', NOW],
      ],
      [[1, NOW - 1]],
    );
    const result = slotsRecovered(input({ saved, pending: [settlement('d-1'), settlement()] }));
    expect(result).toMatchObject({ heldAtEnd: 1, leaked: 1 });
  });
});

describe('dispatchIdsOf', () => {
  it('reads the dispatch id of a job event, each of a batch’s, and none of a health check', () => {
    expect(dispatchIdsOf({ kind: 'job', dispatchId: 'd-1' })).toEqual(['d-1']);
    expect(dispatchIdsOf({ kind: 'batch', jobs: [{ dispatchId: 'b-1' }, { dispatchId: 'b-1.1' }] })).toEqual([
      'b-1',
      'b-1.1',
    ]);
    expect(dispatchIdsOf({ kind: 'health-check', checkId: 'c-1' })).toEqual([]);
    expect(dispatchIdsOf(null)).toEqual([]);
  });
});

describe('reportingTo', () => {
  it('tells the dispatch ids of the settlements each write recorded, and of those it lost: turned away or failed', async () => {
    const h = workerHarness();
    const reports = reportsOf([]);
    let answer: () => Promise<boolean> = () => Promise.resolve(true);
    const deps: WorkerDeps = { ...h.deps, stores: { ...h.deps.stores, ledger: { addSettlements: () => answer() } } };
    const { ledger } = reportingTo(deps, reports).stores;

    await expect(ledger.addSettlements('default', settlement('d-1'), settlement(), settlement('d-2'))).resolves.toBe(
      true,
    );
    answer = () => Promise.resolve(false);
    await expect(ledger.addSettlements('default', settlement('d-3'))).resolves.toBe(false);
    answer = () => Promise.reject(new Error('timed out'));
    await expect(ledger.addSettlements('default', settlement('d-4'))).rejects.toThrow('timed out');

    expect([...reports.recorded]).toEqual(['d-1', 'd-2']);
    expect([...reports.lost]).toEqual(['d-3', 'd-4']);
  });
});
