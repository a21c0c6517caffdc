import { memoryStores } from '../../tools/memory/MemoryStores';
import { describeStateStoresContract } from './stateStores.contract';

describeStateStoresContract('memoryStores', async () => ({ stores: memoryStores() }));

describe('memoryStores', () => {
  describe('stats', () => {
    it('counts load, get and pending calls as reads and every other call as a write, over all four stores', async () => {
      const stores = memoryStores();
      const lease = await stores.lease.acquireLease('lane', 'a', 0, 1_000);
      if (lease === null) throw new Error('expected the lease');
      await stores.lease.renewLease(lease, 1, 1_000);
      await stores.ledger.loadLedger('lane');
      await stores.ledger.saveLedger('lane', { v: 1, tiers: {} }, lease.token);
      await stores.circuit.loadCircuit('lane');
      await stores.ledger.addSettlements('lane', {
        reservation: { at: 0, costs: { cost: 1 }, windows: {} },
        actual: null,
      });
      await stores.ledger.pendingSettlements('lane');
      await stores.ledger.saveLedger('lane', { v: 1, tiers: {} }, lease.token, ['d-1']);
      await stores.idempotency.getIdempotency('key', 0);
      await stores.idempotency.putIdempotencyIfAbsent(
        'key',
        { status: 'in-progress', dispatchId: 'd-1', expiresAt: 10 },
        0,
      );
      await stores.idempotency.putIdempotency('key', { status: 'succeeded', dispatchId: 'd-1', at: 1, expiresAt: 10 });
      await stores.lease.releaseLease(lease);
      expect(stores.stats).toEqual({ reads: 4, writes: 8 });
    });

    it('counts refused calls too', async () => {
      const stores = memoryStores();
      await expect(stores.ledger.saveLedger('lane', { v: 1, tiers: {} }, 1)).rejects.toThrow();
      expect(stores.stats).toEqual({ reads: 0, writes: 1 });
    });
  });
});
