import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { LimitObservations, ObservedReading } from '../../lib/domain/limits/limitLearner';
import type { LimitOverrideJSON } from '../../lib/domain/limits/limitOverrideJSON';
import type { LimitFamily } from '../../lib/domain/limits/rateLimitHeaders';
import type { Settlement } from '../../lib/domain/quota/ledger';
import { ownValue } from '../../lib/domain/ownValue';
import type { Costs } from '../../lib/domain/quota/tiers';
import type { LedgerJSON } from '../../lib/domain/quota/ledgerJSON';
import { LeaseLostError } from '../../lib/errors';
import type { CircuitStore } from '../../lib/ports/CircuitStore';
import {
  claimRefusal,
  type BatchSuccesses,
  type ClaimRefusal,
  type IdempotencyRecord,
  type IdempotencyStore,
  type JobSuccess,
  type ReopenOutcome,
} from '../../lib/ports/IdempotencyStore';
import type { Lease, LeaseStore } from '../../lib/ports/LeaseStore';
import type { ExpectedOverride, LimitStore } from '../../lib/ports/LimitStore';
import {
  allRefunds,
  MAX_PENDING_SETTLEMENTS,
  MAX_STORED_SETTLEMENTS,
  checkFolded,
  type LaneItemSeen,
  type LedgerStore,
  type PendingOptions,
} from '../../lib/ports/LedgerStore';
import type { StateStores } from '../../lib/ports/StateStores';

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
 * The state the in-memory stores keep, like one database that several stores share: the ledger store's saves are
 * fenced by the tokens the lease store over the same state hands out. Its maps are for the stores in this module.
 */
export class MemoryState {
  /**
   * Request counts, for benchmarks: `reads` counts `load*`/`get*`/`pending*` calls, `refusalRun` and `batchSuccess`,
   * `writes` every other call.
   */
  readonly stats: { reads: number; writes: number } = { reads: 0, writes: 0 };

  readonly leases = new JsonMap<Lease>();
  /** Highest token ever issued per lane; it outlives releases so that tokens never repeat. */
  readonly tokens = new Map<string, number>();
  readonly ledgers = new JsonMap<LedgerJSON>();
  readonly circuits = new JsonMap<CircuitJSON>();
  /** Per lane the pending settlements, by id (named by the store when it had none), each as JSON text. */
  readonly settlements = new Map<string, Map<string, string>>();
  /** Settlements recorded without an id so far, to name each one. */
  unnamedSettlements = 0;
  readonly idempotency = new JsonMap<IdempotencyRecord>();
  /** Per batch, the successes it recorded (see `IdempotencyStore.recordBatchSuccesses`). */
  readonly batches = new JsonMap<{
    readonly at: number;
    readonly expiresAt: number;
    readonly succeeded: readonly string[];
    /** Each job's usage, by dispatch id. */
    readonly usage: Readonly<Record<string, Costs>>;
    readonly result?: string;
  }>();
  /** Per idempotency key, the dispatches marked as having spent their reservation on it (see `IdempotencyStore.claimRefund`). */
  readonly spent = new Map<string, Set<string>>();
  /** Per idempotency key, the dispatches whose call spent an attempt (see `IdempotencyStore.attemptsSpent`). */
  readonly attempts = new Map<string, Set<string>>();
  /** Per lane or pool, the operator's override of its tiers' limits (see `LimitStore.replaceOverride`). */
  readonly overrides = new JsonMap<LimitOverrideJSON>();
  /** Per lane, what the workers recorded of the API's limits (see `LimitStore`). */
  readonly limits = new JsonMap<{
    readonly readings: Readonly<Partial<Record<LimitFamily, ObservedReading>>>;
    readonly rateLimitedAt?: number;
  }>();
}

// Every store below behaves like a database: values are stored as JSON text and every read returns a fresh copy.
// Each method runs without an `await` in between its check and its write, so concurrent calls are atomic just as
// conditional writes are.

