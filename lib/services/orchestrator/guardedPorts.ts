import type { CircuitJSON } from '../../domain/breaker/circuitJSON';
import type { Settlement } from '../../domain/quota/ledger';
import type { LedgerJSON } from '../../domain/quota/ledgerJSON';
import { LeaseLostError, QueueUnavailableError, StateFormatError, StateUnavailableError } from '../../errors';
import type { CircuitStore } from '../../ports/CircuitStore';
import type { Lease, LeaseStore } from '../../ports/LeaseStore';
import type { LaneItemSeen, LedgerStore, PendingOptions } from '../../ports/LedgerStore';
import type { LimitStore } from '../../ports/LimitStore';
import type { LimitObservations } from '../../domain/limits/limitLearner';
import type {
  OutgoingMessage,
  QueueName,
  QueueReceiver,
  ReceiveOptions,
  ReceivedMessage,
  SendFailure,
  SourceQueue,
} from '../../ports/QueueReceiver';
import type { Guarded, GuardedStores, OrchestratorStores } from './types';

/** A method of a store the orchestrator uses, as {@link StateUnavailableError} names it. */
type StoreOperation = keyof LeaseStore | keyof LedgerStore | keyof CircuitStore | keyof LimitStore;

/**
 * Runs `call`, turning every failure other than {@link LeaseLostError} and {@link StateFormatError} into a
 * {@link StateUnavailableError} naming `operation`, so that the run can tell the store's failures from its own bugs.
 */
async function guard<T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof LeaseLostError || error instanceof StateFormatError) throw error;
    throw new StateUnavailableError(operation, { cause: error });
  }
}

/** The lease store with its failures translated by {@link guard}. */
class GuardedLeaseStore implements LeaseStore {
  constructor(private readonly store: LeaseStore) {}

  acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    return guard('acquireLease', () => this.store.acquireLease(lane, owner, now, ttlMs));
  }
  renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    return guard('renewLease', () => this.store.renewLease(lease, now, ttlMs));
  }
  releaseLease(lease: Lease): Promise<void> {
    return guard('releaseLease', () => this.store.releaseLease(lease));
  }
  readLease(lane: string): Promise<Lease | null> {
    return guard('readLease', () => this.store.readLease(lane));
  }
}

/** The ledger store with its failures translated by {@link guard}. */
class GuardedLedgerStore implements LedgerStore {
  constructor(private readonly store: LedgerStore) {}

  loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    return guard('loadLedger', () => this.store.loadLedger(lane));
  }
  saveLedger(
    lane: string,
    ledger: LedgerJSON,
    fencingToken: number,
    folded?: readonly string[],
  ): Promise<LaneItemSeen | undefined> {
    return guard('saveLedger', () => this.store.saveLedger(lane, ledger, fencingToken, folded));
  }
  addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    return guard('addSettlements', () => this.store.addSettlements(lane, ...settlements));
  }
  pendingSettlements(lane: string, options?: PendingOptions): Promise<Settlement[]> {
    return guard('pendingSettlements', () => this.store.pendingSettlements(lane, options));
  }
}

/** The limit readings with their failures translated by {@link guard}. */
class GuardedLimitStore implements Pick<LimitStore, 'loadObservations'> {
  constructor(private readonly store: Pick<LimitStore, 'loadObservations'>) {}

  loadObservations(lane: string): Promise<LimitObservations> {
    return guard('loadObservations', () => this.store.loadObservations(lane));
  }
}

/** The circuit store with its failures translated by {@link guard}. */
class GuardedCircuitStore implements CircuitStore {
  constructor(private readonly store: CircuitStore) {}

  loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    return guard('loadCircuit', () => this.store.loadCircuit(lane));
  }
  refusalRun(lane: string): Promise<number> {
    return guard('refusalRun', () => this.store.refusalRun(lane));
  }
  saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    return guard('saveCircuit', () => this.store.saveCircuit(lane, next));
  }
}

/** The queues with their failures translated (see {@link guardQueues}). */
class GuardedQueues implements QueueReceiver {
  constructor(private readonly queues: QueueReceiver) {}

  private async guard<T>(operation: keyof QueueReceiver, queue: QueueName, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw new QueueUnavailableError(operation, queue, { cause: error });
    }
  }

  receive(queue: SourceQueue, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    return this.guard('receive', queue, () => this.queues.receive(queue, options));
  }
  send(queue: QueueName, message: OutgoingMessage): Promise<void> {
    return this.guard('send', queue, () => this.queues.send(queue, message));
  }
  sendBatch(queue: QueueName, messages: readonly OutgoingMessage[]): Promise<readonly SendFailure[]> {
    return this.guard('sendBatch', queue, () => this.queues.sendBatch(queue, messages));
  }
  delete(queue: QueueName, receiptHandle: string): Promise<void> {
    return this.guard('delete', queue, () => this.queues.delete(queue, receiptHandle));
  }
  deleteBatch(queue: QueueName, receiptHandles: readonly string[]): Promise<void> {
    return this.guard('deleteBatch', queue, () => this.queues.deleteBatch(queue, receiptHandles));
  }
  changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void> {
    return this.guard('changeVisibility', queue, () =>
      this.queues.changeVisibility(queue, receiptHandle, visibilityMs),
    );
  }
  messageCount(queue: SourceQueue): Promise<number> {
    return this.guard('messageCount', queue, () => this.queues.messageCount(queue));
  }
}

/**
 * The orchestrator's stores, each with every failure other than {@link LeaseLostError} and {@link StateFormatError}
 * turned into a {@link StateUnavailableError} naming the operation.
 */
export function guardStores(stores: OrchestratorStores): GuardedStores {
  return {
    lease: guarded(new GuardedLeaseStore(stores.lease)),
    ledger: guarded(new GuardedLedgerStore(stores.ledger)),
    circuit: guarded(new GuardedCircuitStore(stores.circuit)),
    limits: guarded(new GuardedLimitStore(stores.limits)),
  };
}

/** The queues with every failure turned into a {@link QueueUnavailableError} naming the operation and the queue. */
export function guardQueues(queues: QueueReceiver): Guarded<QueueReceiver> {
  return guarded(new GuardedQueues(queues));
}

/** Brands `port` as {@link Guarded}: only the wrappers of this module are. */
function guarded<Port>(port: Port): Guarded<Port> {
  return port as Guarded<Port>;
}
