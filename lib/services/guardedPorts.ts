import type { CircuitJSON } from '../domain/breaker/circuit';
import type { LedgerJSON, Settlement } from '../domain/quota/ledger';
import { LeaseLostError, QueueUnavailableError, StateFormatError, StateUnavailableError } from '../errors';
import type { OutgoingMessage, QueueName, QueueReceiver, ReceiveOptions, ReceivedMessage, SourceQueue } from '../ports/QueueReceiver';
import type { IdempotencyRecord, Lease, StateStore } from '../ports/StateStore';

/** Cap of every back-off of the orchestrator: invokes, state-store calls, queue calls. */
export const MAX_BACKOFF_MS = 10_000;

/** Exponential back-off: `initialMs`, doubling up to {@link MAX_BACKOFF_MS}, back to `initialMs` after `reset`. */
export class Backoff {
  private current = 0;

  constructor(private readonly initialMs: number) {}

  /** The next wait. */
  next(): number {
    this.current = this.current === 0 ? this.initialMs : Math.min(MAX_BACKOFF_MS, this.current * 2);
    return this.current;
  }

  reset(): void {
    this.current = 0;
  }
}

/**
 * The store with every failure other than {@link LeaseLostError} and {@link StateFormatError} turned into a
 * {@link StateUnavailableError} naming the operation, so that the run can tell the store's failures from its own bugs.
 */
export class GuardedStore implements StateStore {
  constructor(private readonly store: StateStore) {}

  private async guard<T>(operation: keyof StateStore, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof LeaseLostError || error instanceof StateFormatError) throw error;
      throw new StateUnavailableError(operation, { cause: error });
    }
  }

  acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    return this.guard('acquireLease', () => this.store.acquireLease(lane, owner, now, ttlMs));
  }
  renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    return this.guard('renewLease', () => this.store.renewLease(lease, now, ttlMs));
  }
  releaseLease(lease: Lease): Promise<void> {
    return this.guard('releaseLease', () => this.store.releaseLease(lease));
  }
  loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    return this.guard('loadLedger', () => this.store.loadLedger(lane));
  }
  saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled?: number): Promise<void> {
    return this.guard('saveLedger', () => this.store.saveLedger(lane, ledger, fencingToken, settled));
  }
  loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    return this.guard('loadCircuit', () => this.store.loadCircuit(lane));
  }
  saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    return this.guard('saveCircuit', () => this.store.saveCircuit(lane, next));
  }
  addSettlement(lane: string, settlement: Settlement): Promise<void> {
    return this.guard('addSettlement', () => this.store.addSettlement(lane, settlement));
  }
  pendingSettlements(lane: string): Promise<Settlement[]> {
    return this.guard('pendingSettlements', () => this.store.pendingSettlements(lane));
  }
  getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    return this.guard('getIdempotency', () => this.store.getIdempotency(key, now));
  }
  putIdempotencyIfAbsent(key: string, record: IdempotencyRecord, now: number): Promise<IdempotencyRecord | null> {
    return this.guard('putIdempotencyIfAbsent', () => this.store.putIdempotencyIfAbsent(key, record, now));
  }
  putIdempotency(key: string, record: IdempotencyRecord): Promise<void> {
    return this.guard('putIdempotency', () => this.store.putIdempotency(key, record));
  }
}

/** The queues with every failure turned into a {@link QueueUnavailableError} naming the operation and the queue. */
export class GuardedQueues implements QueueReceiver {
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
  delete(queue: QueueName, receiptHandle: string): Promise<void> {
    return this.guard('delete', queue, () => this.queues.delete(queue, receiptHandle));
  }
  changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void> {
    return this.guard('changeVisibility', queue, () => this.queues.changeVisibility(queue, receiptHandle, visibilityMs));
  }
}
