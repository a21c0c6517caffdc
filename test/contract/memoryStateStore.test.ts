import { MemoryStateStore } from '../../tools/memory/MemoryStateStore';
import { describeStateStoreContract } from './stateStore.contract';

describeStateStoreContract('MemoryStateStore', async () => ({ store: new MemoryStateStore() }));

describe('MemoryStateStore', () => {
  describe('stats', () => {
    it('counts load, get and pending calls as reads and every other call as a write', async () => {
      const store = new MemoryStateStore();
      const lease = await store.acquireLease('lane', 'a', 0, 1_000);
      if (lease === null) throw new Error('expected the lease');
      await store.renewLease(lease, 1, 1_000);
      await store.loadLedger('lane');
      await store.saveLedger('lane', { v: 1, tiers: {} }, lease.token);
      await store.loadCircuit('lane');
      await store.addSettlement('lane', { reservation: { at: 0, cost: 1, windows: {} }, actualCost: null });
      await store.pendingSettlements('lane');
      await store.saveLedger('lane', { v: 1, tiers: {} }, lease.token, 1);
      await store.getIdempotency('key', 0);
      await store.putIdempotencyIfAbsent('key', { status: 'in-progress', dispatchId: 'd-1', expiresAt: 10 }, 0);
      await store.putIdempotency('key', { status: 'succeeded', dispatchId: 'd-1', at: 1, expiresAt: 10 });
      await store.releaseLease(lease);
      expect(store.stats).toEqual({ reads: 4, writes: 8 });
    });

    it('counts refused calls too', async () => {
      const store = new MemoryStateStore();
      await expect(store.saveLedger('lane', { v: 1, tiers: {} }, 1)).rejects.toThrow();
      expect(store.stats).toEqual({ reads: 0, writes: 1 });
    });
  });
});