/** A `LeaseStore` in process memory, over `state` (a fresh one by default). */
export class MemoryLeaseStore implements LeaseStore {
  constructor(protected readonly state: MemoryState = new MemoryState()) {}

  async acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    this.state.stats.writes++;
    const held = this.state.leases.get(lane);
    if (held !== undefined && held.owner !== owner && now < held.expiresAt) return null;
    const token = (this.state.tokens.get(lane) ?? 0) + 1;
    const lease: Lease = { lane, owner, token, expiresAt: now + ttlMs };
    this.state.tokens.set(lane, token);
    this.state.leases.set(lane, lease);
    return lease;
  }

  async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    this.state.stats.writes++;
    // An expired lease may still be renewed as long as nobody has acquired the lane since.
    if (this.state.leases.get(lease.lane)?.token !== lease.token) throw new LeaseLostError(lease.lane, lease.token);
    const renewed: Lease = { ...lease, expiresAt: now + ttlMs };
    this.state.leases.set(lease.lane, renewed);
    return renewed;
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.state.stats.writes++;
    if (this.state.leases.get(lease.lane)?.token === lease.token) this.state.leases.delete(lease.lane);
  }

  async readLease(lane: string): Promise<Lease | null> {
    this.state.stats.reads++;
    return this.state.leases.get(lane) ?? null;
  }
}

/** A `LedgerStore` in process memory, over `state` (a fresh one by default), fenced by the leases of that state. */
export class MemoryLedgerStore implements LedgerStore {
  constructor(protected readonly state: MemoryState = new MemoryState()) {}

  async loadLedger(lane: string): Promise<LedgerJSON | undefined> {
    this.state.stats.reads++;
    const ledger = this.state.ledgers.get(lane);
    return ledger === undefined ? undefined : { ...ledger, ...this.overrideOf(lane) };
  }

  async saveLedger(
    lane: string,
    ledger: LedgerJSON,
    fencingToken: number,
    folded: readonly string[] = [],
  ): Promise<LaneItemSeen | undefined> {
    this.state.stats.writes++;
    checkFolded(folded);
    this.checkFence(lane, fencingToken);
    this.state.ledgers.set(lane, { ...ledger, override: undefined });
    for (const id of folded) this.pendingOf(lane).delete(id);
    return this.overrideOf(lane);
  }

  /** The lane's override as a field to spread: `{}` when none is set. */
  private overrideOf(lane: string): { override?: LimitOverrideJSON } {
    const override = this.state.overrides.get(lane);
    return override === undefined ? {} : { override };
  }

  async addSettlements(lane: string, ...settlements: Settlement[]): Promise<boolean> {
    this.state.stats.writes++;
    const pending = this.pendingOf(lane);
    if (settlements.length === 0) return true;
    if (allRefunds(settlements) && pending.size >= MAX_STORED_SETTLEMENTS) return false;
    for (const settlement of settlements) {
      const id = settlement.id ?? `unnamed-${++this.state.unnamedSettlements}`;
      pending.set(id, JSON.stringify({ ...settlement, id }));
    }
    return true;
  }

  async pendingSettlements(lane: string, { skip }: PendingOptions = {}): Promise<Settlement[]> {
    this.state.stats.reads++;
    return [...this.pendingOf(lane)]
      .filter(([id]) => skip?.has(id) !== true)
      .map(([, text]) => JSON.parse(text) as Settlement)
      .sort((a, b) => a.reservation.at - b.reservation.at)
      .slice(0, MAX_PENDING_SETTLEMENTS);
  }

  private pendingOf(lane: string): Map<string, string> {
    const pending = this.state.settlements.get(lane) ?? new Map<string, string>();
    this.state.settlements.set(lane, pending);
    return pending;
  }

