import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import { MemoryState, memoryStores } from '../../../../tools/memory/MemoryStores';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import { LeaseLostError, QueueUnavailableError, StateFormatError, StateUnavailableError } from '../../../../lib/errors';
import type { QueueReceiver } from '../../../../lib/ports/QueueReceiver';
import { guardQueues, guardStores } from '../../../../lib/services/orchestrator/guardedPorts';
import type { Guarded, GuardedStores } from '../../../../lib/services/orchestrator/types';
import { LANE, START } from '../../../helpers/serviceFixtures';

describe('guardStores', () => {
  it('turns a store failure into a StateUnavailableError naming the operation, the failure its cause', async () => {
    const stores = memoryStores(new MemoryState());
    const throttled = new Error('throttled');
    jest.spyOn(stores.ledger, 'pendingSettlements').mockRejectedValue(throttled);

    const failure = guardStores(stores).ledger.pendingSettlements(LANE);
    await expect(failure).rejects.toThrow(StateUnavailableError);
    await expect(failure).rejects.toMatchObject({ operation: 'pendingSettlements', cause: throttled });
  });

  it('lets a lost lease and a corrupt stored item through as they are', async () => {
    const stores = memoryStores(new MemoryState());
    jest.spyOn(stores.lease, 'renewLease').mockRejectedValue(new LeaseLostError(LANE, 1));
    jest.spyOn(stores.circuit, 'loadCircuit').mockRejectedValue(new StateFormatError('corrupt'));
    const guarded = guardStores(stores);

    await expect(
      guarded.lease.renewLease({ lane: LANE, owner: 'o', token: 1, expiresAt: START }, START, 1),
    ).rejects.toThrow(LeaseLostError);
    await expect(guarded.circuit.loadCircuit(LANE)).rejects.toThrow(StateFormatError);
  });

  it('is what a room takes: a store that is not guarded does not type-check', () => {
    const stores = memoryStores(new MemoryState());
    // @ts-expect-error a raw store lacks the guarded brand
    const raw: Pick<GuardedStores, 'ledger'> = { ledger: stores.ledger };
    const guarded: Pick<GuardedStores, 'ledger'> = guardStores(stores);
    expect(raw.ledger).not.toBe(guarded.ledger);
  });
});

describe('guardQueues', () => {
  it('turns a queue failure into a QueueUnavailableError naming the operation and the queue', async () => {
    const queues = new MemoryQueues({ clock: new FakeClock(START) });
    jest.spyOn(queues, 'messageCount').mockRejectedValue(new Error('timeout'));

    await expect(guardQueues(queues).messageCount('fifo')).rejects.toMatchObject({
      constructor: QueueUnavailableError,
      operation: 'messageCount',
      queue: 'fifo',
    });
  });

  it('is what a room takes: queues that are not guarded do not type-check', () => {
    const queues = new MemoryQueues({ clock: new FakeClock(START) });
    // @ts-expect-error raw queues lack the guarded brand
    const raw: Guarded<QueueReceiver> = queues;
    expect(raw).toBe(queues);
  });
});
