import { MemoryCircuitStore } from '../../../tools/memory/MemoryStores';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import { StateConflictError, StateUnavailableError } from '../../../lib/errors';
import { applyCircuitEvent, type LaneCircuitTransition } from '../../../lib/services/circuitUpdates';
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

    const failure = await applyCircuitEvent(
      store,
      lane,
      { type: 'transient-failure' },
      START,
      circuitPolicyFrom(circuit),
    ).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(StateUnavailableError);
    expect((failure as StateUnavailableError).operation).toBe('saveCircuit');
    expect((failure as Error).cause).toBeInstanceOf(StateConflictError);
    expect(store.saves).toBe(8);
  });

  describe('onTransition', () => {
    const { circuit, lane } = testConfig();
    const policy = circuitPolicyFrom(circuit);

    it('is told of each change of status it recorded: opened with its reason, half-open, reopened, closed (not a repeated probe)', async () => {
      const store = new MemoryCircuitStore();
      const seen: LaneCircuitTransition[] = [];
      const tell = (t: LaneCircuitTransition) => seen.push(t);

      for (let i = 0; i < circuit.failureThreshold; i++)
        await applyCircuitEvent(store, lane, { type: 'transient-failure' }, START + i, policy, tell);
      await applyCircuitEvent(store, lane, { type: 'health-check-sent', checkId: 'c-1' }, START + 10_000, policy, tell);
      await applyCircuitEvent(
        store,
        lane,
        { type: 'health-check-started', checkId: 'c-1' },
        START + 10_001,
        policy,
        tell,
      );
      await applyCircuitEvent(
        store,
        lane,
        { type: 'health-check-failed', checkId: 'c-1' },
        START + 10_002,
        policy,
        tell,
      );
      await applyCircuitEvent(store, lane, { type: 'health-check-sent', checkId: 'c-2' }, START + 60_000, policy, tell);
      await applyCircuitEvent(store, lane, { type: 'health-check-ok', checkId: 'c-2' }, START + 60_001, policy, tell);

      await expect(store.loadCircuit(lane)).resolves.toMatchObject({ state: { status: 'closed' } });
      expect(seen.map(({ from, to, reason, at }) => [from, to, reason, at - START])).toEqual([
        ['closed', 'open', expect.stringMatching(/transient/), circuit.failureThreshold - 1],
        ['open', 'half-open', 'health check c-1 sent', 10_000],
        ['half-open', 'open', 'health check c-1 failed', 10_002],
        ['half-open', 'closed', 'health check c-2 passed', 60_001],
      ]);
      expect(seen.every((t) => t.lane === lane)).toBe(true);
    });

    it('is not told of a write that leaves the status as it was, nor of a write it lost', async () => {
      const seen: LaneCircuitTransition[] = [];
      await applyCircuitEvent(new MemoryCircuitStore(), lane, { type: 'transient-failure' }, START, policy, (t) =>
        seen.push(t),
      );
      await applyCircuitEvent(
        new ContendedStore(),
        lane,
        { type: 'caller-rejected', reason: 'HTTP 401' },
        START,
        policy,
        (t) => seen.push(t),
      ).catch(() => undefined);

      expect(seen).toEqual([]);
    });
  });
});