  /** The fence: only the holder of the lane's newest token may write (an expired but untaken lease still may). */
  private checkFence(lane: string, fencingToken: number): void {
    const current = this.state.tokens.get(lane);
    if (current === undefined || fencingToken !== current) throw new LeaseLostError(lane, fencingToken);
  }
}

/** A `CircuitStore` in process memory, over `state` (a fresh one by default). */
export class MemoryCircuitStore implements CircuitStore {
  constructor(protected readonly state: MemoryState = new MemoryState()) {}

  async loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    this.state.stats.reads++;
    return this.state.circuits.get(lane);
  }

  async refusalRun(lane: string): Promise<number> {
    this.state.stats.reads++;
    return this.state.circuits.get(lane)?.clientErrorRun ?? 0;
  }

  async saveCircuit(lane: string, next: CircuitJSON): Promise<boolean> {
    this.state.stats.writes++;
    const storedVersion = this.state.circuits.get(lane)?.version ?? 0;
    if (storedVersion !== next.version - 1) return false;
    this.state.circuits.set(lane, next);
    return true;
  }
}

/** A `LimitStore` in process memory, over `state` (a fresh one by default). */
export class MemoryLimitStore implements LimitStore {
  constructor(private readonly state: MemoryState = new MemoryState()) {}

  async recordReading(lane: string, reading: ObservedReading): Promise<void> {
    this.state.stats.writes++;
    const stored = this.state.limits.get(lane) ?? { readings: {} };
    const latest = stored.readings[reading.family];
    if (latest !== undefined && latest.at >= reading.at) return;
    this.state.limits.set(lane, { ...stored, readings: { ...stored.readings, [reading.family]: reading } });
  }

  async recordRateLimited(lane: string, at: number): Promise<void> {
    this.state.stats.writes++;
    const stored = this.state.limits.get(lane) ?? { readings: {} };
    if (stored.rateLimitedAt !== undefined && stored.rateLimitedAt >= at) return;
    this.state.limits.set(lane, { ...stored, rateLimitedAt: at });
  }

  async loadOverride(state: string): Promise<LimitOverrideJSON | undefined> {
    this.state.stats.reads++;
    return this.state.overrides.get(state);
  }

  async replaceOverride(
    state: string,
    next: LimitOverrideJSON | undefined,
    expected: ExpectedOverride,
  ): Promise<boolean> {
    this.state.stats.writes++;
    const stored = this.state.overrides.get(state);
    if (expected === 'none' ? stored !== undefined : expected !== 'any' && stored?.at !== expected) return false;
    if (next === undefined) this.state.overrides.delete(state);
    else this.state.overrides.set(state, next);
    return true;
  }

  async loadObservations(lane: string): Promise<LimitObservations> {
    this.state.stats.reads++;
    const stored = this.state.limits.get(lane);
    if (stored === undefined) return { readings: [] };
    return {
      readings: Object.values(stored.readings).flatMap((reading) => (reading === undefined ? [] : [reading])),
      ...(stored.rateLimitedAt === undefined ? {} : { rateLimitedAt: stored.rateLimitedAt }),
    };
  }
}

