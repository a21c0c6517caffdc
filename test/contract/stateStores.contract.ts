import { NEVER_DUE } from '../../lib/domain/breaker/circuit';
import type { CircuitJSON } from '../../lib/domain/breaker/circuitJSON';
import type { Settlement } from '../../lib/domain/quota/ledger';
import type { LedgerJSON } from '../../lib/domain/quota/ledgerJSON';
import type { Costs } from '../../lib/domain/quota/tiers';
import { LeaseLostError } from '../../lib/errors';
import type { BatchSuccesses, IdempotencyRecord } from '../../lib/ports/IdempotencyStore';
import { batchJobDispatchId } from '../../lib/ports/Invoker';
import type { Lease } from '../../lib/ports/LeaseStore';
import { MAX_FOLDED_PER_SAVE, MAX_PENDING_SETTLEMENTS, MAX_STORED_SETTLEMENTS } from '../../lib/ports/LedgerStore';
import type { StateStores } from '../../lib/ports/StateStores';

/** A write request of a backend's client, as DynamoDB names it. */
export type WriteRequest = 'PutItem' | 'UpdateItem';

/** A backend's four stores under test, and how to shut the backend down afterwards. */
export interface StateStoresFixture {
  readonly stores: StateStores;
  readonly close?: () => Promise<void>;
  /**
   * Makes the next `request` of the stores land and then answer with an error (a 5xx after the commit), so that the
   * client retries it, as the AWS SDK does; `between` runs after it landed and before the retry. Absent for a
   * backend whose calls never lose their answer (the memory stores): the contract's retry tests then run `between`
   * after the call.
   */
  readonly loseNextAnswer?: (request: WriteRequest, between?: () => Promise<void>) => void;
}

const T0 = 1_700_000_000_000;
const TTL = 30_000;

function ledger(used: number): LedgerJSON {
  return {
    v: 1,
    tiers: {
      'second:requests': { g: 100, b: used, a: [1, 0, used] },
      'day:requests': { w: '2026-11-23', u: used },
    },
  };
}

/** A settlement reserved at `at`, named `s-<at>` unless `id` names it otherwise. */
function settlement(at: number, actualCost: number | null = 1, id = `s-${at}`): Settlement {
  return {
    reservation: { at, costs: { cost: 2 }, windows: { 'day:requests': '2026-11-23' } },
    actual: actualCost === null ? null : { cost: actualCost },
    id,
  };
}

/** The ids of `settlements`. */
function idsOf(settlements: readonly Settlement[]): string[] {
  return settlements.map(({ id }) => id as string);
}

/** A closed circuit; `pausedUntil` tells writers apart. */
function circuit(version: number, pausedUntil = 0): CircuitJSON {
  return { version, state: { status: 'closed', failures: [T0, T0 + 1], closedAt: null, reopenStreak: 0 }, pausedUntil };
}

/** A circuit an operator forced open and paused, with its recent transitions. */
function operated(version: number): CircuitJSON {
  return {
    version,
    state: {
      status: 'open',
      openedAt: T0,
      nextCheckAt: NEVER_DUE,
      failedChecks: 0,
      reopenStreak: 1,
      reason: 'opened by operator (ops@example.com)',
      byOperator: true,
    },
    pausedUntil: 0,
    clientErrorRun: 2,
    hold: { since: T0 + 1, by: 'ops@example.com' },
    transitions: [
      { at: T0, from: 'closed', to: 'open', reason: 'opened by operator (ops@example.com)' },
      { at: T0 + 1, from: 'open', to: 'open', reason: 'paused by operator (ops@example.com)' },
    ],
  };
}

function inProgress(expiresAt: number): IdempotencyRecord {
  return { status: 'in-progress', dispatchId: 'd-1', expiresAt };
}

function succeeded(at: number, expiresAt: number): IdempotencyRecord {
  return { status: 'succeeded', dispatchId: 'd-1', at, expiresAt };
}

/** The successes of `dispatchIds` recorded at `at`, each with `details`, their results sent to `sqs results`. */
function batchOf(dispatchIds: readonly string[], at: number, details: { usage?: Costs } = {}): BatchSuccesses {
  const jobs = dispatchIds.map((dispatchId) => ({ dispatchId, ...details }));
  return { at, expiresAt: at + TTL, jobs, result: 'sqs results' };
}

function failed(at: number, expiresAt: number): IdempotencyRecord {
  return { status: 'failed', dispatchId: 'd-1', at, expiresAt };
}

function deadLettered(at: number, expiresAt: number): IdempotencyRecord {
  return { status: 'dead-lettered', dispatchId: 'd-1', at, expiresAt, reason: 'HTTP 400 Bad Request' };
}

/** Mutates every object and array reachable from `value`, to show that it shares nothing with the stores. */
function scribble(value: unknown): void {
  if (Array.isArray(value)) {
    value.forEach(scribble);
    value.push('scribbled');
  } else if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(scribble);
    (value as Record<string, unknown>)['scribbled'] = true;
  }
}

async function expectLeaseLost(promise: Promise<unknown>, lane: string, fencingToken: number): Promise<void> {
  await expect(promise).rejects.toBeInstanceOf(LeaseLostError);
  await expect(promise).rejects.toMatchObject({ lane, fencingToken });
}

/**
 * The behaviour every backend's four stores must show, as one jest suite with a block per port. Call it from a
 * `*.test.ts` file per backend. The stores are created once for the whole suite and every test uses its own lanes
 * and keys, so a shared, persistent backend (DynamoDB Local, dynalite) works as well as a fresh in-memory one.
 * @param name backend name, shown in the suite title.
 * @param makeStores creates the stores; `close`, if given, runs after the last test.
 */
