import type { CircuitJSON } from '../domain/breaker/circuitJSON';

/**
 * Per lane a circuit, written with a version check so that concurrent transitions never corrupt it. Every
 * implementation passes `test/contract/stateStores.contract.ts`.
 */
export interface CircuitStore {
  /** The lane's circuit, or `undefined` if never written (callers start from a closed circuit at version 0). */
  loadCircuit(lane: string): Promise<CircuitJSON | undefined>;

  /**
   * The lane's run of 4xx refusals in a row (the circuit's `clientErrorRun`; 0 if never written), read eventually
   * consistent: half the price of {@link CircuitStore.loadCircuit}, and it may miss a change of the last second. For a
   * worker deciding whether its success is worth reporting: only a success that ends a run changes the circuit.
   */
  refusalRun(lane: string): Promise<number>;

  /**
   * Writes `next` if and only if the stored circuit is at version `next.version - 1` (absent counts as version 0).
   * This conditional write is what keeps concurrent transitions from corrupting the circuit.
   * @returns `false` when another writer got there first; the caller reloads and decides again. `true` when this
   * call's write landed, even if the client retried it after its answer was lost and the retry was refused.
   */
  saveCircuit(lane: string, next: CircuitJSON): Promise<boolean>;
}