/** An `IdempotencyStore` in process memory, over `state` (a fresh one by default). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  constructor(protected readonly state: MemoryState = new MemoryState()) {}

  async getIdempotency(key: string, now: number): Promise<IdempotencyRecord | undefined> {
    this.state.stats.reads++;
    const record = this.state.idempotency.get(key);
    return record !== undefined && now < record.expiresAt ? record : undefined;
  }

  async putIdempotencyIfAbsent(
    key: string,
    record: IdempotencyRecord,
    now: number,
    replacing?: string,
  ): Promise<ClaimRefusal | null> {
    this.state.stats.writes++;
    const spent = this.spentOn(key);
    const marked = spent.has(record.dispatchId);
    const refusal = claimRefusal(this.state.idempotency.get(key), record.dispatchId, marked, now, replacing);
    if (refusal !== null) return refusal;
    this.state.idempotency.set(key, record);
    spent.add(record.dispatchId);
    return null;
  }

  async putIdempotency(
    key: string,
    record: IdempotencyRecord,
    options: { readonly spentAttempt?: boolean } = {},
  ): Promise<void> {
    this.state.stats.writes++;
    this.state.idempotency.set(key, record);
    if (options.spentAttempt !== true) return;
    const attempts = this.state.attempts.get(key) ?? new Set<string>();
    this.state.attempts.set(key, attempts.add(record.dispatchId));
  }

  async attemptsSpent(key: string): Promise<number> {
    this.state.stats.reads++;
    return this.state.attempts.get(key)?.size ?? 0;
  }

  async reopenDeadLettered(key: string, now: number): Promise<ReopenOutcome> {
    this.state.stats.writes++;
    const record = this.state.idempotency.get(key);
    if (record === undefined || now >= record.expiresAt) return 'absent';
    if (record.status !== 'dead-lettered') return record.status;
    const { dispatchId, at, expiresAt } = record;
    this.state.idempotency.set(key, { status: 'failed', dispatchId, at, expiresAt });
    this.state.attempts.delete(key);
    return 'reopened';
  }

  async claimRefund(key: string, dispatchId: string): Promise<boolean> {
    this.state.stats.writes++;
    const spent = this.spentOn(key);
    if (spent.has(dispatchId)) return false;
    spent.add(dispatchId);
    return true;
  }

  async recordBatchSuccesses(batch: string, { at, expiresAt, jobs, result }: BatchSuccesses): Promise<void> {
    this.state.stats.writes++;
    if (jobs.length === 0) return;
    const recorded = this.state.batches.get(batch) ?? { at, expiresAt, succeeded: [], usage: {} };
    const usage = jobs.flatMap(({ dispatchId, usage }) => (usage === undefined ? [] : [[dispatchId, usage]]));
    this.state.batches.set(batch, {
      ...recorded,
      expiresAt: Math.max(recorded.expiresAt, expiresAt),
      succeeded: [...new Set([...recorded.succeeded, ...jobs.map((job) => job.dispatchId)])],
      usage: { ...recorded.usage, ...Object.fromEntries(usage) },
      ...(result === undefined ? {} : { result }),
    });
  }

  async batchSuccess(batch: string, dispatchId: string): Promise<JobSuccess | undefined> {
    this.state.stats.reads++;
    const recorded = this.state.batches.get(batch);
    if (recorded?.succeeded.includes(dispatchId) !== true) return undefined;
    const usage = ownValue(recorded.usage, dispatchId);
    const { at, result } = recorded;
    return { at, ...(usage === undefined ? {} : { usage }), ...(result === undefined ? {} : { result }) };
  }

  private spentOn(key: string): Set<string> {
    const spent = this.state.spent.get(key) ?? new Set<string>();
    this.state.spent.set(key, spent);
    return spent;
  }
}

/** The five in-memory stores over one {@link MemoryState}, and its request counts. */
export interface MemoryStores extends StateStores {
  readonly lease: MemoryLeaseStore;
  readonly ledger: MemoryLedgerStore;
  readonly circuit: MemoryCircuitStore;
  readonly idempotency: MemoryIdempotencyStore;
  readonly limits: MemoryLimitStore;
  /** {@link MemoryState.stats} of the state they share. */
  readonly stats: MemoryState['stats'];
}

/** The five stores in process memory, for unit tests and the simulation, over `state` (a fresh one by default). */
export function memoryStores(state: MemoryState = new MemoryState()): MemoryStores {
  return {
    lease: new MemoryLeaseStore(state),
    ledger: new MemoryLedgerStore(state),
    circuit: new MemoryCircuitStore(state),
    idempotency: new MemoryIdempotencyStore(state),
    limits: new MemoryLimitStore(state),
    stats: state.stats,
  };
}
