import { LedgerSync } from '../../../../lib/services/orchestrator/ledgerSync';
import { StateLink } from '../../../../lib/services/orchestrator/stateLink';
import { roomHarness, takeLease, type RoomHarness } from '../../../helpers/orchestratorRooms';
import { LANE, START, testConfig } from '../../../helpers/serviceFixtures';

/** A ledger sync on `h` holding a fresh lease, with its state link. */
async function ledgerSyncOf(h: RoomHarness): Promise<{ sync: LedgerSync; link: StateLink }> {
  const link = new StateLink(h.run);
  return { sync: new LedgerSync(h.run, link, h.pacer, await takeLease(h)), link };
}

describe('LedgerSync', () => {
  describe('tryFlush', () => {
    it('folds settlements, saves the ledger and renews the lease, then reports the flush', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);

      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'saveLedger', 'renewLease']);
      expect(h.events).toEqual([{ type: 'flushed', at: START, settlements: 0 }]);
    });

    it('after a flush that failed before saving, saves in full at the next', async () => {
      const h = roomHarness();
      const { sync, link } = await ledgerSyncOf(h);
      h.flushes.failing.add('pendingSettlements');
      await expect(sync.tryFlush()).resolves.toBe(false);
      expect(link.side.kind).toBe('outage');
      h.flushes.failing.clear();

      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'pendingSettlements', 'saveLedger', 'renewLease']);
    });

    it('after a flush that saved but could not renew, only renews at the next: the saved ledger stands', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      h.flushes.failing.add('renewLease');
      await expect(sync.tryFlush()).resolves.toBe(false);
      h.flushes.failing.clear();

      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'saveLedger', 'renewLease', 'renewLease']);
    });

    it('saves again at the final flush even when the last one only lacked its renewal', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      h.flushes.failing.add('renewLease');
      await sync.tryFlush();
      h.flushes.failing.clear();

      await expect(sync.tryFlush({ final: true })).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'saveLedger', 'renewLease', 'pendingSettlements', 'saveLedger', 'renewLease']);
    });

    it('folds a pending settlement once although the save it was folded for failed', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, 1);
      await h.stores.ledger.addSettlement(LANE, { reservation, actualCost: 3 });
      const settle = jest.spyOn(h.pacer.ledger, 'settle');
      h.flushes.failing.add('saveLedger');
      await sync.tryFlush();
      h.flushes.failing.clear();

      await sync.tryFlush();
      expect(settle).toHaveBeenCalledTimes(1);
      expect(h.events).toEqual([expect.objectContaining({ type: 'state-unavailable' }), { type: 'flushed', at: START, settlements: 1 }]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });
  });

  describe('flushDue', () => {
    it('is due on schedule after a flush, and at once after a failed one', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();
      expect(sync.flushDue(START + 999)).toBe(false);
      expect(sync.flushDue(START + 1_000)).toBe(true);

      h.flushes.failing.add('saveLedger');
      await sync.tryFlush();
      expect(sync.flushDue(START)).toBe(true);
    });
  });

  describe('nextStoreCallAt', () => {
    it("is the next flush, or during an outage the store's next try", async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();
      expect(sync.nextStoreCallAt()).toBe(START + 1_000);

      h.flushes.failing.add('saveLedger');
      await sync.tryFlush();
      expect(sync.nextStoreCallAt()).toBe(START + 100);
    });
  });

  describe('allowed', () => {
    it('allows what the saved allowance holds, less what was used since, and gives back a refund', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      expect(sync.allowed(START, [1])).toEqual([false]);
      await sync.tryFlush({ need: [2] });

      expect(sync.allowed(START, [2])).toEqual([true]);
      sync.use([2]);
      expect(sync.allowed(START, [1])).toEqual([false]);
      sync.giveBack([1]);
      expect(sync.allowed(START, [1])).toEqual([true]);
    });

    it('keeps the previous allowance while a flush that would grow it fails', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();
      h.flushes.failing.add('saveLedger');

      await sync.tryFlush({ need: [3] });
      expect(sync.allowed(START, [1])).toEqual([true]);
      expect(sync.allowed(START, [3])).toEqual([false]);
    });
  });

  describe('mayDispatch', () => {
    it('never lets a message go on an expired lease', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();

      expect(sync.mayDispatch(START + 4_999, [true])).toBe(true);
      expect(sync.mayDispatch(START + 5_000, [true])).toBe(false);
    });

    it('during an outage, lets a sliding tier beyond the allowance go only while its window closes before the lease expires', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();
      h.flushes.failing.add('saveLedger');
      await sync.tryFlush();

      // A one-second window closes by the 5 s lease's expiry unless the call arrives past 4 s minus the margin.
      const margin = h.config.pacing.arrivalMarginMs;
      expect(sync.mayDispatch(START + 4_000 - margin, [false])).toBe(true);
      expect(sync.mayDispatch(START + 4_001 - margin, [false])).toBe(false);
    });

    it("lets nothing go during an outage under 'pause'", async () => {
      const config = testConfig();
      const paused = roomHarness({ ...config, orchestrator: { ...config.orchestrator, stateOutage: 'pause' } });
      const { sync } = await ledgerSyncOf(paused);
      await sync.tryFlush();
      paused.flushes.failing.add('saveLedger');
      await sync.tryFlush();

      expect(sync.mayDispatch(START, [true])).toBe(false);
    });
  });
});
