import { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import { MemoryState, memoryStores } from '../../../../tools/memory/MemoryStores';
import type { ServiceConfig, StateOutagePolicy } from '../../../../lib/config';
import type { CircuitJSON } from '../../../../lib/domain/breaker/circuitJSON';
import { InvokeRejectedError, InvokeThrottledError, StateFormatError } from '../../../../lib/errors';
import type { Clock } from '../../../../lib/ports/Clock';
import type { Invoker, JobEvent, WorkerEvent } from '../../../../lib/ports/Invoker';
import type {
  OutgoingMessage,
  QueueName,
  QueueReceiver,
  ReceiveOptions,
  ReceivedMessage,
  SendFailure,
  SourceQueue,
} from '../../../../lib/ports/QueueReceiver';
import type { CircuitStore } from '../../../../lib/ports/CircuitStore';
import type { Lease, LeaseStore } from '../../../../lib/ports/LeaseStore';
import type { LedgerStore } from '../../../../lib/ports/LedgerStore';
import { loadCircuit } from '../../../../lib/services/circuitUpdates';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import type { OrchestratorEvent, OrchestratorStores, RunSummary } from '../../../../lib/services/orchestrator/types';
import {
  LANE,
  START,
  dispatchedEvents,
  drive,
  openCircuit,
  orchestratorHarness,
  rel,
  sendJob,
  storedUsage,
  testConfig,
  type ConfigOverrides,
  type OrchestratorHarness,
  sendMain,
} from '../../../helpers/serviceFixtures';
import { violatedTiers } from '../../../helpers/windowReferee';

/** Picks the calls a faulty decorator fails: by operation, the instant of the call, and its ordinal (from 1). */
type FailWhen = (operation: string, now: number, call: number) => boolean;

/** Every call from `from` until `to` ms after START (`to` excluded), optionally only of `operations`. */
function during(from: number, to = Number.POSITIVE_INFINITY, operations?: readonly string[]): FailWhen {
  return (operation, now) =>
    now >= START + from && now < START + to && (operations === undefined || operations.includes(operation));
}

/** Kills a run at once: every later call of its store, queues or invoker hangs forever, as in a Lambda timeout. */
interface Life {
  killed: boolean;
}

const hang = () => new Promise<never>(() => {});

/**
 * Decorates the orchestrator's stores to fail the calls `failWhen` picks with a DynamoDB throttling error, as the SDK
 * throws it once its retries are spent. With `landed`, the call is made first: a write whose answer was lost. Calls
 * are numbered across the three stores.
 */
class FaultyStores implements OrchestratorStores {
  readonly lease: LeaseStore;
  readonly ledger: LedgerStore;
  readonly circuit: CircuitStore;
  /** Never fails: the limit readings are advisory, and a flush goes on without them. */
  readonly limits: OrchestratorStores['limits'];
  private calls = 0;
  readonly failures: { readonly operation: string; readonly at: number }[] = [];
  /** Every lease the run was given, taken or renewed, with when. */
  readonly leases: { readonly at: number; readonly lease: Lease }[] = [];

  constructor(
    inner: OrchestratorStores,
    private readonly clock: FakeClock,
    public failWhen: FailWhen,
    private readonly options: { readonly landed?: boolean; readonly life?: Life } = {},
  ) {
    this.lease = {
      acquireLease: (lane, owner, now, ttlMs) =>
        this.call('acquireLease', () =>
          inner.lease.acquireLease(lane, owner, now, ttlMs).then((taken) => this.held(taken)),
        ),
      renewLease: (lease, now, ttlMs) =>
        this.call('renewLease', () => inner.lease.renewLease(lease, now, ttlMs).then((renewed) => this.held(renewed))),
      releaseLease: (lease) => this.call('releaseLease', () => inner.lease.releaseLease(lease)),
      readLease: (lane) => this.call('readLease', () => inner.lease.readLease(lane)),
    };
    this.ledger = {
      loadLedger: (lane) => this.call('loadLedger', () => inner.ledger.loadLedger(lane)),
      saveLedger: (lane, ledger, fencingToken, settled) =>
        this.call('saveLedger', () => inner.ledger.saveLedger(lane, ledger, fencingToken, settled)),
      addSettlements: (lane, settlement) =>
        this.call('addSettlements', () => inner.ledger.addSettlements(lane, settlement)),
      pendingSettlements: (lane) => this.call('pendingSettlements', () => inner.ledger.pendingSettlements(lane)),
    };
    this.circuit = {
      loadCircuit: (lane) => this.call('loadCircuit', () => inner.circuit.loadCircuit(lane)),
      refusalRun: (lane) => this.call('refusalRun', () => inner.circuit.refusalRun(lane)),
      saveCircuit: (lane, next) => this.call('saveCircuit', () => inner.circuit.saveCircuit(lane, next)),
    };
    this.limits = inner.limits;
  }

  /** When the lease the run held at `at` (given before it) expires. */
  leaseEndAt(at: number): number {
    const held = this.leases.filter((l) => l.at < at).pop();
    if (held === undefined) throw new Error('no lease before then');
    return held.lease.expiresAt;
  }

  private held<L extends Lease | null>(lease: L): L {
    if (lease !== null) this.leases.push({ at: this.clock.now(), lease });
    return lease;
  }

  private async call<T>(
    operation: keyof LeaseStore | keyof LedgerStore | keyof CircuitStore,
    run: () => Promise<T>,
  ): Promise<T> {
    if (this.options.life?.killed === true) return hang();
    const now = this.clock.now();
    if (!this.failWhen(operation, now, ++this.calls)) return run();
    this.failures.push({ operation, at: now });
    if (this.options.landed === true) await run();
    throw Object.assign(new Error(`The level of configured provisioned throughput was exceeded (${operation})`), {
      name: 'ProvisionedThroughputExceededException',
      $metadata: { httpStatusCode: 400 },
    });
  }
}

/** A QueueReceiver decorator that fails the calls `failWhen` picks with an SQS 5xx, without making them. */
class FaultyQueues implements QueueReceiver {
  private calls = 0;
  readonly failures: { readonly operation: string; readonly queue: QueueName; readonly at: number }[] = [];

  constructor(
    readonly inner: QueueReceiver,
    private readonly clock: FakeClock,
    public failWhen: (operation: string, queue: QueueName, now: number, call: number) => boolean,
    private readonly life?: Life,
  ) {}

  private async call<T>(operation: keyof QueueReceiver, queue: QueueName, run: () => Promise<T>): Promise<T> {
    if (this.life?.killed === true) return hang();
    const now = this.clock.now();
    if (!this.failWhen(operation, queue, now, ++this.calls)) return run();
    this.failures.push({ operation, queue, at: now });
    throw Object.assign(new Error(`We encountered an internal error (${operation})`), {
      name: 'InternalError',
      $metadata: { httpStatusCode: 500 },
    });
  }

  receive(queue: SourceQueue, options: ReceiveOptions): Promise<ReceivedMessage[]> {
    return this.call('receive', queue, () => this.inner.receive(queue, options));
  }
  send(queue: QueueName, message: OutgoingMessage): Promise<void> {
    return this.call('send', queue, () => this.inner.send(queue, message));
  }
  sendBatch(queue: QueueName, messages: readonly OutgoingMessage[]): Promise<readonly SendFailure[]> {
    return this.call('sendBatch', queue, () => this.inner.sendBatch(queue, messages));
  }
  delete(queue: QueueName, receiptHandle: string): Promise<void> {
    return this.call('delete', queue, () => this.inner.delete(queue, receiptHandle));
  }
  deleteBatch(queue: QueueName, receiptHandles: readonly string[]): Promise<void> {
    return this.call('deleteBatch', queue, () => this.inner.deleteBatch(queue, receiptHandles));
  }
  changeVisibility(queue: QueueName, receiptHandle: string, visibilityMs: number): Promise<void> {
    return this.call('changeVisibility', queue, () => this.inner.changeVisibility(queue, receiptHandle, visibilityMs));
  }
  messageCount(queue: SourceQueue): Promise<number> {
    return this.call('messageCount', queue, () => this.inner.messageCount(queue));
  }
}

/** Sends `n` standard jobs `{id: 'j-1'}` … to the main queue. */
/** {@link testConfig} (5 s lease, flush every second, 100 ms first back-off) with a state-outage policy. */
function configWith(overrides: ConfigOverrides, stateOutage: StateOutagePolicy = 'pace-in-memory'): ServiceConfig {
  const config = testConfig(overrides);
  return { ...config, orchestrator: { ...config.orchestrator, stateOutage } };
}

function eventsOf<T extends OrchestratorEvent['type']>(
  events: readonly OrchestratorEvent[],
  type: T,
): Extract<OrchestratorEvent, { type: T }>[] {
  return events.filter((e): e is Extract<OrchestratorEvent, { type: T }> => e.type === type);
}

/** The instant of the last successful flush before `before` (the lease then runs `leaseTtlMs` from it). */
function lastFlushBefore(events: readonly OrchestratorEvent[], before: number): number {
  const flushes = eventsOf(events, 'flushed').filter((e) => e.at < before);
  const last = flushes[flushes.length - 1];
  if (last === undefined) throw new Error('no flush before the outage');
  return last.at;
}

const LEASE_TTL = 5_000;
const OUTAGE_FROM = 1_500;

describe('runOrchestrator under faults', () => {
  describe('state-store outage, pace-in-memory (the default)', () => {
    it('keeps pacing a short sliding tier through an outage only while no successor could count it, then resumes', async () => {
      const config = configWith({ quotas: [{ limit: 5, per: 'second' }] });
      const h = orchestratorHarness({ config });
      await sendMain(h.queues, 60);
      const stores = new FaultyStores(h.stores, h.clock, during(OUTAGE_FROM, 7_000));
      const sleeps: number[] = [];
      const clock: Clock = { now: () => h.clock.now(), sleep: (ms) => (sleeps.push(h.clock.now()), h.clock.sleep(ms)) };

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, clock, stores }, { deadline: START + 12_000 }),
        START + 13_000,
      );

      expect(summary.lease).toBe('acquired');
      // While held back it waits for the next try of the store instead of spinning.
      expect(sleeps.filter((at) => at >= START + OUTAGE_FROM && at < START + 7_000).length).toBeLessThan(40);
      const renewedAt = lastFlushBefore(h.events, START + OUTAGE_FROM);
      const leaseEnd = stores.leaseEndAt(START + OUTAGE_FROM);
      const [recovered, ...more] = eventsOf(h.events, 'state-recovered');
      expect(more).toEqual([]);
      expect(recovered!.at).toBeGreaterThanOrEqual(START + 7_000);
      const failures = eventsOf(h.events, 'state-unavailable');
      expect(failures[0]!.at).toBeGreaterThanOrEqual(START + OUTAGE_FROM);
      expect(failures[0]!.error).toMatch(/^state store \w+ failed: ProvisionedThroughputExceededException/);
      // Back-off: 100 ms doubling, capped at 10 s.
      const gaps = failures.slice(1).map((f, i) => f.at - failures[i]!.at);
      expect(gaps.slice(0, 4)).toEqual([100, 200, 400, 800]);
      const inOutage = dispatchedEvents(h.events).filter((e) => e.at >= START + OUTAGE_FROM && e.at < recovered!.at);
      // Past the saved allowance (2 flush intervals), a dispatch went only while its one-second window closed by the
      // lease's end, and then none until the store came back.
      expect(inOutage.length).toBeGreaterThan(0);
      expect(Math.max(...inOutage.map((e) => e.at))).toBeGreaterThan(
        renewedAt + 2 * config.orchestrator.flushIntervalMs,
      );
      for (const e of inOutage) expect(e.at + 1_000).toBeLessThanOrEqual(leaseEnd);
      expect(dispatchedEvents(h.events).filter((e) => e.at >= recovered!.at).length).toBeGreaterThan(0);
      expect(violatedTiers(dispatchedEvents(h.events), config.quotas)).toEqual([]);
      // Everything it dispatched is saved by the end.
      await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'second')).resolves.toBe(
        dispatchedEvents(h.events).filter((e) => e.at > h.clock.now() - 1_000).length,
      );
    });

    it.each([
      ['hour', 'every call fails'],
      ['day', 'every call fails'],
      ['hour', 'only the ledger saves fail'],
      ['day', 'only the ledger saves fail'],
    ] as const)(
      'never dispatches past the allowance the saved ledger holds on a %s tier during an outage (%s)',
      async (per, how) => {
        // Far above the pace of the second tier, so only the allowance holds dispatch back.
        const config = configWith({
          quotas: [
            { limit: 5, per: 'second' },
            { limit: 100_000, per },
          ],
        });
        const h = orchestratorHarness({ config });
        await sendMain(h.queues, 60);
        // When only the save fails, each try computes a fresh allowance that must not be used: it was never saved.
        const stores = new FaultyStores(
          h.stores,
          h.clock,
          during(OUTAGE_FROM, 7_000, how === 'every call fails' ? undefined : ['saveLedger']),
        );
        const run = runOrchestrator({ ...h.deps, stores }, { deadline: START + 12_000 });
        await h.clock.advanceTo(START + OUTAGE_FROM - 1);
        const saved = (await storedUsage(h.stores.ledger, config, h.clock.now(), per))!;
        const before = dispatchedEvents(h.events).length;

        const summary = await drive(h.clock, run, START + 13_000);

        expect(summary.lease).toBe('acquired');
        const recoveredAt = eventsOf(h.events, 'state-recovered')[0]!.at;
        const inOutage = dispatchedEvents(h.events).filter((e) => e.at >= START + OUTAGE_FROM && e.at < recoveredAt);
        expect(inOutage.length).toBeGreaterThan(0);
        expect(inOutage.length).toBeLessThanOrEqual(saved - before);
        expect(dispatchedEvents(h.events).filter((e) => e.at >= recoveredAt).length).toBeGreaterThan(0);
      },
    );

    describe.each([
      ['a second tier', [{ limit: 5, per: 'second' }]],
      [
        'a second and an hour tier',
        [
          { limit: 5, per: 'second' },
          { limit: 24, per: 'hour' },
        ],
      ],
      [
        'a second and a day tier',
        [
          { limit: 5, per: 'second' },
          { limit: 24, per: 'day' },
        ],
      ],
    ] as const)('with %s', (_, quotas) => {
      it.each([
        ['refused', false],
        ['landed but unanswered', true],
      ])(
        'leaves a successor that takes over at lease expiry nothing to overshoot when killed mid-outage (writes %s)',
        async (_mode, landed) => {
          // Bursts allowed: the successor spends a whole window at once, so any dispatch it cannot see shows.
          const config = configWith({ quotas, pacing: { burstFraction: 1 } });
          const clock = new FakeClock(START);
          const rawStores = memoryStores();
          const queues = new MemoryQueues({ clock });
          await sendMain(queues, 80);
          const life: Life = { killed: false };
          const first = orchestratorHarness({ config, clock, stores: rawStores, queues, owner: 'orchestrator-1' });
          const stores = new FaultyStores(rawStores, clock, during(OUTAGE_FROM), { landed, life });
          const invoker: Invoker = { invoke: (event) => (life.killed ? hang() : first.invoker.invoke(event)) };
          void runOrchestrator(
            { ...first.deps, stores, queues: new FaultyQueues(queues, clock, () => false, life), invoker },
            { deadline: START + 60_000 },
          );

          // The first instant another orchestrator can take the lease: the run is killed there, and the successor starts.
          let takenAt: number | undefined;
          for (let t = START + OUTAGE_FROM; takenAt === undefined; t++) {
            await clock.advanceTo(t);
            const probe = await rawStores.lease.acquireLease(LANE, 'probe', t, LEASE_TTL);
            if (probe !== null) {
              life.killed = true;
              await rawStores.lease.releaseLease(probe);
              takenAt = t;
            }
          }
          const second = orchestratorHarness({ config, clock, stores: rawStores, queues, owner: 'orchestrator-2' });
          const summary = await drive(
            clock,
            runOrchestrator(second.deps, { deadline: takenAt + 20_000 }),
            takenAt + 21_000,
          );

          expect(summary.lease).toBe('acquired');
          const firstCalls = dispatchedEvents(first.events);
          expect(firstCalls.filter((e) => e.at >= START + OUTAGE_FROM).length).toBeGreaterThan(0);
          expect(firstCalls.every((e) => e.at < takenAt!)).toBe(true);
          expect(dispatchedEvents(second.events).length).toBeGreaterThan(0);
          expect(violatedTiers([...firstCalls, ...dispatchedEvents(second.events)], config.quotas)).toEqual([]);
        },
      );
    });

    it('keeps honouring an open circuit read before the outage, and sends no health check until the store is back', async () => {
      const config = configWith({ quotas: [{ limit: 5, per: 'second' }] });
      const h = orchestratorHarness({ config });
      await sendMain(h.queues, 20);
      const stores = new FaultyStores(h.stores, h.clock, during(OUTAGE_FROM, 6_000));
      const run = runOrchestrator({ ...h.deps, stores }, { deadline: START + 8_000 });
      await h.clock.advanceTo(START + 1_000);
      await openCircuit(h.stores.circuit, config, h.clock.now());

      await drive(h.clock, run, START + 9_000);

      // Opened at 1000, read at the next step; the check is due at 3000 but waits for the store, back at 6000+.
      expect(dispatchedEvents(h.events).every((e) => e.at <= START + 1_000)).toBe(true);
      const checks = eventsOf(h.events, 'health-check-sent');
      expect(checks.length).toBeGreaterThan(0);
      expect(checks[0]!.at).toBeGreaterThanOrEqual(eventsOf(h.events, 'state-recovered')[0]!.at);
    });

    it('survives a failing circuit write for a due health check and sends the check once the store is back', async () => {
      const h = orchestratorHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      const stores = new FaultyStores(h.stores, h.clock, during(0, 4_000, ['saveCircuit']));

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 6_000 }),
        START + 7_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 0, healthChecks: 1 });
      expect(stores.failures.map((f) => f.operation)).toContain('saveCircuit');
      expect(eventsOf(h.events, 'health-check-sent')[0]!.at).toBeGreaterThanOrEqual(START + 4_000);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'half-open' } });
    });

    it.each([
      ['failed', false],
      ['landed, but its answer was lost', true],
    ])('folds every settlement exactly once when a save that removes settlements %s', async (_, landed) => {
      // Jobs reserve 10 on a cost tier spread over its minute (one every 600 ms). The API charged j-1 40 and j-2 25;
      // their workers report it late: j-1's before the flush at 1600 ms, whose save fails, and j-2's after that but
      // before the save is retried.
      const settleAt: Record<string, { readonly at: number; readonly actual: { cost: number } }> = {
        'm-1': { at: 1_500, actual: { cost: 40 } },
        'm-2': { at: 1_650, actual: { cost: 25 } },
      };
      const h = orchestratorHarness({
        config: configWith({
          quotas: [
            { limit: 5, per: 'second' },
            { limit: 1_000, per: 'minute', unit: 'cost' },
          ],
          pacing: { spreadLongTiers: true },
        }),
        worker: async (event, harness) => {
          if (event.kind !== 'job') return;
          await harness.queues.delete(event.queue, event.receiptHandle);
          const settle = settleAt[event.messageId];
          if (settle === undefined) return;
          await harness.clock.sleep(START + settle.at - harness.clock.now());
          await harness.stores.ledger.addSettlements(event.lane, {
            reservation: event.reservation,
            actual: settle.actual,
          });
        },
      });
      for (let i = 1; i <= 3; i++) await sendJob(h.queues, 'main', { id: `j-${i}` }, { cost: 10 });
      const stores = new FaultyStores(h.stores, h.clock, during(1_600, 1_650, ['saveLedger']), { landed });

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 3_000 }),
        START + 4_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 3 });
      expect(stores.failures).toEqual([{ operation: 'saveLedger', at: START + 1_600 }]);
      const [recovered, ...more] = eventsOf(h.events, 'state-recovered');
      expect(more).toEqual([]);
      expect(recovered!.at).toBeGreaterThan(START + 1_650); // the retried save came after j-2's settlement
      // 40 + 25 + 10: j-1's settlement neither counted twice (105) nor j-2's skipped (60).
      await expect(storedUsage(h.stores.ledger, h.config, h.clock.now(), 'minute', 'cost')).resolves.toBe(75);
      await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
      expect(eventsOf(h.events, 'flushed').reduce((n, e) => n + e.settlements, 0)).toBe(2);
    });

    it('keeps the lease when the final save fails, so the next run waits for its expiry', async () => {
      const state = new MemoryState();
      const h = orchestratorHarness({ stores: memoryStores(state) });
      await sendMain(h.queues, 5);
      const stores = new FaultyStores(h.stores, h.clock, during(2_500, Number.POSITIVE_INFINITY, ['saveLedger']));

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 3_000 }),
        START + 4_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 5 });
      const leaseEnd = state.leases.get(LANE)?.expiresAt ?? Number.NaN;
      expect(leaseEnd).toBeGreaterThan(START + 3_000);
      await expect(h.stores.lease.acquireLease(LANE, 'orchestrator-2', leaseEnd - 1, LEASE_TTL)).resolves.toBeNull();
      await expect(h.stores.lease.acquireLease(LANE, 'orchestrator-2', leaseEnd, LEASE_TTL)).resolves.not.toBeNull();
    });

    it('never dispatches on an expired lease, even within a saved allowance, while renewals fail', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 20);
      // The third invoke hangs for 6 s, past the 5 s lease; by then the lease cannot be renewed for a while.
      let invokes = 0;
      const invoker: Invoker = {
        invoke: async (event) => {
          if (++invokes === 3) await h.clock.sleep(6_000);
          return h.invoker.invoke(event);
        },
      };
      const stores = new FaultyStores(h.stores, h.clock, during(6_000, 9_000, ['renewLease']));

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores, invoker }, { deadline: START + 12_000 }),
        START + 13_000,
      );

      expect(summary.lease).toBe('acquired');
      const leaseEnd = stores.leaseEndAt(START + 6_000);
      const recoveredAt = eventsOf(h.events, 'state-recovered')[0]!.at;
      expect(recoveredAt).toBeGreaterThanOrEqual(START + 9_000);
      // The flush after the stall saved a fresh allowance, but the lease it could not renew had already run out.
      expect(stores.failures[0]).toMatchObject({ operation: 'renewLease', at: START + 6_400 });
      expect(dispatchedEvents(h.events).filter((e) => e.at >= leaseEnd && e.at < recoveredAt)).toEqual([]);
      expect(dispatchedEvents(h.events).filter((e) => e.at >= recoveredAt).length).toBeGreaterThan(0);
    });

    it('ends the run with the error when a stored circuit is corrupt: retrying cannot mend it', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 5);
      const run = runOrchestrator(h.deps, { deadline: START + 5_000 });
      await h.clock.advanceTo(START + 500);
      await h.stores.circuit.saveCircuit(LANE, {
        version: 1,
        state: { status: 'ajar' },
        pausedUntil: 0,
      } as unknown as CircuitJSON);

      await expect(drive(h.clock, run, START + 6_000)).rejects.toThrow(StateFormatError);
    });
  });

  describe("state-store outage, 'pause'", () => {
    it('dispatches nothing from the first failed state call until the store is back', async () => {
      const config = configWith({ quotas: [{ limit: 5, per: 'second' }] }, 'pause');
      const h = orchestratorHarness({ config });
      await sendMain(h.queues, 60);
      const stores = new FaultyStores(h.stores, h.clock, during(OUTAGE_FROM, 7_000));

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 12_000 }),
        START + 13_000,
      );

      expect(summary.lease).toBe('acquired');
      const firstFailure = eventsOf(h.events, 'state-unavailable')[0]!.at;
      const recoveredAt = eventsOf(h.events, 'state-recovered')[0]!.at;
      expect(dispatchedEvents(h.events).filter((e) => e.at >= firstFailure && e.at < recoveredAt)).toEqual([]);
      expect(dispatchedEvents(h.events).filter((e) => e.at >= recoveredAt).length).toBeGreaterThan(0);
    });

    it('pauses on a failed circuit read alone', async () => {
      const config = configWith({ quotas: [{ limit: 5, per: 'second' }] }, 'pause');
      const h = orchestratorHarness({ config });
      await sendMain(h.queues, 30);
      const stores = new FaultyStores(h.stores, h.clock, during(OUTAGE_FROM, 4_000, ['loadCircuit']));

      await drive(h.clock, runOrchestrator({ ...h.deps, stores }, { deadline: START + 6_000 }), START + 7_000);

      const recoveredAt = eventsOf(h.events, 'state-recovered')[0]!.at;
      expect(recoveredAt).toBeGreaterThanOrEqual(START + 4_000);
      expect(dispatchedEvents(h.events).filter((e) => e.at >= START + OUTAGE_FROM && e.at < recoveredAt)).toEqual([]);
    });
  });

  describe('throttling', () => {
    it('completes all work when every third state and queue call fails', async () => {
      const config = configWith({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 100, per: 'minute' },
        ],
      });
      const h = orchestratorHarness({ config });
      await sendMain(h.queues, 20);
      const stores = new FaultyStores(h.stores, h.clock, (_op, _now, call) => call % 3 === 0);
      const queues = new FaultyQueues(h.queues, h.clock, (_op, _queue, _now, call) => call % 3 === 0);
      const done = () => h.queues.depth('main') === 0 && h.invoker.idle();

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores, queues }, { deadline: START + 60_000, shouldStop: done }),
        START + 61_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 20, deadLettered: 0 });
      expect(stores.failures.length).toBeGreaterThan(5);
      expect(queues.failures.length).toBeGreaterThan(0);
      expect(h.queues.depth('main')).toBe(0);
      expect(h.queues.depth('main-dlq')).toBe(0);
      expect(new Set(h.workerEvents.map(({ event }) => (event as JobEvent).messageId)).size).toBe(20);
      expect(violatedTiers(dispatchedEvents(h.events), config.quotas)).toEqual([]);
    });
  });

  describe('queue faults', () => {
    it('backs off a failing receive and dispatches everything once it works again', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 5);
      const queues = new FaultyQueues(h.queues, h.clock, (op, _queue, now) => op === 'receive' && now < START + 2_500);

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, queues }, { deadline: START + 5_000 }),
        START + 6_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 5 });
      const failures = eventsOf(h.events, 'queue-unavailable');
      expect(failures.every((f) => f.operation === 'receive' && f.queue === 'requeue')).toBe(true);
      expect(rel(failures.map((f) => f.at))).toEqual([0, 100, 300, 700, 1_500]);
      expect(dispatchedEvents(h.events)[0]!.at).toBe(START + 3_100);
      expect(h.queues.depth('main')).toBe(0);
    });

    it('keeps a message at the head while its dead-letter send fails, then parks it once with its reason', async () => {
      const h = orchestratorHarness();
      await sendJob(h.queues, 'main', '{not json');
      await sendMain(h.queues, 2);
      let sends = 0;
      const queues = new FaultyQueues(h.queues, h.clock, (op) => op === 'send' && ++sends <= 2);

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, queues }, { deadline: START + 3_000 }),
        START + 4_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 2, deadLettered: 1 });
      expect(rel(eventsOf(h.events, 'queue-unavailable').map((f) => f.at))).toEqual([0, 100]);
      expect(h.queues.messages('main-dlq').map((m) => [m.body, m.attributes.reason?.value])).toEqual([
        ['{not json', expect.stringMatching(/^malformed: body is not JSON/)],
      ]);
      expect(h.queues.depth('main')).toBe(0);
    });

    it('goes on when the delete after a dead-letter send fails: the original comes back later, nothing is lost', async () => {
      const h = orchestratorHarness();
      await sendJob(h.queues, 'main', '{not json');
      await sendMain(h.queues, 2);
      let deletes = 0;
      const queues = new FaultyQueues(
        h.queues,
        h.clock,
        (op, queue) => op === 'delete' && queue === 'main' && ++deletes === 1,
      );

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, queues }, { deadline: START + 3_000 }),
        START + 4_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 2, deadLettered: 1 });
      expect(h.queues.depth('main-dlq')).toBe(1);
      expect(h.queues.messages('main')).toMatchObject([{ body: '{not json', inFlight: true }]);
    });

    it('skips a message whose hand-back at exit fails; a later run dispatches it once its visibility ends', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 10);
      const queues = new FaultyQueues(h.queues, h.clock, (op) => op === 'changeVisibility');
      // Lambda throttles every invoke after the third: the other seven of the batch are still buffered at exit.
      let invokes = 0;
      const invoker: Invoker = {
        invoke: async (event) => {
          if (++invokes > 3) throw new InvokeThrottledError('Rate exceeded');
          await h.invoker.invoke(event);
        },
      };

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, queues, invoker }, { deadline: START + 2_000 }),
        START + 3_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 3 });
      expect(eventsOf(h.events, 'queue-unavailable')).toHaveLength(7);
      expect(h.queues.messages('main').filter((m) => m.inFlight)).toHaveLength(7);
      const next = orchestratorHarness({ clock: h.clock, stores: h.stores, queues: h.queues, owner: 'orchestrator-2' });
      await h.clock.advanceTo(START + 30_000);
      const later = await drive(h.clock, runOrchestrator(next.deps, { deadline: START + 33_000 }), START + 34_000);
      expect(later.dispatched).toBe(7);
      expect(h.queues.depth('main')).toBe(0);
    });
  });

  describe('invoke faults', () => {
    /** The harness's invoker, except that Lambda refuses events whose job body has `id: 'big'` as too large. */
    function refusingBig(h: OrchestratorHarness, calls: WorkerEvent[]): Invoker {
      return {
        invoke: async (event) => {
          calls.push(event);
          if (event.kind === 'job' && event.body.includes('"big"')) {
            const bytes = new TextEncoder().encode(JSON.stringify(event)).byteLength;
            throw new InvokeRejectedError(
              `worker event of ${bytes} bytes is too large to invoke 'qo-dev-worker': RequestTooLargeException (HTTP 413): Request must be smaller than 262144 bytes for the Invoke operation`,
            );
          }
          return h.invoker.invoke(event);
        },
      };
    }

    it('dead-letters a message whose event Lambda refuses as too large, with the reason, and dispatches the next', async () => {
      const config = configWith({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 100, per: 'minute' },
        ],
      });
      const h = orchestratorHarness({ config });
      await sendJob(h.queues, 'main', { id: 'j-1' });
      await sendJob(h.queues, 'main', { id: 'big' });
      await sendJob(h.queues, 'main', { id: 'j-3' });
      const calls: WorkerEvent[] = [];

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, invoker: refusingBig(h, calls) }, { deadline: START + 2_000 }),
        START + 3_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 2, deadLettered: 1, invokeFailures: 0 });
      expect(dispatchedEvents(h.events).map((e) => e.messageId)).toEqual(['m-1', 'm-3']);
      expect(h.queues.messages('main-dlq').map((m) => [m.body, m.attributes.reason?.value])).toEqual([
        [
          '{"id":"big"}',
          expect.stringMatching(
            /^worker event of \d+ bytes is too large to invoke 'qo-dev-worker': RequestTooLargeException/,
          ),
        ],
      ]);
      expect(h.queues.depth('main')).toBe(0);
      // Its quota flowed back: the ledger holds the two real dispatches.
      await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'minute')).resolves.toBe(2);
    });

    it('does not invoke a refused message again while its dead-letter send fails', async () => {
      const h = orchestratorHarness();
      await sendJob(h.queues, 'main', { id: 'big' });
      await sendJob(h.queues, 'main', { id: 'j-2' });
      const calls: WorkerEvent[] = [];
      let sends = 0;
      const queues = new FaultyQueues(h.queues, h.clock, (op) => op === 'send' && ++sends <= 2);

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, queues, invoker: refusingBig(h, calls) }, { deadline: START + 2_000 }),
        START + 3_000,
      );

      expect(summary).toMatchObject({ dispatched: 1, deadLettered: 1 });
      expect(calls.filter((e) => e.kind === 'job' && e.body.includes('"big"'))).toHaveLength(1);
      expect(h.queues.depth('main-dlq')).toBe(1);
    });

    it('keeps backing off and never dead-letters while every invoke fails, as with a wrong function name', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 3);
      h.invoker.failNext(1_000, 'failed');

      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 30_000 }), START + 31_000);

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 0, deadLettered: 0 });
      expect(summary.invokeFailures).toBeGreaterThan(3);
      expect(h.queues.depth('main-dlq')).toBe(0);
      expect(h.queues.depth('main')).toBe(3);
      // Capped at 10 s between tries.
      const tries = eventsOf(h.events, 'invoke-failed').map((e) => e.at);
      expect(Math.max(...tries.slice(1).map((t, i) => t - tries[i]!))).toBe(10_000);
    });
  });

  describe('start-up', () => {
    it('starts late when taking the lease fails until the store recovers', async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 3);
      const stores = new FaultyStores(h.stores, h.clock, during(0, 3_000, ['acquireLease']));

      const summary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 5_000 }),
        START + 6_000,
      );

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 3 });
      const failures = eventsOf(h.events, 'state-unavailable');
      expect(failures.every((f) => f.operation === 'acquireLease')).toBe(true);
      expect(rel(failures.map((f) => f.at))).toEqual([0, 100, 300, 700, 1_500]);
      expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([3_100, 3_300, 3_500]);
    });

    it("returns 'unavailable' by its deadline, having done nothing, when the lease can never be taken", async () => {
      const h = orchestratorHarness();
      await sendMain(h.queues, 3);
      const stores = new FaultyStores(h.stores, h.clock, () => true);

      const summary: RunSummary = await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores }, { deadline: START + 20_000 }),
        START + 60_000,
      );

      expect(summary).toEqual({
        lease: 'unavailable',
        dispatched: 0,
        deadLettered: 0,
        healthChecks: 0,
        invokeFailures: 0,
      });
      expect(h.clock.now()).toBeLessThanOrEqual(START + 20_000);
      expect(h.invoker.invocations).toBe(0);
      expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0, 0]);
    });

    it.each(['loadLedger', 'loadCircuit'])(
      "returns 'unavailable' and frees the lease when %s keeps failing after the lease was taken",
      async (operation) => {
        const h = orchestratorHarness();
        await sendMain(h.queues, 3);
        const stores = new FaultyStores(h.stores, h.clock, (op) => op === operation);

        const summary = await drive(
          h.clock,
          runOrchestrator({ ...h.deps, stores }, { deadline: START + 10_000 }),
          START + 20_000,
        );

        expect(summary.lease).toBe('unavailable');
        expect(h.invoker.invocations).toBe(0);
        await expect(
          h.stores.lease.acquireLease(LANE, 'orchestrator-2', h.clock.now(), LEASE_TTL),
        ).resolves.not.toBeNull();
      },
    );
  });
});
