import { MAX_PENDING_SETTLEMENTS } from '../../../../lib/ports/LedgerStore';
import { LedgerSync } from '../../../../lib/services/orchestrator/ledgerSync';
import { StateLink } from '../../../../lib/services/orchestrator/stateLink';
import { guardStores } from '../../../../lib/services/orchestrator/guardedPorts';
import { rehydrate } from '../../../../lib/services/orchestrator/rehydrate';
import type { MemoryLimitStore } from '../../../../tools/memory/MemoryStores';
import { roomHarness, takeLease, type RoomHarness } from '../../../helpers/orchestratorRooms';
import { LANE, START, testConfig } from '../../../helpers/serviceFixtures';

/** A ledger sync on `h` holding a fresh lease, with its state link. */
async function ledgerSyncOf(h: RoomHarness): Promise<{ sync: LedgerSync; link: StateLink }> {
  const link = new StateLink(h.run);
  return { sync: new LedgerSync(h.run, link, h.ports.stores, h.quota, await takeLease(h)), link };
}

describe('LedgerSync', () => {
  describe('tryFlush', () => {
    it('folds settlements and saves the ledger, then reports the flush; it renews the lease once half its lifetime is gone', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const halfLife = h.config.orchestrator.leaseTtlMs / 2;

      await expect(sync.tryFlush()).resolves.toBe(true);
      await h.clock.advance(halfLife - 1);
      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'saveLedger', 'pendingSettlements', 'saveLedger']);
      await h.clock.advance(1);
      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls.slice(4)).toEqual(['pendingSettlements', 'saveLedger', 'renewLease']);
      expect(h.events).toEqual(
        [START, START + halfLife - 1, START + halfLife].map((at) => ({
          type: 'flushed',
          at,
          settlements: 0,
          handedBack: {},
          usage: [{ tier: '5/second', kind: 'sliding', used: 0, limit: 5 }],
        })),
      );
    });

    it('after a flush that failed before saving, saves in full at the next', async () => {
      const h = roomHarness();
      const { sync, link } = await ledgerSyncOf(h);
      h.flushes.failing.add('pendingSettlements');
      await expect(sync.tryFlush()).resolves.toBe(false);
      expect(link.side.kind).toBe('outage');
      h.flushes.failing.clear();

      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'pendingSettlements', 'saveLedger']);
    });

    it('after a flush that saved but could not renew, only renews at the next: the saved ledger stands', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await h.clock.advance(h.config.orchestrator.leaseTtlMs / 2);
      h.flushes.failing.add('renewLease');
      await expect(sync.tryFlush()).resolves.toBe(false);
      h.flushes.failing.clear();

      await expect(sync.tryFlush()).resolves.toBe(true);
      expect(h.flushes.calls).toEqual(['pendingSettlements', 'saveLedger', 'renewLease', 'renewLease']);
    });

    it('saves again at the final flush even when the last one only lacked its renewal', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await h.clock.advance(h.config.orchestrator.leaseTtlMs / 2);
      h.flushes.failing.add('renewLease');
      await sync.tryFlush();
      h.flushes.failing.clear();

      await expect(sync.tryFlush({ final: true })).resolves.toBe(true);
      expect(h.flushes.calls).toEqual([
        'pendingSettlements',
        'saveLedger',
        'renewLease',
        'pendingSettlements',
        'saveLedger',
        'renewLease',
      ]);
    });

    it('folds a pending settlement once although the save it was folded for failed', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, { cost: 1 });
      await h.stores.ledger.addSettlements(LANE, { reservation, actual: { cost: 3 } });
      const settle = jest.spyOn(h.pacer.ledger, 'settle');
      h.flushes.failing.add('saveLedger');
      await sync.tryFlush();
      h.flushes.failing.clear();

      await sync.tryFlush();
      expect(settle).toHaveBeenCalledTimes(1);
      expect(h.events).toEqual([
        expect.objectContaining({ type: 'state-unavailable' }),
        {
          type: 'flushed',
          at: START,
          settlements: 1,
          handedBack: {},
          usage: [{ tier: '5/second', kind: 'sliding', used: 1, limit: 5 }],
        },
      ]);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });
  });

  describe('reading the reports', () => {
    it('reads strongly consistently at first (what the last save of any run left), then as the store likes', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reads = jest.spyOn(h.stores.ledger, 'pendingSettlements');
      await sync.tryFlush();
      await sync.readReports();
      await sync.tryFlush();
      expect(reads.mock.calls.map(([lane, options]) => [lane, options?.first])).toEqual([
        [LANE, true],
        [LANE, false],
        [LANE, false],
      ]);
    });

    it('names as folded in its save every settlement read since the last save, also one a later read left out', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, { cost: 1 });
      await h.stores.ledger.addSettlements(LANE, { reservation, actual: { cost: 2 }, id: 'd-1' });
      await sync.readReports();
      // A later read returns only what the store lets it: here, not d-1 (a read cut at its most, for one).
      const reads = jest.spyOn(h.stores.ledger, 'pendingSettlements').mockResolvedValueOnce([]);
      const saves = jest.spyOn(h.stores.ledger, 'saveLedger');
      await sync.tryFlush();
      expect(reads).toHaveBeenCalledTimes(1);
      expect(saves.mock.calls[0]?.[3]).toEqual(['d-1']);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });
  });

  it('reads on past a full read before saving, and flushes instead once the next save has no room for another', async () => {
    const h = roomHarness();
    const { sync } = await ledgerSyncOf(h);
    const reservation = h.pacer.dispatch(START, { cost: 1 });
    for (let i = 0; i < 3 * MAX_PENDING_SETTLEMENTS; i++)
      await h.stores.ledger.addSettlements(LANE, { reservation, actual: { cost: 1 }, id: `d-${i}` });
    const settle = jest.spyOn(h.pacer.ledger, 'settle');
    await sync.readReports();
    await sync.readReports();
    expect(settle).toHaveBeenCalledTimes(2 * MAX_PENDING_SETTLEMENTS);
    expect(h.flushes.calls).toEqual(['pendingSettlements', 'pendingSettlements']);
    await sync.readReports();
    // The third read came back full: the flush reads once more, finds nothing new, and saves no more.
    expect(h.flushes.calls.slice(2)).toEqual(['saveLedger', 'pendingSettlements', 'saveLedger', 'pendingSettlements']);
    expect(settle).toHaveBeenCalledTimes(3 * MAX_PENDING_SETTLEMENTS);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  describe('folding a settlement recorded twice (an append retried after it landed)', () => {
    it('folds the second copy of an id not at all, whether it is pending beside the first or comes after the first was folded', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, { cost: 1 });
      const settle = jest.spyOn(h.pacer.ledger, 'settle');
      const copy = { reservation, actual: null, id: 'd-1' };
      await h.stores.ledger.addSettlements(LANE, copy);
      await h.stores.ledger.addSettlements(LANE, copy);
      await sync.tryFlush();
      await h.clock.advance(1_000);
      await h.stores.ledger.addSettlements(LANE, copy);
      await sync.tryFlush();

      expect(settle).toHaveBeenCalledTimes(1);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    });

    it('folds settlements of different ids, and settlements without one, each time', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, { cost: 1 });
      const settle = jest.spyOn(h.pacer.ledger, 'settle');
      for (const s of [{ id: 'd-1' }, { id: 'd-2' }, {}, {}])
        await h.stores.ledger.addSettlements(LANE, { reservation, actual: { cost: 2 }, ...s });
      await sync.tryFlush();

      expect(settle).toHaveBeenCalledTimes(4);
    });

    it('forgets an id two worker timeouts after folding it', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      const reservation = h.pacer.dispatch(START, { cost: 1 });
      const settle = jest.spyOn(h.pacer.ledger, 'settle');
      const copy = { reservation, actual: { cost: 2 }, id: 'd-1' };
      await h.stores.ledger.addSettlements(LANE, copy);
      await sync.tryFlush();
      await h.clock.advance(2 * h.config.orchestrator.workerTimeoutMs);
      await h.stores.ledger.addSettlements(LANE, copy);
      await sync.tryFlush();

      expect(settle).toHaveBeenCalledTimes(2);
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
      await sync.tryFlush({ need: { units: [2], slots: 0 } });

      expect(sync.allowed(START, [2])).toEqual([true]);
      sync.use([2]);
      expect(sync.allowed(START, [1])).toEqual([false]);
      sync.giveBack([1]);
      expect(sync.allowed(START, [1])).toEqual([true]);
    });

    describe('after a save whose answer was lost (it may have landed)', () => {
      /** A sync that saved an allowance of 10 at START and used `used` of it; its next save lands but answers with an error. */
      async function lostSave(used: number): Promise<{ h: RoomHarness; sync: LedgerSync }> {
        const h = roomHarness();
        const { sync } = await ledgerSyncOf(h);
        await sync.tryFlush({ need: { units: [10], slots: 0 } });
        sync.use([used]);
        await h.clock.advance(1_000);
        h.flushes.answerLost.add('saveLedger');
        await expect(sync.tryFlush()).resolves.toBe(false);
        return { h, sync };
      }

      it('keeps within the attempted allowance when it is smaller than what is left of the previous one', async () => {
        // Left of the previous allowance: 9. Attempted (and landed): 2 × 1 used = 2, which is all a successor counts.
        const { h, sync } = await lostSave(1);
        expect(sync.allowed(h.clock.now(), [2])).toEqual([true]);
        expect(sync.allowed(h.clock.now(), [3])).toEqual([false]);
      });

      it('keeps within what is left of the previous allowance when the attempted one is larger', async () => {
        // Left of the previous allowance: 2 (a successor counts it if the save did not land). Attempted: 2 × 8 = 16.
        const { h, sync } = await lostSave(8);
        expect(sync.allowed(h.clock.now(), [2])).toEqual([true]);
        expect(sync.allowed(h.clock.now(), [3])).toEqual([false]);
      });

      it('counts what it uses after the failure against the bound, and ends it where the earlier allowance ends', async () => {
        const { h, sync } = await lostSave(1);
        sync.use([1]);
        expect(sync.allowed(h.clock.now(), [1])).toEqual([true]);
        expect(sync.allowed(h.clock.now(), [2])).toEqual([false]);
        // The allowance saved at START ends at START + 2 × flushIntervalMs; the attempted one would have lasted longer.
        expect(sync.allowed(START + 2_000, [1])).toEqual([true]);
        expect(sync.allowed(START + 2_001, [1])).toEqual([false]);
      });

      it('lets nothing more go after a final save whose answer was lost: it saved no allowance', async () => {
        const h = roomHarness();
        const { sync } = await ledgerSyncOf(h);
        await sync.tryFlush({ need: { units: [10], slots: 0 } });
        h.flushes.answerLost.add('saveLedger');
        await expect(sync.tryFlush({ final: true })).resolves.toBe(false);
        expect(sync.allowed(h.clock.now(), [1])).toEqual([false]);
      });

      it('takes the allowance of the next save that is known to have landed', async () => {
        const { h, sync } = await lostSave(1);
        h.flushes.answerLost.clear();
        await h.clock.advance(100);
        await expect(sync.tryFlush({ need: { units: [5], slots: 0 } })).resolves.toBe(true);
        expect(sync.allowed(h.clock.now(), [5])).toEqual([true]);
        expect(sync.allowed(h.clock.now(), [6])).toEqual([false]);
      });
    });

    it('keeps the previous allowance while a flush that would grow it fails', async () => {
      const h = roomHarness();
      const { sync } = await ledgerSyncOf(h);
      await sync.tryFlush();
      h.flushes.failing.add('saveLedger');

      await sync.tryFlush({ need: { units: [3], slots: 0 } });
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

describe('LedgerSync learning the API limits', () => {
  /** 100 requests a minute, the API's headers OpenAI's, learnt in shadow. */
  const config = testConfig({
    quotas: [{ limit: 100, per: 'minute' }],
    limits: { headers: 'openai', learn: 'shadow' },
  });

  /** A ledger sync on a harness of {@link config}, whose quota is rehydrated as a run's is: with its learner. */
  async function learning(saved?: Parameters<typeof rehydrate>[1]) {
    const h = roomHarness(config);
    const quota = rehydrate(config, saved, START);
    const link = new StateLink(h.run);
    const sync = new LedgerSync(h.run, link, h.ports.stores, quota, await takeLease(h));
    return { h, quota, sync, readings: h.stores.limits as MemoryLimitStore };
  }

  it('folds the readings at a flush, reports the change, and saves what it learnt with the ledger', async () => {
    const { h, sync, readings } = await learning();
    await readings.recordReading(LANE, { family: 'requests', limit: 60, at: START - 10 });

    await sync.tryFlush();

    expect(h.events).toEqual(
      expect.arrayContaining([
        {
          type: 'limit-changed',
          at: START,
          tier: '100/minute',
          from: 100,
          to: 60,
          source: 'header',
          configured: 100,
        },
        expect.objectContaining({
          type: 'flushed',
          usage: [
            {
              tier: '100/minute',
              kind: 'sliding',
              used: 0,
              limit: 100,
              learned: { limit: 60, source: 'header', since: START },
            },
          ],
        }),
      ]),
    );
    const saved = await h.stores.ledger.loadLedger(LANE);
    expect(rehydrate(config, saved, START + 1).limits?.limits(START + 1)).toEqual([60]);
  });

  it('paces at the configured limit in shadow: the ledger still takes all 100', async () => {
    const { quota, sync, readings } = await learning();
    await readings.recordReading(LANE, { family: 'requests', limit: 60, at: START });
    await sync.tryFlush();

    for (let i = 0; i < 100; i++) quota.ledger.reserve(START, {});

    expect(quota.ledger.earliestFit(START, {}).at).toBeGreaterThan(START);
  });

  it('enforced, paces and counts at the learnt limit from the flush that learnt it, and from the start of a later run', async () => {
    const enforced = testConfig({
      quotas: [{ limit: 100, per: 'minute' }],
      limits: { headers: 'openai', learn: 'enforce' },
    });
    const h = roomHarness(enforced);
    const quota = rehydrate(enforced, undefined, START);
    const sync = new LedgerSync(h.run, new StateLink(h.run), h.ports.stores, quota, await takeLease(h));
    await (h.stores.limits as MemoryLimitStore).recordReading(LANE, { family: 'requests', limit: 60, at: START });

    await sync.tryFlush();
    for (let i = 0; i < 60; i++) quota.ledger.reserve(START, {});
    const later = rehydrate(enforced, await h.stores.ledger.loadLedger(LANE), START + 1);
    const held = later.ledger.usage(START + 1)[0]?.used ?? 0;
    for (let i = held; i < 60; i++) later.ledger.reserve(START + 1, {});

    expect(quota.ledger.earliestFit(START, {}).at).toBeGreaterThan(START);
    expect(later.ledger.earliestFit(START + 1, {}).at).toBeGreaterThan(START + 1);
  });

  it('learns nothing from a flush that cannot read the readings, says so, and saves the ledger all the same', async () => {
    const h = roomHarness(config);
    const unreadable = guardStores({
      ...h.stores,
      limits: { loadObservations: () => Promise.reject(new Error('throttled')) },
    }).limits;
    const broken = new LedgerSync(
      h.run,
      new StateLink(h.run),
      { ...h.ports.stores, limits: unreadable },
      rehydrate(config, undefined, START),
      await takeLease(h),
    );

    await expect(broken.tryFlush()).resolves.toBe(true);

    expect(h.events).toEqual(
      expect.arrayContaining([
        { type: 'limits-unread', at: START, error: expect.stringContaining('loadObservations') },
      ]),
    );
    expect(h.flushes.calls).toContain('saveLedger');
  });
});