export function describeStateStoresContract(name: string, makeStores: () => Promise<StateStoresFixture>): void {
  describe(`state stores contract: ${name}`, () => {
    let fixture: StateStoresFixture | undefined;
    const run = Math.random().toString(36).slice(2, 8);
    let seq = 0;
    const unique = (label: string): string => `${label}-${run}-${++seq}`;

    const stores = (): StateStores => {
      if (fixture === undefined) throw new Error('makeStores did not finish');
      return fixture.stores;
    };

    /** Acquires `lane` for `owner`, failing the test if the lease is refused. */
    const acquire = async (lane: string, owner: string, now = T0, ttlMs = TTL): Promise<Lease> => {
      const lease = await stores().lease.acquireLease(lane, owner, now, ttlMs);
      if (lease === null) throw new Error(`expected ${owner} to acquire ${lane} at ${now}`);
      return lease;
    };

    /** `a` holds the lane, lets it expire, and `b` takes it over: `a`'s lease is stale afterwards. */
    const takenOver = async (lane: string): Promise<{ stale: Lease; current: Lease }> => {
      const stale = await acquire(lane, 'a', T0);
      const current = await acquire(lane, 'b', stale.expiresAt);
      return { stale, current };
    };

    beforeAll(async () => {
      fixture = await makeStores();
    });

    afterAll(async () => {
      await fixture?.close?.();
    });

    /**
     * Runs `call`, whose next `request` lands and loses its answer, so that the client retries it (see
     * {@link StateStoresFixture.loseNextAnswer}); `between` runs after it landed, before the retry.
     */
    const withLostAnswer = async <T>(
      request: WriteRequest,
      call: () => Promise<T>,
      between: () => Promise<void> = async () => {},
    ): Promise<T> => {
      const lose = fixture?.loseNextAnswer;
      if (lose === undefined) {
        const result = await call();
        await between();
        return result;
      }
      lose(request, between);
      return call();
    };

    describe('every write: retried after it landed, its answer lost', () => {
      it('saveLedger lands once: the retry folds none of the settlements appended in between, and the call succeeds', async () => {
        const lane = unique('lost-save');
        const lease = await acquire(lane, 'a');
        const read = [settlement(T0), settlement(T0 + 1)];
        for (const s of read) await stores().ledger.addSettlements(lane, s);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(read);
        const appended = [settlement(T0 + 2), settlement(T0 + 3)];
        const appendTwo = async (): Promise<void> => {
          for (const s of appended) await stores().ledger.addSettlements(lane, s);
        };
        // The save succeeds: it may not say what it found beside the ledger (its answer was lost).
        await withLostAnswer(
          'UpdateItem',
          () => stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(read)),
          appendTwo,
        );
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(appended);
      });

      it('saveLedger removing nothing lands once and succeeds', async () => {
        const lane = unique('lost-save-none');
        const lease = await acquire(lane, 'a');
        await withLostAnswer('UpdateItem', () => stores().ledger.saveLedger(lane, ledger(1), lease.token));
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
      });

      it('saveLedger still refuses a stale token, and the next save of the holder succeeds', async () => {
        const lane = unique('lost-save-stale');
        const { stale, current } = await takenOver(lane);
        await expectLeaseLost(
          withLostAnswer('UpdateItem', () => stores().ledger.saveLedger(lane, ledger(9), stale.token)),
          lane,
          stale.token,
        );
        await withLostAnswer('UpdateItem', () => stores().ledger.saveLedger(lane, ledger(2), current.token));
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(2));
      });

      it('recordBatchSuccesses lands and succeeds, its retry changing nothing', async () => {
        const batch = unique('lost-batch');
        await expect(
          withLostAnswer('UpdateItem', () =>
            stores().idempotency.recordBatchSuccesses(batch, batchOf(['d-1'], T0, { usage: { tokens: 7 } })),
          ),
        ).resolves.toBeUndefined();
        await expect(stores().idempotency.batchSuccess(batch, 'd-1')).resolves.toEqual({
          at: T0,
          usage: { tokens: 7 },
          result: 'sqs results',
        });
      });

      it('recordReading and recordRateLimited land and succeed, their retries refused by their own writes', async () => {
        const lane = unique('lost-limits');
        const reading = { family: 'requests' as const, limit: 40, at: T0 };
        await expect(
          withLostAnswer('UpdateItem', () => stores().limits.recordReading(lane, reading)),
        ).resolves.toBeUndefined();
        await expect(
          withLostAnswer('UpdateItem', () => stores().limits.recordRateLimited(lane, T0 + 1)),
        ).resolves.toBeUndefined();
        await expect(stores().limits.loadObservations(lane)).resolves.toEqual({
          readings: [reading],
          rateLimitedAt: T0 + 1,
        });
      });

      it('saveCircuit lands once and reports true, so the caller does not apply its event again', async () => {
        const lane = unique('lost-circuit');
        await expect(
          withLostAnswer('UpdateItem', () => stores().circuit.saveCircuit(lane, circuit(1, T0))),
        ).resolves.toBe(true);
        await expect(
          withLostAnswer('UpdateItem', () => stores().circuit.saveCircuit(lane, circuit(2, T0 + 1))),
        ).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(2, T0 + 1));
      });

      it('saveCircuit reports its landed write as true even when another writer wrote the next version before the retry', async () => {
        const lane = unique('lost-circuit-next');
        await stores().circuit.saveCircuit(lane, circuit(1, T0));
        const next = async (): Promise<void> => {
          await expect(stores().circuit.saveCircuit(lane, circuit(3, T0 + 2))).resolves.toBe(true);
        };
        await expect(
          withLostAnswer('UpdateItem', () => stores().circuit.saveCircuit(lane, circuit(2, T0 + 1)), next),
        ).resolves.toBe(true);
        await expect(stores().circuit.saveCircuit(lane, circuit(3, T0 + 3))).resolves.toBe(false);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(3, T0 + 2));
      });

      it('putIdempotencyIfAbsent reports its own landed claim as written, not as held by another delivery', async () => {
        const key = unique('lost-claim');
        await expect(
          withLostAnswer('UpdateItem', () =>
            stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0),
          ),
        ).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(inProgress(T0 + TTL));
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0)).resolves.toEqual(
          inProgress(T0 + TTL),
        );
      });

      it('putIdempotency counting a spent attempt counts it once', async () => {
        const key = unique('lost-attempt');
        const spent = { status: 'failed', dispatchId: 'd-2', at: T0, expiresAt: T0 + TTL } as const;
        await withLostAnswer('UpdateItem', () =>
          stores().idempotency.putIdempotency(key, spent, { spentAttempt: true }),
        );
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(1);
      });

      it('claimRefund reports its own landed mark as this call’s: the refund is made once, not lost', async () => {
        const key = unique('lost-refund');
        await expect(
          withLostAnswer('UpdateItem', () => stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)),
        ).resolves.toBe(true);
        await expect(stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)).resolves.toBe(false);
      });

      it('reopenDeadLettered reports its own landed reopen as reopened, even once the next dispatch has claimed the key', async () => {
        const key = unique('lost-reopen');
        await stores().idempotency.putIdempotency(key, deadLettered(T0, T0 + TTL));
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        const claimed = async (): Promise<void> => {
          await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 2)).resolves.toBeNull();
        };
        await expect(
          withLostAnswer('UpdateItem', () => stores().idempotency.reopenDeadLettered(key, T0 + 1), claimed),
        ).resolves.toBe('reopened');
        await expect(stores().idempotency.getIdempotency(key, T0 + 2)).resolves.toEqual(next);
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 2)).resolves.toBe('in-progress');
      });

      it('acquireLease hands out a token that fences the holder’s saves; renew and release land once', async () => {
        const lane = unique('lost-lease');
        const lease = await withLostAnswer('UpdateItem', () => acquire(lane, 'a'));
        await stores().ledger.saveLedger(lane, ledger(1), lease.token);
        await expect(stores().lease.acquireLease(lane, 'b', T0 + 1, TTL)).resolves.toBeNull();
        const renewed = await withLostAnswer('UpdateItem', () => stores().lease.renewLease(lease, T0 + 1, TTL));
        expect(renewed).toEqual({ ...lease, expiresAt: T0 + 1 + TTL });
        await withLostAnswer('UpdateItem', () => stores().lease.releaseLease(renewed));
        const next = await acquire(lane, 'b', T0 + 2);
        expect(next.token).toBeGreaterThan(lease.token);
        await expectLeaseLost(stores().ledger.saveLedger(lane, ledger(9), lease.token), lane, lease.token);
      });
    });

    describe('LeaseStore', () => {
      it('grants a free lane with a positive token that expires after the ttl', async () => {
        const lane = unique('lease-free');
        const lease = await acquire(lane, 'a', T0, TTL);
        expect(lease).toEqual({ lane, owner: 'a', token: expect.any(Number), expiresAt: T0 + TTL });
        expect(lease.token).toBeGreaterThanOrEqual(1);
      });

      it('refuses another owner while the lease is held', async () => {
        const lane = unique('lease-held');
        await acquire(lane, 'a', T0);
        await expect(stores().lease.acquireLease(lane, 'b', T0 + 1, TTL)).resolves.toBeNull();
      });

      it('refuses a takeover one millisecond before expiresAt and allows it at expiresAt', async () => {
        const lane = unique('lease-boundary');
        const first = await acquire(lane, 'a', T0);
        await expect(stores().lease.acquireLease(lane, 'b', first.expiresAt - 1, TTL)).resolves.toBeNull();
        const second = await acquire(lane, 'b', first.expiresAt);
        expect(second.owner).toBe('b');
        expect(second.token).toBeGreaterThan(first.token);
      });

      it('lets the holder re-acquire its own unexpired lease with a greater token', async () => {
        const lane = unique('lease-same-owner');
        const first = await acquire(lane, 'a', T0);
        const again = await acquire(lane, 'a', T0 + 1);
        expect(again.token).toBeGreaterThan(first.token);
        expect(again.expiresAt).toBe(T0 + 1 + TTL);
      });

      it('hands out strictly increasing tokens across takeovers and releases', async () => {
        const lane = unique('lease-tokens');
        const tokens: number[] = [];
        let now = T0;
        for (const owner of ['a', 'b', 'a', 'c']) {
          const lease = await acquire(lane, owner, now);
          tokens.push(lease.token);
          now = lease.expiresAt;
        }
        const released = await acquire(lane, 'd', now);
        await stores().lease.releaseLease(released);
        tokens.push(released.token, (await acquire(lane, 'e', now)).token);
        expect(new Set(tokens).size).toBe(tokens.length);
        expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      });

      it('renews a current lease: same token, later expiry, others still refused', async () => {
        const lane = unique('lease-renew');
        const lease = await acquire(lane, 'a', T0);
        const renewed = await stores().lease.renewLease(lease, T0 + 10_000, TTL);
        expect(renewed).toEqual({ ...lease, expiresAt: T0 + 10_000 + TTL });
        await expect(stores().lease.acquireLease(lane, 'b', lease.expiresAt, TTL)).resolves.toBeNull();
        await expect(stores().lease.acquireLease(lane, 'b', renewed.expiresAt, TTL)).resolves.not.toBeNull();
      });

      it('renews an expired lease that nobody has taken over', async () => {
        const lane = unique('lease-renew-expired');
        const lease = await acquire(lane, 'a', T0);
        const renewed = await stores().lease.renewLease(lease, lease.expiresAt + 5_000, TTL);
        expect(renewed.token).toBe(lease.token);
        await expect(stores().lease.acquireLease(lane, 'b', lease.expiresAt + 5_001, TTL)).resolves.toBeNull();
      });

      it('refuses to renew a lease that another owner has taken over', async () => {
        const lane = unique('lease-renew-lost');
        const { stale, current } = await takenOver(lane);
        await expectLeaseLost(stores().lease.renewLease(stale, current.expiresAt - 1, TTL), lane, stale.token);
        await expect(stores().lease.acquireLease(lane, 'a', current.expiresAt - 1, TTL)).resolves.toBeNull();
      });

      it('refuses to renew a lease the same owner has re-acquired since', async () => {
        const lane = unique('lease-renew-reacquired');
        const old = await acquire(lane, 'a', T0);
        await acquire(lane, 'a', T0 + 1);
        await expectLeaseLost(stores().lease.renewLease(old, T0 + 2, TTL), lane, old.token);
      });

      it('lets another owner acquire at once after a release', async () => {
        const lane = unique('lease-release');
        const lease = await acquire(lane, 'a', T0);
        await stores().lease.releaseLease(lease);
        const next = await acquire(lane, 'b', T0 + 1);
        expect(next.token).toBeGreaterThan(lease.token);
      });

      it('reads no lease for a lane never leased, nor once its lease is released', async () => {
        const lane = unique('lease-read-none');
        await expect(stores().lease.readLease(lane)).resolves.toBeNull();
        await stores().lease.releaseLease(await acquire(lane, 'a'));
        await expect(stores().lease.readLease(lane)).resolves.toBeNull();
      });

      it('reads the lease as last acquired or renewed, and still once it has expired', async () => {
        const lane = unique('lease-read');
        const lease = await acquire(lane, 'a', T0);
        await expect(stores().lease.readLease(lane)).resolves.toEqual(lease);
        const renewed = await stores().lease.renewLease(lease, lease.expiresAt + 5_000, TTL);
        await expect(stores().lease.readLease(lane)).resolves.toEqual(renewed);
        const next = await acquire(lane, 'b', renewed.expiresAt);
        await expect(stores().lease.readLease(lane)).resolves.toEqual(next);
      });

      it('ignores a release by a stale holder', async () => {
        const lane = unique('lease-stale-release');
        const { stale, current } = await takenOver(lane);
        await stores().lease.releaseLease(stale);
        await expect(stores().lease.acquireLease(lane, 'c', current.expiresAt - 1, TTL)).resolves.toBeNull();
        await expect(stores().lease.renewLease(current, current.expiresAt - 1, TTL)).resolves.toMatchObject({
          token: current.token,
        });
      });
    });

    describe('LedgerStore: ledger', () => {
      it('loads undefined for a lane that was never saved', async () => {
        await expect(stores().ledger.loadLedger(unique('ledger-none'))).resolves.toBeUndefined();
      });

      it('loads the ledger last saved by the lease holder', async () => {
        const lane = unique('ledger-round-trip');
        const lease = await acquire(lane, 'a');
        await stores().ledger.saveLedger(lane, ledger(1), lease.token);
        await stores().ledger.saveLedger(lane, ledger(2), lease.token);
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(2));
      });

      it('refuses a save with a stale fencing token and keeps the stored ledger', async () => {
        const lane = unique('ledger-stale');
        const first = await acquire(lane, 'a', T0);
        await stores().ledger.saveLedger(lane, ledger(1), first.token);
        const second = await acquire(lane, 'b', first.expiresAt);
        await expectLeaseLost(stores().ledger.saveLedger(lane, ledger(9), first.token), lane, first.token);
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await stores().ledger.saveLedger(lane, ledger(2), second.token);
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(2));
      });

      it('refuses a save on a lane whose lease was never taken', async () => {
        const lane = unique('ledger-no-lease');
        await expectLeaseLost(stores().ledger.saveLedger(lane, ledger(1), 1), lane, 1);
        await expect(stores().ledger.loadLedger(lane)).resolves.toBeUndefined();
      });
    });

    describe('LimitStore', () => {
      it('loads nothing for a lane whose answers said nothing', async () => {
        await expect(stores().limits.loadObservations(unique('limits-none'))).resolves.toEqual({ readings: [] });
      });

      it("keeps each family's latest reading, whatever order they are recorded in", async () => {
        const lane = unique('limits-order');
        const later = { family: 'requests' as const, limit: 300, remaining: 12, resetAt: T0 + 9_000, at: T0 + 2 };
        await stores().limits.recordReading(lane, later);
        await stores().limits.recordReading(lane, { family: 'requests', limit: 500, at: T0 + 1 });
        await stores().limits.recordReading(lane, { family: 'input-tokens', remaining: 0, windowMs: 60_000, at: T0 });

        const { readings } = await stores().limits.loadObservations(lane);

        expect([...readings].sort((a, b) => a.at - b.at)).toEqual([
          { family: 'input-tokens', remaining: 0, windowMs: 60_000, at: T0 },
          later,
        ]);
      });

      it('keeps the latest 429 recorded', async () => {
        const lane = unique('limits-429');
        await stores().limits.recordRateLimited(lane, T0 + 5);
        await stores().limits.recordRateLimited(lane, T0 + 3);
        await stores().limits.recordReading(lane, { family: 'tokens', limit: 10, at: T0 });

        await expect(stores().limits.loadObservations(lane)).resolves.toEqual({
          readings: [{ family: 'tokens', limit: 10, at: T0 }],
          rateLimitedAt: T0 + 5,
        });
      });
    });

    describe('LimitStore: the operator override', () => {
      const override = (at: number, limit = 50) =>
        ({ v: 1, tiers: { 'minute:requests': limit }, by: 'alice', at }) as const;

      it('keeps an override beside the ledger: the load and every save return it, and a save leaves it as it is', async () => {
        const lane = unique('override-ledger');
        await expect(stores().limits.loadOverride(lane)).resolves.toBeUndefined();
        await expect(stores().limits.replaceOverride(lane, override(T0), 'none')).resolves.toBe(true);
        const lease = await acquire(lane, 'a');

        const seen = await stores().ledger.saveLedger(lane, ledger(1), lease.token);
        await stores().ledger.saveLedger(lane, { ...ledger(2), override: override(T0 + 9, 9) }, lease.token);

        expect(seen).toEqual({ override: override(T0) });
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual({ ...ledger(2), override: override(T0) });
        await expect(stores().limits.loadOverride(lane)).resolves.toEqual(override(T0));
      });

      it('replaces an override only while the stored one is the one expected, and removes it', async () => {
        const lane = unique('override-replace');
        await stores().limits.replaceOverride(lane, override(T0), 'none');
        await expect(stores().limits.replaceOverride(lane, override(T0 + 1, 70), 'none')).resolves.toBe(false);
        await expect(stores().limits.replaceOverride(lane, override(T0 + 1, 70), T0 - 1)).resolves.toBe(false);
        await expect(stores().limits.loadOverride(lane)).resolves.toEqual(override(T0));

        await expect(stores().limits.replaceOverride(lane, override(T0 + 1, 70), T0)).resolves.toBe(true);
        await expect(stores().limits.loadOverride(lane)).resolves.toEqual(override(T0 + 1, 70));
        await expect(stores().limits.replaceOverride(lane, undefined, 'any')).resolves.toBe(true);

        await expect(stores().limits.loadOverride(lane)).resolves.toBeUndefined();
        const lease = await acquire(lane, 'a');
        await expect(stores().ledger.saveLedger(lane, ledger(1), lease.token)).resolves.toEqual({});
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
      });

      it('keeps each lane’s override apart', async () => {
        const [a, b] = [unique('override-a'), unique('override-b')];
        await stores().limits.replaceOverride(a, override(T0), 'none');
        await expect(stores().limits.loadOverride(b)).resolves.toBeUndefined();
      });
    });

    describe('CircuitStore', () => {
      it('loads undefined for a lane that was never written', async () => {
        await expect(stores().circuit.loadCircuit(unique('circuit-none'))).resolves.toBeUndefined();
      });

      it('accepts version 1 as the first write and loads it back', async () => {
        const lane = unique('circuit-first');
        await expect(stores().circuit.saveCircuit(lane, circuit(1))).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(1));
      });

      it('refuses a first write at any version other than 1', async () => {
        const lane = unique('circuit-first-wrong');
        await expect(stores().circuit.saveCircuit(lane, circuit(2))).resolves.toBe(false);
        await expect(stores().circuit.saveCircuit(lane, circuit(0))).resolves.toBe(false);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toBeUndefined();
      });

      it('accepts each next version in turn', async () => {
        const lane = unique('circuit-sequence');
        for (const version of [1, 2, 3])
          await expect(stores().circuit.saveCircuit(lane, circuit(version))).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(3));
      });

      it('refuses a write that skips a version or repeats the stored one', async () => {
        const lane = unique('circuit-skip');
        await stores().circuit.saveCircuit(lane, circuit(1, T0));
        await expect(stores().circuit.saveCircuit(lane, circuit(3))).resolves.toBe(false);
        await expect(stores().circuit.saveCircuit(lane, circuit(1, T0 + 1))).resolves.toBe(false);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(1, T0));
      });

      it('reads the run of refusals: 0 for a lane never written or without a run, else the run as last written', async () => {
        const lane = unique('circuit-refusals');
        await expect(stores().circuit.refusalRun(lane)).resolves.toBe(0);
        await stores().circuit.saveCircuit(lane, circuit(1));
        await expect(stores().circuit.refusalRun(lane)).resolves.toBe(0);
        await stores().circuit.saveCircuit(lane, { ...circuit(2), clientErrorRun: 3 });
        await expect(stores().circuit.refusalRun(lane)).resolves.toBe(3);
        await stores().circuit.saveCircuit(lane, circuit(3));
        await expect(stores().circuit.refusalRun(lane)).resolves.toBe(0);
      });

      it("loads back an operator's forced open, hold and transitions as written", async () => {
        const lane = unique('circuit-operated');
        await expect(stores().circuit.saveCircuit(lane, operated(1))).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(operated(1));
      });

      it('loads back a half-open circuit whose check is a job’s trial, claimed, as written', async () => {
        const lane = unique('circuit-job-trial');
        const trial: CircuitJSON = {
          version: 1,
          state: {
            status: 'half-open',
            openedAt: T0,
            checkId: 'c-1',
            checkSentAt: T0 + 1,
            probeStartedAt: T0 + 2,
            failedChecks: 1,
            reopenStreak: 0,
            reason: 'caller rejected: HTTP 401 Unauthorized',
            trial: 'job',
          },
          pausedUntil: 0,
        };
        await expect(stores().circuit.saveCircuit(lane, trial)).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(trial);
      });

      it('drops the hold, the transitions and the run when the next version has none', async () => {
        const lane = unique('circuit-operated-then-not');
        await stores().circuit.saveCircuit(lane, operated(1));
        await expect(stores().circuit.saveCircuit(lane, circuit(2))).resolves.toBe(true);
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(2));
        await expect(stores().circuit.refusalRun(lane)).resolves.toBe(0);
      });

      it('lets exactly one of two concurrent writers of the same version win', async () => {
        const lane = unique('circuit-race');
        await stores().circuit.saveCircuit(lane, circuit(1));
        const results = await Promise.all([
          stores().circuit.saveCircuit(lane, circuit(2, T0 + 1)),
          stores().circuit.saveCircuit(lane, circuit(2, T0 + 2)),
        ]);
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = results[0] === true ? T0 + 1 : T0 + 2;
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(2, winner));
      });
    });

    describe('LedgerStore: settlements', () => {
      /** Adds `settlement(T0 + i)` for every `i` in `from..to - 1`, in order. */
      const addRange = async (lane: string, from: number, to: number): Promise<Settlement[]> => {
        const added = Array.from({ length: to - from }, (_, i) => settlement(T0 + from + i));
        for (const s of added) await stores().ledger.addSettlements(lane, s);
        return added;
      };

      it('returns pending settlements oldest reservation first, with their ids, start delays and chain gaps, and removes none of them', async () => {
        const lane = unique('settlements-order');
        const added = [
          settlement(T0 + 3),
          { ...settlement(T0 + 1, null, 'd-2'), startDelayMs: 712 },
          settlement(T0 + 2, 5, 'd-1'),
          { ...settlement(T0 + 4, null, 'd-3'), chainGapMs: 230 },
        ];
        for (const s of added) await stores().ledger.addSettlements(lane, s);
        const oldestFirst = [added[1], added[2], added[0], added[3]];
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(oldestFirst);
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(oldestFirst);
      });

      it('records several settlements in one call, and none for a call without any', async () => {
        const lane = unique('settlements-several');
        await stores().ledger.addSettlements(lane);
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([]);
        await stores().ledger.addSettlements(lane, settlement(T0));
        await stores().ledger.addSettlements(lane, settlement(T0 + 2), settlement(T0 + 1, null, 'd-1'));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([
          settlement(T0),
          settlement(T0 + 1, null, 'd-1'),
          settlement(T0 + 2),
        ]);
      });

      it('keeps one settlement per id: a copy written again replaces it', async () => {
        const lane = unique('settlements-copy');
        await stores().ledger.addSettlements(lane, settlement(T0, 3, 'd-1'));
        await stores().ledger.addSettlements(lane, settlement(T0, 2, 'd-1'), settlement(T0 + 1, 1, 'd-2'));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([
          settlement(T0, 2, 'd-1'),
          settlement(T0 + 1, 1, 'd-2'),
        ]);
      });

      it('names a settlement recorded without an id', async () => {
        const lane = unique('settlements-unnamed');
        const unnamed: Settlement = { ...settlement(T0) };
        delete (unnamed as { id?: string }).id;
        await stores().ledger.addSettlements(lane, unnamed);
        const [read] = await stores().ledger.pendingSettlements(lane);
        expect(read).toEqual({ ...unnamed, id: expect.any(String) });
      });

      it('turns refunds away from a full store, never settlements of calls', async () => {
        const lane = unique('settlements-full');
        const calls = Array.from({ length: MAX_STORED_SETTLEMENTS - 1 }, (_, i) => settlement(T0 + i));
        await expect(stores().ledger.addSettlements(lane, ...calls)).resolves.toBe(true);
        const refund = (i: number): Settlement => settlement(T0 + 1_000 + i, null, `d-${i}`);
        await expect(stores().ledger.addSettlements(lane, refund(1))).resolves.toBe(true);
        await expect(stores().ledger.addSettlements(lane, refund(2))).resolves.toBe(false);
        await expect(stores().ledger.addSettlements(lane, refund(3), settlement(T0 + 1_003))).resolves.toBe(true);
        const lease = await acquire(lane, 'a');
        const firstPage = await stores().ledger.pendingSettlements(lane, { first: true });
        await stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(firstPage));
        // The read after a save removes what it folded: the store has room again.
        const rest = await stores().ledger.pendingSettlements(lane);
        await expect(stores().ledger.addSettlements(lane, refund(4))).resolves.toBe(true);
        const pending: Settlement[] = [...firstPage];
        for (let page = rest; page.length > 0; page = await stores().ledger.pendingSettlements(lane)) {
          pending.push(...page);
          await stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(page));
        }
        pending.push(...(await stores().ledger.pendingSettlements(lane)));
        expect(pending).toEqual([...calls, refund(1), refund(3), settlement(T0 + 1_003), refund(4)]);
      });

      it('returns an empty list when nothing is pending', async () => {
        await expect(stores().ledger.pendingSettlements(unique('settlements-empty'))).resolves.toEqual([]);
      });

      it('keeps each lane’s settlements apart', async () => {
        const [laneA, laneB] = [unique('settlements-a'), unique('settlements-b')];
        await stores().ledger.addSettlements(laneA, settlement(T0));
        await stores().ledger.addSettlements(laneB, settlement(T0 + 1));
        const leaseA = await acquire(laneA, 'a');
        await stores().ledger.pendingSettlements(laneA, { first: true });
        await stores().ledger.saveLedger(laneA, ledger(1), leaseA.token, [settlement(T0).id as string]);
        await expect(stores().ledger.pendingSettlements(laneA)).resolves.toEqual([]);
        await expect(stores().ledger.pendingSettlements(laneB)).resolves.toEqual([settlement(T0 + 1)]);
      });

      it('saves the ledger and marks the folded settlements in one write: no read returns them again', async () => {
        const lane = unique('settlements-save');
        const lease = await acquire(lane, 'a');
        const added = await addRange(lane, 0, 3);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(added);
        await stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(added.slice(0, 2)));
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(added.slice(2));
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(added.slice(2));
        await stores().ledger.saveLedger(lane, ledger(2), lease.token, idsOf(added.slice(2)));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([]);
        await stores().ledger.addSettlements(lane, settlement(T0 + 9));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0 + 9)]);
      });

      it('marks nothing when none is folded, the default', async () => {
        const lane = unique('settlements-none');
        const lease = await acquire(lane, 'a');
        const added = await addRange(lane, 0, 2);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(added);
        await stores().ledger.saveLedger(lane, ledger(1), lease.token);
        await stores().ledger.saveLedger(lane, ledger(2), lease.token, []);
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(2));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(added);
      });

      it('keeps the settlements appended between the read and the save', async () => {
        const lane = unique('settlements-appended');
        const lease = await acquire(lane, 'a');
        const read = await addRange(lane, 0, 2);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(read);
        const appended = await addRange(lane, 2, 4);
        await stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(read));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(appended);
      });

      it('refuses a save with a stale fencing token, marking nothing, and the holder folds them later', async () => {
        const lane = unique('settlements-stale');
        const { stale, current } = await takenOver(lane);
        await stores().ledger.saveLedger(lane, ledger(1), current.token);
        const added = await addRange(lane, 0, 2);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual(added);
        await expectLeaseLost(
          stores().ledger.saveLedger(lane, ledger(9), stale.token, idsOf(added)),
          lane,
          stale.token,
        );
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(added);
        const more = await addRange(lane, 2, 3);
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([...added, ...more]);
        await stores().ledger.saveLedger(lane, ledger(2), current.token, idsOf([...added, ...more]));
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(2));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([]);
        await expect(stores().ledger.pendingSettlements(lane, { first: true })).resolves.toEqual([]);
      });

      it(`returns at most ${MAX_PENDING_SETTLEMENTS} at a time, and a save marks them`, async () => {
        const lane = unique('settlements-cap');
        const lease = await acquire(lane, 'a');
        const added = await addRange(lane, 0, MAX_PENDING_SETTLEMENTS + 3);
        const first = await stores().ledger.pendingSettlements(lane, { first: true });
        expect(first).toEqual(added.slice(0, MAX_PENDING_SETTLEMENTS));
        await stores().ledger.saveLedger(lane, ledger(1), lease.token, idsOf(first));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual(added.slice(MAX_PENDING_SETTLEMENTS));
      });

      it('leaves out the ids the holder skips, so that a backlog larger than one read is read on before a save', async () => {
        const lane = unique('settlements-skip');
        await acquire(lane, 'a');
        const added = await addRange(lane, 0, MAX_PENDING_SETTLEMENTS + 3);
        const first = await stores().ledger.pendingSettlements(lane, { first: true });
        const skip = new Set(idsOf(first));
        await expect(stores().ledger.pendingSettlements(lane, { skip })).resolves.toEqual(
          added.slice(MAX_PENDING_SETTLEMENTS),
        );
      });

      it(`refuses to mark more than ${MAX_FOLDED_PER_SAVE} settlements in a save, writing nothing`, async () => {
        const lane = unique('settlements-range');
        const lease = await acquire(lane, 'a');
        await stores().ledger.addSettlements(lane, settlement(T0));
        const tooMany = Array.from({ length: MAX_FOLDED_PER_SAVE + 1 }, (_, i) => `d-${i}`);
        await expect(stores().ledger.saveLedger(lane, ledger(9), lease.token, tooMany)).rejects.toBeInstanceOf(
          RangeError,
        );
        await expect(stores().ledger.loadLedger(lane)).resolves.toBeUndefined();
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0)]);
      });
    });

    describe('IdempotencyStore', () => {
      it('gets undefined for an unknown key', async () => {
        await expect(stores().idempotency.getIdempotency(unique('idem-none'), T0)).resolves.toBeUndefined();
      });

      it('writes when absent, reporting null, and gets the record back', async () => {
        const key = unique('idem-put');
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0)).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(inProgress(T0 + TTL));
      });

      it('returns the unexpired record instead of writing over it', async () => {
        const key = unique('idem-exists');
        await stores().idempotency.putIdempotencyIfAbsent(key, succeeded(T0, T0 + TTL), T0);
        await expect(
          stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + 2 * TTL), T0 + 1),
        ).resolves.toEqual(succeeded(T0, T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(succeeded(T0, T0 + TTL));
      });

      it('judges expiry on the passed-in now: live until expiresAt, gone at expiresAt', async () => {
        const key = unique('idem-expiry');
        await stores().idempotency.putIdempotency(key, inProgress(T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + TTL - 1)).resolves.toEqual(inProgress(T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + TTL)).resolves.toBeUndefined();
      });

      it('writes over an expired record when absent-only', async () => {
        const key = unique('idem-expired-claim');
        await stores().idempotency.putIdempotency(key, inProgress(T0 + TTL));
        await expect(
          stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + 3 * TTL), T0 + TTL),
        ).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0 + 2 * TTL)).resolves.toEqual(inProgress(T0 + 3 * TTL));
      });

      it('keeps a batch claim for its TTL, and lets a claim replace it only as a stopped claim of the dispatch it names', async () => {
        const key = unique('idem-batch-claim');
        const claim: IdempotencyRecord = {
          status: 'in-progress',
          dispatchId: 'd-1',
          expiresAt: T0 + TTL,
          batch: { id: 'b-1', busyUntil: T0 + 10 },
        };
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, claim, T0)).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(claim);
        // Held after its worker's time, by any claim that does not name it, and while that time lasts even by one that does.
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 10)).resolves.toEqual(claim);
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 10, 'd-3')).resolves.toEqual(claim);
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 9, 'd-1')).resolves.toEqual(claim);
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 10, 'd-1')).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0 + 10)).resolves.toEqual(next);
      });

      it('drops the batch of a batch claim written over with another record', async () => {
        const key = unique('idem-batch-over');
        await stores().idempotency.putIdempotency(key, {
          status: 'in-progress',
          dispatchId: 'd-1',
          expiresAt: T0 + TTL,
          batch: { id: 'b-1', busyUntil: T0 + 10 },
        });
        await stores().idempotency.putIdempotency(key, inProgress(T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(inProgress(T0 + TTL));
      });

      it("records a batch's successes, adding to them when written again, and tells when each was recorded", async () => {
        const batch = unique('batch');
        const at = (id: string) =>
          stores()
            .idempotency.batchSuccess(batch, id)
            .then((success) => success?.at);
        await expect(at('d-1')).resolves.toBeUndefined();
        await stores().idempotency.recordBatchSuccesses(batch, batchOf([], T0));
        await expect(at('d-1')).resolves.toBeUndefined();
        await stores().idempotency.recordBatchSuccesses(batch, batchOf(['d-1', 'd-2'], T0));
        await stores().idempotency.recordBatchSuccesses(batch, batchOf(['d-2', 'd-3'], T0 + 5));
        await expect(at('d-1')).resolves.toBe(T0);
        await expect(at('d-3')).resolves.toBe(T0);
        await expect(at('d-4')).resolves.toBeUndefined();
      });

      it("tells the successes of a batch's own jobs, named by their index in it, from those of other dispatch ids", async () => {
        const batch = unique('batch-indexes');
        const ids = [0, 1, 2, 12].map((i) => batchJobDispatchId(batch, i));
        const at = (id: string) =>
          stores()
            .idempotency.batchSuccess(batch, id)
            .then((success) => success?.at);
        await stores().idempotency.recordBatchSuccesses(batch, batchOf([ids[0]!, ids[2]!, 'other'], T0));
        await stores().idempotency.recordBatchSuccesses(batch, batchOf([ids[3]!], T0 + 5));
        await expect(Promise.all(ids.map(at))).resolves.toEqual([T0, undefined, T0, T0]);
        await expect(at('other')).resolves.toBe(T0);
        await expect(at(`${batch}.x`)).resolves.toBeUndefined();
      });

      it("keeps each of a batch's jobs' usage, whether named by index or by id, through a second write", async () => {
        const batch = unique('batch-usage');
        const [first, second] = [0, 1].map((i) => batchJobDispatchId(batch, i));
        await stores().idempotency.recordBatchSuccesses(batch, {
          at: T0,
          expiresAt: T0 + TTL,
          jobs: [
            { dispatchId: first!, usage: { input: 120, output: 30 } },
            { dispatchId: 'other', usage: { input: 5 } },
          ],
          result: 'sqs results',
        });
        await stores().idempotency.recordBatchSuccesses(batch, {
          at: T0 + 5,
          expiresAt: T0 + TTL,
          jobs: [{ dispatchId: second! }, { dispatchId: 'other', usage: { input: 5 } }],
          result: 'sqs results',
        });
        await expect(stores().idempotency.batchSuccess(batch, first!)).resolves.toEqual({
          at: T0,
          usage: { input: 120, output: 30 },
          result: 'sqs results',
        });
        await expect(stores().idempotency.batchSuccess(batch, 'other')).resolves.toEqual({
          at: T0,
          usage: { input: 5 },
          result: 'sqs results',
        });
        await expect(stores().idempotency.batchSuccess(batch, second!)).resolves.toEqual({
          at: T0,
          result: 'sqs results',
        });
      });

      it("keeps a success record's usage and result, and drops them when the record is written without", async () => {
        const key = unique('idem-success-details');
        const success = { status: 'succeeded' as const, dispatchId: 'd-1', at: T0, expiresAt: T0 + TTL };
        const detailed = { ...success, usage: { input: 1200, output: 300 }, result: 'eventbridge jobs' };
        await stores().idempotency.putIdempotency(key, detailed);
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(detailed);
        await stores().idempotency.putIdempotency(key, success);
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(success);
      });

      it('keeps a failed record against further deliveries of its own dispatch', async () => {
        const key = unique('idem-failed-same');
        await stores().idempotency.putIdempotency(key, failed(T0, T0 + TTL));
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 1)).resolves.toEqual(
          failed(T0, T0 + TTL),
        );
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(failed(T0, T0 + TTL));
      });

      it('lets another dispatch claim a key whose record is a failed one', async () => {
        const key = unique('idem-failed-other');
        await stores().idempotency.putIdempotency(key, failed(T0, T0 + TTL));
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 1)).resolves.toBeNull();
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(next);
      });

      it('keeps a succeeded record against every dispatch, its own and others', async () => {
        const key = unique('idem-succeeded-other');
        await stores().idempotency.putIdempotency(key, succeeded(T0, T0 + TTL));
        const other: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, other, T0 + 1)).resolves.toEqual(
          succeeded(T0, T0 + TTL),
        );
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 1)).resolves.toEqual(
          succeeded(T0, T0 + TTL),
        );
      });

      it('keeps a dead-lettered record against every dispatch, its own and others, and reads its reason back', async () => {
        const key = unique('idem-dead-lettered');
        const parked: IdempotencyRecord = {
          status: 'dead-lettered',
          dispatchId: 'd-1',
          at: T0,
          expiresAt: T0 + TTL,
          reason: 'HTTP 400 Bad Request',
        };
        await stores().idempotency.putIdempotency(key, failed(T0, T0 + TTL));
        await stores().idempotency.putIdempotency(key, parked);
        const other: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, other, T0 + 1)).resolves.toEqual(parked);
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 1)).resolves.toEqual(
          parked,
        );
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(parked);
      });

      it('drops a dead-lettered record’s reason when it is written again without one', async () => {
        const key = unique('idem-dead-lettered-moved');
        await stores().idempotency.putIdempotency(key, {
          status: 'dead-lettered',
          dispatchId: 'd-1',
          at: T0,
          expiresAt: T0 + TTL,
          reason: 'bad',
        });
        await stores().idempotency.putIdempotency(key, {
          status: 'dead-lettered',
          dispatchId: 'd-1',
          at: T0,
          expiresAt: T0 + TTL,
        });
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual({
          status: 'dead-lettered',
          dispatchId: 'd-1',
          at: T0,
          expiresAt: T0 + TTL,
        });
      });

      it('overwrites an unexpired record with put', async () => {
        const key = unique('idem-overwrite');
        await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0);
        await stores().idempotency.putIdempotency(key, succeeded(T0 + 5, T0 + 10 * TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + 6)).resolves.toEqual(
          succeeded(T0 + 5, T0 + 10 * TTL),
        );
      });
    });

    describe('IdempotencyStore.claimRefund', () => {
      it('marks a dispatch once: the first call is told to refund, every later one not', async () => {
        const key = unique('refund-once');
        await stores().idempotency.putIdempotency(key, succeeded(T0, T0 + TTL));
        await expect(stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)).resolves.toBe(true);
        await expect(stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)).resolves.toBe(false);
        await expect(stores().idempotency.claimRefund(key, 'd-3', T0 + TTL)).resolves.toBe(true);
      });

      it('refuses the dispatch that claimed the key, even after the next dispatch claimed it over its failed record', async () => {
        const key = unique('refund-claimed');
        await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0);
        await stores().idempotency.putIdempotency(key, failed(T0 + 1, T0 + TTL));
        await stores().idempotency.putIdempotencyIfAbsent(
          key,
          { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + TTL },
          T0 + 2,
        );
        await stores().idempotency.putIdempotency(key, {
          status: 'succeeded',
          dispatchId: 'd-2',
          at: T0 + 3,
          expiresAt: T0 + TTL,
        });
        await expect(stores().idempotency.claimRefund(key, 'd-1', T0 + TTL)).resolves.toBe(false);
        await expect(stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)).resolves.toBe(false);
      });

      it('refuses the claim of a dispatch that claimed the key before, once a later dispatch’s failed record no longer keeps it out', async () => {
        const key = unique('claim-once');
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + TTL };
        await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0);
        await stores().idempotency.putIdempotency(key, failed(T0 + 1, T0 + TTL));
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 2)).resolves.toBeNull();
        const failedNext: IdempotencyRecord = { status: 'failed', dispatchId: 'd-2', at: T0 + 3, expiresAt: T0 + TTL };
        await stores().idempotency.putIdempotency(key, failedNext);

        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 4)).resolves.toBe(
          'spent',
        );
        await expect(stores().idempotency.getIdempotency(key, T0 + 4)).resolves.toEqual(failedNext);
      });

      it('refuses every claim of a dispatch that gave its reservation back: over another’s failed record, over no record, and by the record that keeps it out on its own', async () => {
        const [overFailed, overNone, overSuccess] = [unique('spent-failed'), unique('spent-none'), unique('spent-ok')];
        const claim: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + TTL };
        await stores().idempotency.putIdempotency(overFailed, failed(T0, T0 + TTL));
        await stores().idempotency.putIdempotency(overSuccess, succeeded(T0, T0 + TTL));
        for (const key of [overFailed, overNone, overSuccess])
          await expect(stores().idempotency.claimRefund(key, 'd-2', T0 + TTL)).resolves.toBe(true);

        await expect(stores().idempotency.putIdempotencyIfAbsent(overFailed, claim, T0 + 1)).resolves.toBe('spent');
        await expect(stores().idempotency.putIdempotencyIfAbsent(overNone, claim, T0 + 1)).resolves.toBe('spent');
        await expect(stores().idempotency.putIdempotencyIfAbsent(overSuccess, claim, T0 + 1)).resolves.toEqual(
          succeeded(T0, T0 + TTL),
        );
        await expect(stores().idempotency.getIdempotency(overFailed, T0 + 1)).resolves.toEqual(failed(T0, T0 + TTL));
        await expect(stores().idempotency.getIdempotency(overNone, T0 + 1)).resolves.toBeUndefined();
        // Another dispatch still claims them.
        await expect(
          stores().idempotency.putIdempotencyIfAbsent(overNone, inProgress(T0 + TTL), T0 + 1),
        ).resolves.toBeNull();
      });

      it('keeps its marks when records are written over them, and a mark alone is no record', async () => {
        const key = unique('refund-marks');
        await expect(stores().idempotency.claimRefund(key, 'd-9', T0 + TTL)).resolves.toBe(true);
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toBeUndefined();
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0)).resolves.toBeNull();
        await stores().idempotency.putIdempotency(key, succeeded(T0 + 1, T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(succeeded(T0 + 1, T0 + TTL));
        await expect(stores().idempotency.claimRefund(key, 'd-9', T0 + TTL)).resolves.toBe(false);
      });
    });

    describe('IdempotencyStore.reopenDeadLettered', () => {
      it('turns a live dead-lettered record into a failed one of its dispatch, with its time and expiry and without its reason', async () => {
        const key = unique('reopen');
        await stores().idempotency.putIdempotency(key, deadLettered(T0, T0 + TTL));
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 1)).resolves.toBe('reopened');
        await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(failed(T0, T0 + TTL));
        await expect(stores().idempotency.getIdempotency(key, T0 + TTL)).resolves.toBeUndefined();
      });

      it('lets the next dispatch claim the key, while the dispatch that dead-lettered it stays out and refunds nothing', async () => {
        const key = unique('reopen-claims');
        await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0);
        await stores().idempotency.putIdempotency(key, deadLettered(T0 + 1, T0 + TTL));
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 2)).resolves.toBe('reopened');
        // A late delivery of d-1: refused by the record of its own dispatch, and already marked.
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 3)).resolves.toEqual(
          failed(T0 + 1, T0 + TTL),
        );
        await expect(stores().idempotency.claimRefund(key, 'd-1', T0 + TTL)).resolves.toBe(false);
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 3)).resolves.toBeNull();
        // Once d-2 holds the key, a late delivery of d-1 is refused by d-2's claim and still finds its mark.
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0 + 4)).resolves.toEqual(
          next,
        );
        await expect(stores().idempotency.claimRefund(key, 'd-1', T0 + TTL)).resolves.toBe(false);
      });

      it('leaves every other record as it is, reporting its status, and a key without a live record as absent', async () => {
        const records: IdempotencyRecord[] = [succeeded(T0, T0 + TTL), failed(T0, T0 + TTL), inProgress(T0 + TTL)];
        for (const record of records) {
          const key = unique(`reopen-${record.status}`);
          await stores().idempotency.putIdempotency(key, record);
          await expect(stores().idempotency.reopenDeadLettered(key, T0 + 1)).resolves.toBe(record.status);
          await expect(stores().idempotency.getIdempotency(key, T0 + 1)).resolves.toEqual(record);
        }
        await expect(stores().idempotency.reopenDeadLettered(unique('reopen-none'), T0)).resolves.toBe('absent');
        const marked = unique('reopen-marks-only');
        await stores().idempotency.claimRefund(marked, 'd-9', T0 + TTL);
        await expect(stores().idempotency.reopenDeadLettered(marked, T0)).resolves.toBe('absent');
        await expect(stores().idempotency.getIdempotency(marked, T0)).resolves.toBeUndefined();
      });

      it('reopens nothing once the dead-lettered record has expired at now', async () => {
        const key = unique('reopen-expired');
        await stores().idempotency.putIdempotency(key, deadLettered(T0, T0 + TTL));
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + TTL)).resolves.toBe('absent');
        await expect(stores().idempotency.getIdempotency(key, T0 + TTL - 1)).resolves.toEqual(
          deadLettered(T0, T0 + TTL),
        );
      });

      it('reopens once: a second reopen finds the failed record, and a job dead-lettered again is reopened again', async () => {
        const key = unique('reopen-twice');
        await stores().idempotency.putIdempotency(key, deadLettered(T0, T0 + TTL));
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 1)).resolves.toBe('reopened');
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 1)).resolves.toBe('failed');
        const again: IdempotencyRecord = {
          status: 'dead-lettered',
          dispatchId: 'd-2',
          at: T0 + 2,
          expiresAt: T0 + 2 * TTL,
        };
        await stores().idempotency.putIdempotency(key, again);
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 3)).resolves.toBe('reopened');
        await expect(stores().idempotency.getIdempotency(key, T0 + 3)).resolves.toEqual({
          status: 'failed',
          dispatchId: 'd-2',
          at: T0 + 2,
          expiresAt: T0 + 2 * TTL,
        });
      });
    });

    describe('IdempotencyStore.attemptsSpent', () => {
      const failedBy = (dispatchId: string, at: number): IdempotencyRecord => ({
        status: 'failed',
        dispatchId,
        at,
        expiresAt: at + TTL,
      });

      it('counts each dispatch whose failed call spent an attempt, once, whatever other writes the key sees', async () => {
        const key = unique('attempts');
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(0);
        await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0);
        await stores().idempotency.putIdempotency(key, failedBy('d-1', T0 + 1), { spentAttempt: true });
        await stores().idempotency.putIdempotency(key, failedBy('d-1', T0 + 1), { spentAttempt: true });
        // A claim by the next dispatch, a refund mark, and a failed record that spent nothing leave the count alone.
        const next: IdempotencyRecord = { status: 'in-progress', dispatchId: 'd-2', expiresAt: T0 + 2 * TTL };
        await expect(stores().idempotency.putIdempotencyIfAbsent(key, next, T0 + 2)).resolves.toBeNull();
        await stores().idempotency.claimRefund(key, 'd-3', T0 + TTL);
        await stores().idempotency.putIdempotency(key, failedBy('d-2', T0 + 3));
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(1);
        await stores().idempotency.putIdempotency(key, failedBy('d-4', T0 + 4), { spentAttempt: true });
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(2);
        await expect(stores().idempotency.getIdempotency(key, T0 + 4)).resolves.toEqual(failedBy('d-4', T0 + 4));
      });

      it('starts again from 0 when an operator reopens the dead-lettered job', async () => {
        const key = unique('attempts-reopen');
        await stores().idempotency.putIdempotency(key, failedBy('d-1', T0), { spentAttempt: true });
        const ended: IdempotencyRecord = { ...deadLettered(T0 + 1, T0 + TTL), dispatchId: 'd-2' };
        await stores().idempotency.putIdempotency(key, ended, { spentAttempt: true });
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(2);
        await expect(stores().idempotency.reopenDeadLettered(key, T0 + 2)).resolves.toBe('reopened');
        await expect(stores().idempotency.attemptsSpent(key)).resolves.toBe(0);
      });
    });

    describe('every store: copies', () => {
      it('keeps no reference to the values it was given', async () => {
        const lane = unique('copy-in');
        const key = unique('copy-in-key');
        const lease = await acquire(lane, 'a');
        const values = { l: ledger(1), c: circuit(1), s: settlement(T0), r: succeeded(T0, T0 + TTL) };
        await stores().ledger.saveLedger(lane, values.l, lease.token);
        await stores().circuit.saveCircuit(lane, values.c);
        await stores().ledger.addSettlements(lane, values.s);
        await stores().idempotency.putIdempotency(key, values.r);
        scribble(values);
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(1));
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(succeeded(T0, T0 + TTL));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0)]);
      });

      it('returns values whose mutation leaves the stored state unchanged', async () => {
        const lane = unique('copy-out');
        const key = unique('copy-out-key');
        const lease = await acquire(lane, 'a');
        await stores().ledger.saveLedger(lane, ledger(1), lease.token);
        await stores().circuit.saveCircuit(lane, circuit(1));
        await stores().idempotency.putIdempotency(key, succeeded(T0, T0 + TTL));
        await stores().ledger.addSettlements(lane, settlement(T0));
        scribble(await stores().ledger.loadLedger(lane));
        scribble(await stores().ledger.pendingSettlements(lane));
        scribble(await stores().circuit.loadCircuit(lane));
        scribble(await stores().idempotency.getIdempotency(key, T0));
        scribble(await stores().idempotency.putIdempotencyIfAbsent(key, inProgress(T0 + TTL), T0));
        await expect(stores().ledger.loadLedger(lane)).resolves.toEqual(ledger(1));
        await expect(stores().circuit.loadCircuit(lane)).resolves.toEqual(circuit(1));
        await expect(stores().idempotency.getIdempotency(key, T0)).resolves.toEqual(succeeded(T0, T0 + TTL));
        await expect(stores().ledger.pendingSettlements(lane)).resolves.toEqual([settlement(T0)]);
      });
    });
  });
}
