import type { CircuitJSON } from '../../lib/domain/breaker/circuit';
import type { LedgerJSON, Settlement } from '../../lib/domain/quota/ledger';
import { LeaseLostError, StateConflictError } from '../../lib/errors';
import { MAX_PENDING_SETTLEMENTS, blocksClaim, checkSettled, type IdempotencyRecord, type Lease, type StateStore } from '../../lib/ports/StateStore';

/** A map whose values are kept as JSON text, so that no caller ever holds a reference into stored state. */
class JsonMap<T> {
  private readonly items = new Map<string, string>();

  get(key: string): T | undefined {
    const text = this.items.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  }

  set(key: string, value: T): void {
    this.items.set(key, JSON.stringify(value));
  }

  delete(key: string): void {
    this.items.delete(key);
  }
}

/**
 * A `StateStore` in process memory, for unit tests and the local run. It behaves like a database: values are
 * stored as JSON text and every read returns a fresh copy. Each method runs without an `await` in between its
 * check and its write, so concurrent calls are atomic just as conditional writes are.
 */
export class MemoryStateStore implements StateStore {
  /** Request counts, for benchmarks: `reads` counts `load*`/`get*`/`pending*` calls, `writes` every other call. */
  readonly stats: { reads: number; writes: number } = { reads: 0, writes: 0 };

  private readonly leases = new JsonMap<Lease>();
  /** Highest token ever issued per lane; it outlives releases so that tokens never repeat. */
  private readonly tokens = new Map<string, number>();
  private readonly ledgers = new JsonMap<LedgerJSON>();
  private readonly circuits = new JsonMap<CircuitJSON>();
  private readonly settlements = new JsonMap<Settlement[]>();
  private readonly idempotency = new JsonMap<IdempotencyRecord>();

  async acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    this.stats.writes++;
    const held = this.leases.get(lane);
    if (held !== undefined && held.owner !== owner && now < held.expiresAt) return null;
    const token = (this.tokens.get(lane) ?? 0) + 1;
    const lease: Lease = { lane, owner, token, expiresAt: now + ttlMs };
    this.tokens.set(lane, token);
    this.leases.set(lane, lease);
    return lease;
  }

  async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    this.stats.writes++;
    // An expired lease may still be renewed as long as nobody has acquired the lane since.
    if (this.leases.get(lease.lane)?.token !== lease.token) throw new LeaseLostError(lease.lane, lease.token);
    const renewed: Lease = { ...lease, expiresAt: now + ttlMs };
    this.leases.set(lease.lane, renewed);
    return renewed;
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.stats.writes++;
    if (this.leases.get(lease.lane)?.token === lease.token) this.leases.delete(lease.lane);
  }

  async loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    this.stats.reads++;
    return this.ledgers.get(lane);
  }

  async saveLedger(lane: string, ledger: LedgerJSON, fencingToken: number, settled = 0): Promise<void> {
    this.stats.writes++;
    checkSettled(settled);
    this.checkFence(lane, fencingToken);
    const pending = this.settlements.get(lane) ?? [];
    if (pending.length < settled) throw new StateConflictError(`fewer than ${settled} settlements are pending for lane '${lane}', so the ledger was not saved`);
    this.ledgers.set(lane, ledger);
    if (settled > 0) this.settlements.set(lane, pending.slice(settled));
  }

  async loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    this.stats.reads++;
    return this.circuits.get(lane);
  }

  async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    this.stats.writes++;
    const storedVersion = this.circuits.get(lane)?.version ?? 0;
    if (storedVersion !== next.version - 1) return false;
    this.circuits.set(lane, next);
    return true;
  }

  async addSettlement(lane: string, settlement: Settlement): Promise<void> {
    this.stats.writes++;
    this.settlements.set(lane, [...(this.settlements.get(lane) ?? []), settlement]);
  }

  async pendingSettlements(lane: string): Promise<Settlement[]> {
    this.stats.reads++;
    return (this.settlements.get(lane) ?? []).slice(0, MAX_PENDING_SETTLEMENTS);
  }

  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    this.stats.reads++;
    return this.liveRecord(key, now);
  }

  async putIdempotencyIfAbsent(key: string, record: IdempotencyRecord, now: number): Promise<IdempotencyRecord | null> {
    this.stats.writes++;
    const existing = this.idempotency.get(key);
    if (blocksClaim(existing, record.dispatchId, now)) return existing;
    this.idempotency.set(key, record);
    return null;
  }

  async putIdempotency(key: string, record: IdempotencyRecord): Promise<void> {
    this.stats.writes++;
    this.idempotency.set(key, record);
  }

  /** The fence: only the holder of the lane's newest token may write (an expired but untaken lease still may). */
  private checkFence(lane: string, fencingToken: number): void {
    const current = this.tokens.get(lane);
    if (current === undefined || fencingToken !== current) throw new LeaseLostError(lane, fencingToken);
  }

  private liveRecord(key: string, now: number): IdempotencyRecord | undefined {
    const record = this.idempotency.get(key);
    return record !== undefined && now < record.expiresAt ? record : undefined;
  }
}
