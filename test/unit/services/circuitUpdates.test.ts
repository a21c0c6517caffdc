import { MemoryCircuitStore } from '../../../tools/memory/MemoryStores';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import { StateConflictError, StateUnavailableError } from '../../../lib/errors';
import { applyCircuitEvent } from '../../../lib/services/circuitUpdates';
import { START, testConfig } from '../../helpers/serviceFixtures';

/** A circuit store on which every conditional write loses to another writer. */
class ContendedStore extends MemoryCircuitStore {
  saves = 0;

  override async saveCircuit(): Promise<boolean> {
    this.saves++;
    return false;
  }
}

describe('applyCircuitEvent', () => {
  it('gives up on a circuit that stays contended with an error the orchestrator backs off from, not one that ends its run', async () => {
    const store = new ContendedStore();
    const { circuit, lane } = testConfig();

    const failure = await applyCircuitEvent(store, lane, { type: 'transient-failure' }, START, circuitPolicyFrom(circuit)).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(StateUnavailableError);
    expect((failure as StateUnavailableError).operation).toBe('saveCircuit');
    expect((failure as Error).cause).toBeInstanceOf(StateConflictError);
    expect(store.saves).toBe(8);
  });
});
