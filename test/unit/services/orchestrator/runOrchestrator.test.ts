import { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryQueues } from '../../../../tools/memory/MemoryQueues';
import {
  MemoryLeaseStore,
  MemoryState,
  memoryStores,
  type MemoryLedgerStore,
} from '../../../../tools/memory/MemoryStores';
import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { InvokeFailedError, InvokeThrottledError, LeaseLostError } from '../../../../lib/errors';
import type { Invoker, WorkerEvent } from '../../../../lib/ports/Invoker';
import type { ReceivedMessage } from '../../../../lib/ports/QueueReceiver';
import type { Lease } from '../../../../lib/ports/LeaseStore';
import { MAX_PENDING_SETTLEMENTS } from '../../../../lib/ports/LedgerStore';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { processWorkerEvent } from '../../../../lib/services/worker/processWorkerEvent';
import { forceCircuit, pauseLane, resumeLane } from '../../../../lib/services/operator/laneControl';
import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import { INITIAL_CHAIN_GAP_MS } from '../../../../lib/domain/pacing/dispatchLead';
import {
  LANE,
  START,
  ScriptedApi,
  awkwardBody,
  dispatchedEvents,
  drive,
  httpStatus,
  firstStartsLate,
  jobsOf,
  openCircuit,
  orchestratorHarness,
  rel,
  sendJob,
  storedUsage,
  stringAttr,
  testConfig,
  sendMain,
} from '../../../helpers/serviceFixtures';
import { maxWindowUsage, type Call } from '../../../helpers/windowReferee';

/** Sends `n` standard jobs `{id: 'j-1'}` … to the main queue. */
/** An invoker that records events and stalls (as a hung network call would) on its `stallOn`-th invoke. */
class StallingInvoker implements Invoker {
  readonly events: WorkerEvent[] = [];

  constructor(
    private readonly clock: FakeClock,
    private readonly stallOn: number,
    private readonly stallMs: number,
  ) {}

  async invoke(event: WorkerEvent): Promise<void> {
    this.events.push(event);
    if (this.events.length === this.stallOn) await this.clock.sleep(this.stallMs);
  }
}

/** A lease store whose renewals fail from the third on, as if another owner had taken the lease over. */
/** A lease store whose lease is lost to another owner by the time its holder first renews it. */
class LeaseLosingStore extends MemoryLeaseStore {
  lostAt: number | undefined;

  override async renewLease(lease: Lease): Promise<Lease> {
    this.lostAt ??= this.now();
    throw new LeaseLostError(lease.lane, lease.token);
  }

  constructor(
    state: MemoryState,
    private readonly now: () => number,
  ) {
    super(state);
  }
}

describe('runOrchestrator', () => {
  it("returns 'held-elsewhere' and dispatches nothing while another orchestrator holds the lease", async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 3);
    await h.stores.lease.acquireLease(LANE, 'orchestrator-0', START, 5_000);

    const summary = await runOrchestrator(h.deps, { deadline: START + 3_000 });

    expect(summary).toEqual({
      lease: 'held-elsewhere',
      dispatched: 0,
      deadLettered: 0,
      healthChecks: 0,
      invokeFailures: 0,
    });
    expect(h.invoker.invocations).toBe(0);
    expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0, 0]);
    expect(h.events).toEqual([]);
  });

  it('runs once the other holder has released the lease, with a higher fencing token', async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 1);
    const other = await h.stores.lease.acquireLease(LANE, 'orchestrator-0', START, 5_000);
    await h.stores.lease.releaseLease(other!);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 1_000 }), START + 2_000);

    expect(summary).toMatchObject({ lease: 'acquired', dispatched: 1 });
    // Released at exit, so a next orchestrator need not wait for expiry.
    await expect(h.stores.lease.acquireLease(LANE, 'orchestrator-2', h.clock.now(), 5_000)).resolves.toMatchObject({
      token: 3,
    });
  });

  it("stops with lease 'lost' and dispatches nothing more once another owner takes the expired lease over", async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 10);
    // The third invoke hangs for 6 s, past the 5 s lease: another orchestrator takes the lane over meanwhile.
    const invoker = new StallingInvoker(h.clock, 3, 6_000);
    const run = runOrchestrator({ ...h.deps, invoker }, { deadline: START + 20_000 });
    // Its last renewal was at the flush before the third dispatch (400 ms); the stall ends at 6400 ms.
    await h.clock.advanceTo(START + 6_000);
    const intruder = await h.stores.lease.acquireLease(LANE, 'orchestrator-2', h.clock.now(), 5_000);
    expect(intruder).not.toBeNull();

    const summary = await drive(h.clock, run, START + 30_000);

    expect(summary).toEqual({ lease: 'lost', dispatched: 3, deadLettered: 0, healthChecks: 0, invokeFailures: 0 });
    expect(invoker.events).toHaveLength(3);
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400]);
    // The stale holder wrote nothing once the lease was taken over, and the newcomer's lease stands.
    expect(h.events.filter((e) => e.type === 'flushed').every((e) => e.at < START + 6_000)).toBe(true);
    await expect(h.stores.lease.renewLease(intruder!, h.clock.now(), 5_000)).resolves.toMatchObject({
      owner: 'orchestrator-2',
    });
  });

  it("stops with lease 'lost' at the first flush whose renewal fails", async () => {
    const state = new MemoryState();
    let store: LeaseLosingStore | undefined;
    const h = orchestratorHarness({
      stores: { ...memoryStores(state), lease: (store = new LeaseLosingStore(state, () => h.clock.now())) },
    });
    await sendMain(h.queues, 40);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 10_000 }), START + 20_000);

    // Flushes before half the lease's lifetime (2.5 s) only save; the first after it renews and finds the lease lost.
    const { flushIntervalMs, leaseTtlMs } = h.config.orchestrator;
    expect(store.lostAt).toBeGreaterThanOrEqual(START + leaseTtlMs / 2);
    expect(store.lostAt).toBeLessThanOrEqual(START + leaseTtlMs / 2 + flushIntervalMs);
    const dispatched = dispatchedEvents(h.events);
    expect(dispatched.every((e) => e.at < store!.lostAt!)).toBe(true);
    expect(summary).toEqual({
      lease: 'lost',
      dispatched: dispatched.length,
      deadLettered: 0,
      healthChecks: 0,
      invokeFailures: 0,
    });
    expect(dispatched.length).toBeGreaterThanOrEqual(12);
    expect(h.invoker.invocations).toBe(dispatched.length);
  });

  it('dispatches requeued messages before main ones', async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 3);
    await sendJob(h.queues, 'requeue', { id: 'r-1' }, { attempt: 2 });
    await sendJob(h.queues, 'requeue', { id: 'r-2' }, { attempt: 3 });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

    expect(dispatchedEvents(h.events).map((e) => [e.queue, e.messageId])).toEqual([
      ['requeue', 'm-4'],
      ['requeue', 'm-5'],
      ['main', 'm-1'],
      ['main', 'm-2'],
      ['main', 'm-3'],
    ]);
    expect(h.workerEvents.map(({ event }) => (event.kind === 'job' ? event.attempt : 0))).toEqual([2, 3, 1, 1, 1]);
  });

  it('reads the requeue queue again before taking more main messages', async () => {
    const h = orchestratorHarness({
      config: testConfig({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 10, per: 'minute' },
        ],
      }),
    });
    await sendMain(h.queues, 6);
    const run = runOrchestrator(h.deps, { deadline: START + 200_000 });
    // 10 per minute with a 25 s margin of visibility over the worker timeout: main is read 4 at a time. The requeued
    // message arrives while the first four wait for their slots (5 per second, the minute tier spent as fast as that).
    await h.clock.advanceTo(START + 300);
    await sendJob(h.queues, 'requeue', { id: 'r-1' }, { attempt: 2 });

    await drive(h.clock, run, START + 300_000);

    expect(dispatchedEvents(h.events).map((e) => e.messageId)).toEqual([
      'm-1',
      'm-2',
      'm-3',
      'm-4',
      'm-7',
      'm-5',
      'm-6',
    ]);
  });

  it('dead-letters malformed messages with their reason and keeps dispatching the healthy ones around them', async () => {
    const h = orchestratorHarness();
    await sendJob(h.queues, 'main', { id: 'j-1' });
    await sendJob(h.queues, 'main', '{not json');
    await sendJob(h.queues, 'main', { id: 'j-3' });
    await sendJob(h.queues, 'main', { id: 'j-4' }, { attributes: { cost: stringAttr('3') } });
    await sendJob(h.queues, 'main', { id: 'j-5' });

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

    expect(summary).toMatchObject({ lease: 'acquired', dispatched: 3, deadLettered: 2 });
    expect(dispatchedEvents(h.events).map((e) => e.messageId)).toEqual(['m-1', 'm-3', 'm-5']);
    const dead = h.events.filter((e) => e.type === 'dead-lettered');
    // A malformed message takes no pacing slot: it goes right after the dispatch before it.
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400]);
    expect(dead.map((e) => e.type === 'dead-lettered' && [e.messageId, e.at - START])).toEqual([
      ['m-2', 0],
      ['m-4', 200],
    ]);
    expect(h.queues.depth('main')).toBe(0);
    const reasons = h.queues
      .messages('main-dlq')
      .map((m) => [m.body, m.attributes.reason?.value, m.attributes.sourceQueue?.value, m.attributes.attempt?.value]);
    expect(reasons).toEqual([
      ['{not json', expect.stringMatching(/^malformed: body is not JSON \(.+\)$/), 'main', '1'],
      [
        '{"id":"j-4"}',
        'malformed: attribute \'cost\' must be a Number holding an integer from 0 to 1000000000000; got String "3"',
        'main',
        '1',
      ],
    ]);
  });

  it('dead-letters a message whose cost exceeds a tier limit, naming the tier', async () => {
    const config = testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 10, per: 'minute', unit: 'cost' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendJob(h.queues, 'main', { id: 'j-1' }, { cost: 11 });
    await sendJob(h.queues, 'main', { id: 'j-2' }, { cost: 10 });

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

    expect(summary).toMatchObject({ dispatched: 1, deadLettered: 1 });
    expect(dispatchedEvents(h.events).map((e) => [e.messageId, e.costs])).toEqual([['m-2', { cost: 10 }]]);
    expect(h.queues.messages('main-dlq').map((m) => [m.body, m.attributes.reason?.value])).toEqual([
      ['{"id":"j-1"}', 'cost 11 exceeds the limit 10 per minute of a quota tier, so it can never be sent'],
    ]);
  });

  it('sends a body that a JSON round trip would change to the worker, and dead-letters one, byte for byte', async () => {
    const config = testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 10, per: 'minute', unit: 'cost' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendJob(h.queues, 'main', awkwardBody('j-1'));
    await sendJob(h.queues, 'main', awkwardBody('j-2'), { cost: 11 });

    // The cost tier lets one unit go every 6 s: j-2 is received only once one could be sent.
    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 7_000 }), START + 8_000);

    expect(summary).toMatchObject({ dispatched: 1, deadLettered: 1 });
    expect(h.workerEvents.map(({ event }) => event.kind === 'job' && event.body)).toEqual([awkwardBody('j-1')]);
    expect(h.queues.messages('main-dlq').map((m) => m.body)).toEqual([awkwardBody('j-2')]);
  });

  it('keeps a message whose invoke is throttled, refunds its reservation, backs off and dispatches it later', async () => {
    // 100 per second spaces dispatches 10 ms apart, so the back-off (100 ms, doubling) sets the pace here.
    const config = testConfig({
      quotas: [
        { limit: 100, per: 'second' },
        { limit: 10_000, per: 'minute' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 1);
    h.invoker.failNext(3, 'throttled');

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

    expect(summary).toEqual({ lease: 'acquired', dispatched: 1, deadLettered: 0, healthChecks: 0, invokeFailures: 3 });
    const failures = h.events.filter((e) => e.type === 'invoke-failed');
    expect(rel(failures.map((e) => e.at))).toEqual([0, 100, 300]);
    expect(failures.map((e) => e.type === 'invoke-failed' && e.error)).toEqual(
      Array(3).fill('injected fault: invoke throttled'),
    );
    expect(dispatchedEvents(h.events).map((e) => [e.messageId, e.at - START])).toEqual([['m-1', 700]]);
    expect(h.queues.depth('main')).toBe(0);
    // Three refused invokes gave their quota back: the ledger holds the one real dispatch.
    await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'minute')).resolves.toBe(1);
  });

  it('keeps the quota of an invoke that failed but may have started, and dispatches the message again', async () => {
    // Lambda queued the event, then the answer was lost (a 5xx or a timeout after the request left).
    const config = testConfig({
      quotas: [
        { limit: 100, per: 'second' },
        { limit: 10_000, per: 'minute' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 1);
    let lost = 1;
    const invoker: Invoker = {
      invoke: async (event) => {
        await h.invoker.invoke(event);
        if (lost-- > 0) throw new InvokeFailedError('answer lost after Lambda queued the event', true);
      },
    };

    const summary = await drive(
      h.clock,
      runOrchestrator({ ...h.deps, invoker }, { deadline: START + 2_000 }),
      START + 3_000,
    );

    expect(summary).toMatchObject({ dispatched: 1, invokeFailures: 1 });
    expect(h.workerEvents).toHaveLength(2);
    // Both invokes may have reached a worker: the ledger holds both.
    await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'minute')).resolves.toBe(2);
  });

  it('dispatches no job while the circuit is open and sends exactly one health check once it is due', async () => {
    const h = orchestratorHarness();
    await openCircuit(h.stores.circuit, h.config, START);
    await sendMain(h.queues, 3);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 4_000 }), START + 5_000);

    expect(summary).toEqual({ lease: 'acquired', dispatched: 0, deadLettered: 0, healthChecks: 1, invokeFailures: 0 });
    expect(dispatchedEvents(h.events)).toEqual([]);
    expect(h.events.filter((e) => e.type === 'health-check-sent')).toEqual([
      { type: 'health-check-sent', at: START + 2_000, checkId: 'id-1' },
    ]);
    expect(h.workerEvents).toEqual([
      { at: START + 2_000, event: { kind: 'health-check', lane: LANE, checkId: 'id-1', sentAt: START + 2_000 } },
    ]);
    expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0, 0]);
    // No result came back (this worker ignores checks), so the circuit waits in half-open for that check.
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'half-open', checkId: 'id-1', checkSentAt: START + 2_000 },
    });
  });

  it('resumes dispatch after a successful health check closes the circuit', async () => {
    const h = orchestratorHarness({
      worker: async (event, harness) => {
        const api = new ScriptedApi(harness.clock);
        await processWorkerEvent(event, {
          clock: harness.clock,
          stores: harness.stores,
          queues: harness.queues,
          api,
          config: harness.config,
          random: () => 0,
        });
      },
    });
    await openCircuit(h.stores.circuit, h.config, START);
    await sendMain(h.queues, 2);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 4_000 }), START + 5_000);

    expect(summary).toMatchObject({ dispatched: 2, healthChecks: 1 });
    // The check goes at 2000 and closes the circuit at once; the next poll (100 ms later) finds it closed.
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([2_100, 2_300]);
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', closedAt: START + 2_000 },
    });
  });

  describe('reading the circuit', () => {
    it('reads it only before a dispatch while it lets work through: a run waiting for its quota makes no read', async () => {
      const h = orchestratorHarness({ config: testConfig({ quotas: [{ limit: 1, per: 'second' }] }) });
      const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
      const reads: number[] = [];
      jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation((lane) => {
        reads.push(h.clock.now());
        return load(lane);
      });
      await sendMain(h.queues, 4);

      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 4_500 }), START + 5_000);

      // One job a second for 4 s: every 250 ms would be 18 reads. The rehydration reads, then one read before each
      // dispatch but the first (the rehydration's read is fresh), each within circuitPollMs of its dispatch.
      expect(summary.dispatched).toBe(4);
      const dispatches = dispatchedEvents(h.events).map((e) => e.at);
      expect(reads).toHaveLength(4);
      for (const at of dispatches.slice(1))
        expect(reads.some((r) => r <= at && r >= at - h.config.orchestrator.circuitPollMs)).toBe(true);
    });

    it('dispatches on a read that takes longer than circuitPollMs (a throttled table), its slots taken once the read answered', async () => {
      const h = orchestratorHarness({ config: testConfig({ quotas: [{ limit: 2, per: 'second' }] }) });
      const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
      jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation(async (lane) => {
        await h.clock.sleep(h.config.orchestrator.circuitPollMs + 50);
        return load(lane);
      });
      await sendMain(h.queues, 6);

      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 5_000 }), START + 6_000);

      expect(summary.dispatched).toBe(6);
      // Each job's slot is taken once the read has answered, not before it: no event leaves past its callBy.
      const late = h.workerEvents.flatMap(({ at, event }) => jobsOf(event).filter((job) => at > job.callBy));
      expect(late).toEqual([]);
    });

    it('holds a dispatch back when its read finds a 429 pause a worker wrote, and sends it after the pause', async () => {
      const h = orchestratorHarness({ config: testConfig({ quotas: [{ limit: 1, per: 'second' }] }) });
      await sendMain(h.queues, 2);
      const run = runOrchestrator(h.deps, { deadline: START + 6_000 });
      await h.clock.advanceTo(START + 500);
      const policy = circuitPolicyFrom(h.config.circuit);
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'rate-limited', retryAt: START + 3_000 },
        START + 500,
        policy,
      );

      await drive(h.clock, run, START + 7_000);

      const [first, second] = dispatchedEvents(h.events).map((e) => e.at);
      expect(first).toBeLessThan(START + 500);
      expect(second).toBeGreaterThanOrEqual(START + 3_000);
    });
  });

  describe("an operator's hold", () => {
    const control = (h: ReturnType<typeof orchestratorHarness>) => ({
      circuits: h.stores.circuit,
      clock: h.clock,
      lane: LANE,
    });

    it('stops dispatch within circuitPollMs of a pause, hands back what it buffered and keeps the lease, and starts again after the resume', async () => {
      const h = orchestratorHarness();
      const { circuitPollMs, flushIntervalMs } = h.config.orchestrator;
      await sendMain(h.queues, 20);
      const run = runOrchestrator(h.deps, { deadline: START + 6_000 });
      await h.clock.advanceTo(START + 1_050);
      await pauseLane(control(h), 'alice');
      const before = dispatchedEvents(h.events).length;
      await h.clock.advanceTo(START + 3_050);

      const held = dispatchedEvents(h.events);
      expect(held.every((e) => e.at <= START + 1_050 + circuitPollMs)).toBe(true);
      expect(held.length - before).toBeLessThanOrEqual(1);
      // Every message not dispatched is visible again: the buffer went back at the run's next step (which waited at
      // most for the next slot or flush), rather than waiting out its visibility.
      const waiting = h.queues.messages('main');
      expect(waiting).toHaveLength(20 - held.length);
      expect(waiting.some((m) => m.receiveCount > 0)).toBe(true);
      expect(waiting.every((m) => m.visibleAt <= START + 1_050 + flushIntervalMs)).toBe(true);
      // Still holding the lease, it flushes and reads on, and sends no health check.
      expect(h.events.filter((e) => e.type === 'flushed' && e.at > START + 2_000).length).toBeGreaterThan(0);
      expect(h.workerEvents.every(({ event }) => event.kind !== 'health-check')).toBe(true);

      await resumeLane(control(h), 'bob');
      const summary = await drive(h.clock, run, START + 10_000);

      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 20, healthChecks: 0 });
      const resumed = dispatchedEvents(h.events).slice(held.length);
      expect(resumed[0]!.at).toBeGreaterThanOrEqual(START + 3_050);
      expect(resumed[0]!.at).toBeLessThanOrEqual(START + 3_050 + circuitPollMs);
    });

    it('sends no health check while paused, even once one is due, and sends it within circuitPollMs of the resume', async () => {
      const h = orchestratorHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      await pauseLane(control(h), 'alice');
      const run = runOrchestrator(h.deps, { deadline: START + 6_000 });
      await h.clock.advanceTo(START + 4_000);
      expect(h.workerEvents).toEqual([]);

      await resumeLane(control(h), 'bob');
      const summary = await drive(h.clock, run, START + 10_000);

      expect(summary.healthChecks).toBe(1);
      const [check] = h.events.filter((e) => e.type === 'health-check-sent');
      expect(check!.at).toBeGreaterThanOrEqual(START + 4_000);
      expect(check!.at).toBeLessThanOrEqual(START + 4_000 + h.config.orchestrator.circuitPollMs);
    });

    it('dispatches nothing and sends no health check while an operator holds the circuit open, and dispatches again after the close', async () => {
      const h = orchestratorHarness();
      await forceCircuit(control(h), 'open', 'alice');
      await sendMain(h.queues, 2);
      const run = runOrchestrator(h.deps, { deadline: START + 8_000 });
      await h.clock.advanceTo(START + 5_000);
      expect(h.workerEvents).toEqual([]);
      expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0]);

      await forceCircuit(control(h), 'closed', 'bob');
      const summary = await drive(h.clock, run, START + 10_000);

      expect(summary).toMatchObject({ dispatched: 2, healthChecks: 0 });
      expect(dispatchedEvents(h.events)[0]!.at).toBeLessThanOrEqual(
        START + 5_000 + h.config.orchestrator.circuitPollMs,
      );
    });

    it('ramps up from rampStartFraction of the rate after a resume, as after a close', async () => {
      const config = testConfig({ pacing: { rampSeconds: 10, rampStartFraction: 0.2 } });
      const h = orchestratorHarness({ config });
      await pauseLane(control(h), 'alice');
      await sendMain(h.queues, 6);
      const run = runOrchestrator(h.deps, { deadline: START + 8_000 });
      await h.clock.advanceTo(START + 1_000);
      await resumeLane(control(h), 'bob');
      await drive(h.clock, run, START + 10_000);

      // At a fifth of 5 per second, one a second at first, not one every 200 ms.
      const at = rel(dispatchedEvents(h.events).map((e) => e.at));
      expect(at[0]).toBeGreaterThanOrEqual(1_000);
      expect(at[1]! - at[0]!).toBeGreaterThan(600);
    });
  });

  it('spaces dispatches evenly at the quota rate: 5 per second, one every 200 ms', async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 10);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 5_000 }), START + 6_000);

    // From the sixth on, the ledger holds each dispatch until the first one's bucket (4 ms) has left the window.
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([
      0, 200, 400, 600, 800, 1_003, 1_203, 1_403, 1_603, 1_803,
    ]);
    const calls = dispatchedEvents(h.events).map((e) => ({ at: e.at, costs: e.costs }));
    expect(maxWindowUsage(calls, h.deps.config.quotas[0]!)).toBe(5);
  });

  it('reads the circuit every circuitPollMs while it dispatches, not before each dispatch', async () => {
    const h = orchestratorHarness();
    await sendMain(h.queues, 10);
    const reads: number[] = [];
    const load = h.stores.circuit.loadCircuit.bind(h.stores.circuit);
    jest.spyOn(h.stores.circuit, 'loadCircuit').mockImplementation(async (lane) => {
      reads.push(h.clock.now() - START);
      return load(lane);
    });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

    expect(dispatchedEvents(h.events)).toHaveLength(10);
    // One read at the start (rehydration), then at most one per 100 ms poll over the 2 s run: not two per dispatch.
    expect(reads.length).toBeLessThanOrEqual(1 + 2_000 / h.deps.config.orchestrator.circuitPollMs);
    expect(reads.slice(1).every((at, i) => at - (reads[i] ?? 0) >= h.deps.config.orchestrator.circuitPollMs)).toBe(
      true,
    );
  });

  describe('idleStopMs', () => {
    const idleStop = (idleStopMs: number) =>
      orchestratorHarness({ config: testConfig({ orchestrator: { idleStopMs } }) });

    it('ends a run that finds every queue empty for idleStopMs, long before its deadline, and releases the lease', async () => {
      const h = idleStop(1_000);
      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 50_000 }), START + 60_000);
      expect(summary).toEqual({
        lease: 'acquired',
        dispatched: 0,
        deadLettered: 0,
        healthChecks: 0,
        invokeFailures: 0,
      });
      // Idle from the first round (its 200 ms long poll found nothing); ended at the first round that ends 1 s later.
      expect(h.clock.now() - START).toBeGreaterThanOrEqual(1_000);
      expect(h.clock.now() - START).toBeLessThan(2_000);
      expect(await h.stores.lease.acquireLease(LANE, 'orchestrator-2', h.clock.now(), 5_000)).toMatchObject({
        owner: 'orchestrator-2',
      });
    });

    it('counts idleness from the last job: a backlog is worked off first', async () => {
      const h = idleStop(1_000);
      await sendMain(h.queues, 10);
      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 50_000 }), START + 60_000);
      const dispatched = dispatchedEvents(h.events);
      expect(dispatched).toHaveLength(10);
      const last = dispatched[dispatched.length - 1]?.at ?? START;
      expect(h.clock.now() - last).toBeGreaterThanOrEqual(1_000);
      expect(h.clock.now() - last).toBeLessThan(2_000);
    });

    it("goes on while a message is delayed (a worker's retry): it dispatches it, then ends once no queue holds anything", async () => {
      const h = idleStop(1_000);
      await h.queues.send('requeue', { body: JSON.stringify({ id: 'r-1' }), delayMs: 3_000 });
      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 50_000 }), START + 60_000);
      expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([3_000]);
      // Asked at 1 s, 2 s and 3 s (one request each: the requeue queue, asked first, held the message), then each
      // of the four queues once, 1 s after the dispatch.
      expect(h.queues.stats.messageCount).toBe(3 + 4);
      expect(h.clock.now() - START).toBeGreaterThanOrEqual(4_000);
      expect(h.clock.now() - START).toBeLessThan(5_000);
    });

    it('keeps a run whose circuit is open going to its deadline: it owes the health checks', async () => {
      const h = idleStop(1_000);
      await openCircuit(h.stores.circuit, h.deps.config, START);
      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 10_000 }), START + 20_000);
      expect(h.clock.now()).toBeGreaterThanOrEqual(START + 10_000);
      expect(summary.healthChecks).toBeGreaterThan(0);
    });
  });

  it('makes up a slot a worker gave back for starting too late, once folded within its window, and never exceeds the tier', async () => {
    const calls: Call[] = [];
    let jobEvents = 0;
    const h = orchestratorHarness({
      worker: async (event, harness) => {
        if (event.kind === 'job' && ++jobEvents === 2) await harness.clock.sleep(100); // a cold start: past its callBy
        const api = new ScriptedApi(harness.clock);
        await processWorkerEvent(event, {
          clock: harness.clock,
          stores: harness.stores,
          queues: harness.queues,
          api,
          config: harness.config,
          random: () => 0,
        });
        calls.push(...api.calls.map((call) => ({ at: call.at, costs: { cost: 1 } })));
      },
    });
    await sendMain(h.queues, 6);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    // The slot at 200 is given back at 300 and folded in by the next flush (the allowance ran out at 600): the late
    // job, requeued, goes at once beside the one due then, and the schedule goes on. Without the credit it would
    // have waited for 1203.
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400, 600, 600, 800, 1_003]);
    expect(calls).toHaveLength(6);
    expect(maxWindowUsage(calls, h.deps.config.quotas[0]!)).toBe(5);
  });

  it('spaces dispatches at the shortest tier, 10 per second, and spends the minute tier as fast as that allows', async () => {
    const h = orchestratorHarness({
      config: testConfig({
        quotas: [
          { limit: 10, per: 'second' },
          { limit: 300, per: 'minute' },
        ],
      }),
    });
    await sendMain(h.queues, 8);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 100, 200, 300, 400, 500, 600, 700]);
  });

  describe('batches', () => {
    const fast = (batchWindowMs: number) =>
      orchestratorHarness({
        config: testConfig({ quotas: [{ limit: 50, per: 'second' }], pacing: { batchWindowMs } }),
      });

    it('sends the jobs whose slots fall less than batchWindowMs after the first in one invocation, each with its own slot', async () => {
      const h = fast(100);
      await sendMain(h.queues, 10);

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

      // 50 a second: slots 20 ms apart. A batch takes what the buffer holds within 100 ms of its first slot; the first
      // receives are small (1, 2, then 4 messages) while the run's allowance grows from the first one's.
      expect(h.workerEvents.map(({ event }) => event.kind)).toEqual(['job', 'batch', 'batch', 'batch']);
      expect(h.workerEvents.map(({ event }) => jobsOf(event).map((job) => job.slotAt - START))).toEqual([
        [0],
        [20, 40],
        [60, 80, 100, 120],
        [140, 160, 180],
      ]);
      expect(h.workerEvents.flatMap(({ event }) => jobsOf(event).map((job) => job.messageId))).toEqual(
        Array.from({ length: 10 }, (_, i) => `m-${i + 1}`),
      );
      expect(new Set(h.workerEvents.flatMap(({ event }) => jobsOf(event).map((job) => job.dispatchId))).size).toBe(10);
      expect(dispatchedEvents(h.events)).toHaveLength(10);
    });

    it('sends one job per invocation with batchWindowMs 0, and at rates whose slots are batchWindowMs apart', async () => {
      for (const h of [
        fast(0),
        orchestratorHarness({
          config: testConfig({ quotas: [{ limit: 10, per: 'second' }], pacing: { batchWindowMs: 100 } }),
        }),
      ]) {
        await sendMain(h.queues, 6);
        await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);
        expect(h.workerEvents.map(({ event }) => event.kind)).toEqual(Array.from({ length: 6 }, () => 'job'));
      }
    });

    it('widens the window by as much as late starts have grown the lead, so that a worker waits once for more jobs', async () => {
      const config = testConfig({
        quotas: [{ limit: 50, per: 'second' }],
        pacing: { batchWindowMs: 100, dispatchLeadMs: 0, maxDispatchLeadMs: 1_000 },
      });
      // The first worker starts 300 ms after its event was sent, too late for its slot: it gives its job back.
      const h = orchestratorHarness({ config, worker: firstStartsLate(300) });
      await sendMain(h.queues, 100);

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 4_000 }), START + 5_000);

      // Before the ledger sync takes the late start in, a batch spans under 100 ms; after it, under 100 ms more than
      // the lead: 300 ms × 1.25.
      const spans = h.workerEvents
        .map(({ event }) => jobsOf(event).map((job) => job.slotAt))
        .map((slots) => Math.max(...slots) - Math.min(...slots));
      const widened = spans.findIndex((span) => span >= 100);
      expect(widened).toBeGreaterThan(0);
      expect(spans.slice(0, widened).every((span) => span < 100)).toBe(true);
      expect(Math.max(...spans)).toBeGreaterThanOrEqual(375);
      expect(spans.every((span) => span < 475)).toBe(true);
    });

    it('dispatches on a lead grown past twice the flush interval: one flush reaches the next slot, not one per slot', async () => {
      // Flushes every 200 ms grant 400 ms of allowance; a late start grows the lead to its most, 1 s.
      const config = testConfig({
        quotas: [{ limit: 10, per: 'second' }],
        pacing: { batchWindowMs: 0, dispatchLeadMs: 0, maxDispatchLeadMs: 1_000 },
        orchestrator: { flushIntervalMs: 200 },
      });
      // The first worker starts 2 s after its event was sent, too late for its slot: it gives its job back.
      const h = orchestratorHarness({ config, worker: firstStartsLate(2_000) });
      // Each save takes 3 ms, as a write to the table does: the next head's slot, taken after it, lies 3 ms further on.
      let saves = 0;
      const counting = Object.assign(Object.create(h.stores.ledger) as MemoryLedgerStore, {
        saveLedger: async (
          ...args: Parameters<MemoryLedgerStore['saveLedger']>
        ): ReturnType<MemoryLedgerStore['saveLedger']> => {
          saves++;
          await h.clock.sleep(3);
          return h.stores.ledger.saveLedger(...args);
        },
      });
      await sendMain(h.queues, 20);

      await drive(
        h.clock,
        runOrchestrator({ ...h.deps, stores: { ...h.stores, ledger: counting } }, { deadline: START + 4_000 }),
        START + 5_000,
      );

      // Every job went (the late one twice), about one a 100 ms, with a save about every flush interval: a flush
      // whose allowance ended at the slot it was asked for would miss the next slot, taken a moment later, and flush
      // again for every slot, dispatching nothing.
      expect(dispatchedEvents(h.events).length).toBeGreaterThanOrEqual(21);
      expect(saves).toBeLessThan(40);
    });

    it('leaves a malformed message out of a batch: the batch ends before it, and it is dead-lettered', async () => {
      const h = fast(100);
      await sendMain(h.queues, 2);
      await sendJob(h.queues, 'main', '{not json');
      await sendMain(h.queues, 2);

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

      // No invocation reaches over it: each holds consecutive messages, all but the malformed one.
      const invocations = h.workerEvents.map(({ event }) => jobsOf(event).map((job) => Number(job.messageId.slice(2))));
      expect(invocations.flat()).toEqual([1, 2, 4, 5]);
      expect(invocations.every((ids) => ids.every((id, i) => i === 0 || id === (ids[i - 1] ?? 0) + 1))).toBe(true);
      expect(
        h.events.filter((e) => e.type === 'dead-lettered').map((e) => e.type === 'dead-lettered' && e.messageId),
      ).toEqual(['m-3']);
    });

    it('gives a whole batch its quota back when its invoke is throttled, and sends it again after the back-off', async () => {
      const h = fast(100);
      await sendMain(h.queues, 3);
      const invoke = h.invoker.invoke.bind(h.invoker);
      let throttled = 0;
      jest.spyOn(h.invoker, 'invoke').mockImplementation(async (event) => {
        if (event.kind === 'batch' && throttled++ === 0) throw new InvokeThrottledError('Rate Exceeded.');
        return invoke(event);
      });

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

      // The first receive takes one message (see above), the next two: their batch is throttled, then sent again.
      expect(h.workerEvents.map(({ event }) => jobsOf(event).map((job) => job.messageId))).toEqual([
        ['m-1'],
        ['m-2', 'm-3'],
      ]);
      expect(dispatchedEvents(h.events)).toHaveLength(3);
      expect(h.events.filter((e) => e.type === 'invoke-failed')).toHaveLength(1);
      // The throttled invoke at 20 ms, sent again after the 100 ms back-off.
      expect(h.workerEvents.map(({ at }) => at - START)).toEqual([0, 120]);
    });
  });

  it('with spreadLongTiers, spaces dispatches at the tightest tier, 300 per minute, one every 200 ms', async () => {
    const h = orchestratorHarness({
      config: testConfig({
        quotas: [
          { limit: 10, per: 'second' },
          { limit: 300, per: 'minute' },
        ],
        pacing: { spreadLongTiers: true },
      }),
    });
    await sendMain(h.queues, 8);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400, 600, 800, 1_000, 1_200, 1_400]);
  });

  it('starts from idle at the full rate, with no ramp', async () => {
    const h = orchestratorHarness({ config: testConfig({ pacing: { rampSeconds: 2, rampStartFraction: 0.5 } }) });
    await sendMain(h.queues, 4);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400, 600]);
  });

  it('ramps up from rampStartFraction of the rate after the circuit closed, even in a later run', async () => {
    const config = testConfig({ pacing: { rampSeconds: 2, rampStartFraction: 0.5 } });
    const h = orchestratorHarness({ config });
    // Opened long ago and closed by a health check an instant ago, in another run.
    await openCircuit(h.stores.circuit, config, START - 100_000);
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-sent', checkId: 'c1' },
      START - 1,
      circuitPolicyFrom(config.circuit),
    );
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'health-check-ok', checkId: 'c1' },
      START,
      circuitPolicyFrom(config.circuit),
    );
    await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
      state: { status: 'closed', closedAt: START },
    });
    await sendMain(h.queues, 4);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    const gaps = dispatchedEvents(h.events)
      .map((e, i, all) => e.at - (all[i - 1]?.at ?? e.at))
      .slice(1);
    // At half the rate an interval is 400 ms; it shrinks towards 200 ms as the ramp goes on.
    expect(gaps[0]).toBe(400);
    expect(gaps[1]).toBeLessThan(400);
    expect(gaps[2]).toBeLessThan(gaps[1]!);
  });

  it('saves the ledger at every flush and at exit', async () => {
    const config = testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 600, per: 'minute' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 20);
    const run = runOrchestrator(h.deps, { deadline: START + 2_500 });

    // At every instant the saved ledger holds at least every dispatch so far (the unused allowance included),
    // so an orchestrator killed at any point leaves its successor nothing to overshoot.
    for (let t = 50; t < 2_500; t += 50) {
      await h.clock.advanceTo(START + t);
      const dispatched = dispatchedEvents(h.events).length;
      await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'minute')).resolves.toBeGreaterThanOrEqual(
        dispatched,
      );
    }
    const summary = await drive(h.clock, run, START + 3_000);

    // At exit (2500) it holds every dispatch, including those after the last flush (2000).
    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([
      0, 200, 400, 600, 800, 1_003, 1_203, 1_403, 1_603, 1_803, 2_003, 2_203, 2_403,
    ]);
    expect(summary.dispatched).toBe(13);
    await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'minute')).resolves.toBe(13);
    const flushes = h.events.filter((e) => e.type === 'flushed').map((e) => e.at - START);
    expect(flushes[0]).toBe(0);
    expect(flushes[flushes.length - 1]).toBe(2_500);
  });

  it(`folds a backlog of settlements ${MAX_PENDING_SETTLEMENTS} per save, at most ten saves per flush`, async () => {
    const h = orchestratorHarness();
    const backlog = 10 * MAX_PENDING_SETTLEMENTS + 50;
    for (let i = 0; i < backlog; i++)
      await h.stores.ledger.addSettlements(LANE, {
        reservation: { at: START - 1_000 - i, costs: { cost: 1 }, windows: {} },
        actual: { cost: 2 },
      });
    const saves: number[] = [];
    const counting = Object.assign(Object.create(h.stores.ledger) as MemoryLedgerStore, {
      saveLedger: (...args: Parameters<MemoryLedgerStore['saveLedger']>) => (
        saves.push(args[3]?.length ?? 0),
        h.stores.ledger.saveLedger(...args)
      ),
    });

    await drive(
      h.clock,
      runOrchestrator({ ...h.deps, stores: { ...h.stores, ledger: counting } }, { deadline: START + 1_500 }),
      START + 2_000,
    );

    const flushes = h.events.flatMap((e) => (e.type === 'flushed' ? [[e.at - START, e.settlements]] : []));
    expect(flushes).toEqual([
      [0, 10 * MAX_PENDING_SETTLEMENTS],
      [1_000, 50],
      [1_500, 0],
    ]);
    expect(saves).toEqual([...Array<number>(10).fill(MAX_PENDING_SETTLEMENTS), 50, 0]);
    await expect(h.stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
  });

  it('leaves a successor nothing to overshoot when it is killed mid-invoke before a regular flush', async () => {
    const config = testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 4, per: 'day' },
      ],
    });
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const queues = new MemoryQueues({ clock });
    await sendMain(queues, 10);
    // Run 1 is killed (timeout, out of memory) during its 4th invoke, before its regular flush at 1000 ms.
    const first = orchestratorHarness({ config, clock, stores, queues, owner: 'orchestrator-1' });
    const invoked: WorkerEvent[] = [];
    const killed: Invoker = {
      invoke: async (event) => {
        invoked.push(event);
        if (invoked.length === 4) await new Promise<never>(() => {});
      },
    };
    void runOrchestrator({ ...first.deps, invoker: killed }, { deadline: START + 60_000 });
    await clock.advanceTo(START + 6_000); // its lease (5 s) has expired

    const second = orchestratorHarness({ config, clock, stores, queues, owner: 'orchestrator-2' });
    await drive(clock, runOrchestrator(second.deps, { deadline: START + 40_000 }), START + 41_000);

    expect(invoked).toHaveLength(4);
    expect(dispatchedEvents(second.events)).toHaveLength(0); // the day's 4 were held by run 1's allowance
  });

  it('leaves a successor the higher actual cost a worker settled when it is killed between reading settlements and saving', async () => {
    // A cost tier of 100 per minute; each job reserves 10, but the first one's call really cost 40 (+30).
    const tier = { limit: 100, per: 'minute', unit: 'cost' } as const;
    const config = testConfig({ quotas: [tier] });
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const queues = new MemoryQueues({ clock });
    for (let i = 1; i <= 12; i++) await sendJob(queues, 'main', { id: `j-${i}` }, { cost: 10 });
    const calls: Call[] = [];
    const worker = async (event: WorkerEvent): Promise<void> => {
      if (event.kind !== 'job') return;
      const actualCost = calls.length === 0 ? 40 : event.cost;
      calls.push({ at: clock.now(), costs: { cost: actualCost } });
      if (actualCost !== event.cost)
        await stores.ledger.addSettlements(event.lane, {
          reservation: event.reservation,
          actual: { cost: actualCost },
        });
      await queues.delete(event.queue, event.receiptHandle);
    };
    // Run 1 is killed (a Lambda timeout) during the first ledger save after the worker settled: the save never
    // returns, so whatever the run read of the settlements never reaches the saved ledger.
    const first = orchestratorHarness({ config, clock, stores, queues, worker, owner: 'orchestrator-1' });
    let killedAt: number | undefined;
    const killing = Object.assign(Object.create(stores.ledger) as MemoryLedgerStore, {
      saveLedger: async (
        ...args: Parameters<MemoryLedgerStore['saveLedger']>
      ): ReturnType<MemoryLedgerStore['saveLedger']> => {
        if (killedAt === undefined && calls.length === 0) return stores.ledger.saveLedger(...args);
        killedAt ??= clock.now();
        return new Promise<never>(() => {});
      },
    });
    void runOrchestrator({ ...first.deps, stores: { ...stores, ledger: killing } }, { deadline: START + 60_000 });
    await clock.advanceTo(START + 6_000); // its lease (5 s) has expired
    expect(killedAt).toBe(START + 1_000); // its first flush after the worker settled at 0
    expect(calls).toHaveLength(1);

    const second = orchestratorHarness({ config, clock, stores, queues, worker, owner: 'orchestrator-2' });
    await drive(clock, runOrchestrator(second.deps, { deadline: START + 70_000 }), START + 71_000);

    // The successor folded the +30 the dead run had read: no minute of the API's calls went past 100.
    expect(calls.length).toBeGreaterThan(6);
    expect(maxWindowUsage(calls, config.quotas[0]!)).toBe(100);
    await expect(stores.ledger.pendingSettlements(LANE)).resolves.toEqual([]);
    expect(second.events.flatMap((e) => (e.type === 'flushed' ? [e.settlements] : [])).reduce((a, b) => a + b, 0)).toBe(
      1,
    );
  });

  it('rehydrates the ledger in the next run and keeps the tier across the run boundary', async () => {
    // Bursts allowed: run 1 spends the whole minute's quota at once; only the ledger can hold run 2 back.
    const config = testConfig({ quotas: [{ limit: 3, per: 'minute' }], pacing: { burstFraction: 1 } });
    const clock = new FakeClock(START);
    const stores = memoryStores();
    const queues = new MemoryQueues({ clock });
    await sendMain(queues, 6);
    const first = orchestratorHarness({ config, clock, stores, queues, owner: 'orchestrator-1' });
    await drive(clock, runOrchestrator(first.deps, { deadline: START + 1_000 }), START + 2_000);
    expect(rel(dispatchedEvents(first.events).map((e) => e.at))).toEqual([0, 0, 0]);

    const second = orchestratorHarness({ config, clock, stores, queues, owner: 'orchestrator-2' });
    await drive(clock, runOrchestrator(second.deps, { deadline: START + 70_000 }), START + 71_000);

    // The ledger's 1/250-window buckets let the first three leave the window at 60 000 + 239 ms.
    const all = [...dispatchedEvents(first.events), ...dispatchedEvents(second.events)];
    expect(rel(dispatchedEvents(second.events).map((e) => e.at))).toEqual([60_239, 60_239, 60_239]);
    expect(maxWindowUsage(all, config.quotas[0]!)).toBe(3);
  });

  it('never dispatches a FIFO message while an earlier one of its group is in flight, retries included', async () => {
    const clock = new FakeClock(START);
    const api = new ScriptedApi(clock, 300);
    let a1Calls = 0;
    api.answer = (body) => {
      const { id } = JSON.parse(body) as { id: string };
      if (id === 'a1' && ++a1Calls === 1) return httpStatus(503);
      return httpStatus(200);
    };
    const h = orchestratorHarness({
      clock,
      worker: (event, harness) =>
        processWorkerEvent(event, {
          clock,
          stores: harness.stores,
          queues: harness.queues,
          api,
          config: harness.config,
          random: () => 0.5,
        }),
    });
    for (const [id, group] of [
      ['a1', 'g-a'],
      ['b1', 'g-b'],
      ['a2', 'g-a'],
      ['a3', 'g-a'],
      ['b2', 'g-b'],
    ] as const) {
      await sendJob(h.queues, 'fifo', { id }, { groupId: group });
    }
    const allDone = () => h.queues.depth('fifo') === 0 && h.invoker.idle();

    await drive(clock, runOrchestrator(h.deps, { deadline: START + 30_000, shouldStop: allDone }), START + 31_000);

    const calls = api.calls.map((c) => ({ id: (JSON.parse(c.body) as { id: string }).id, at: c.at - START }));
    const ofGroup = (prefix: string) => calls.filter((c) => c.id.startsWith(prefix));
    expect(ofGroup('a').map((c) => c.id)).toEqual(['a1', 'a1', 'a2', 'a3']);
    expect(ofGroup('b').map((c) => c.id)).toEqual(['b1', 'b2']);
    for (const group of [ofGroup('a'), ofGroup('b')]) {
      // Each call of a group starts only after the previous one (300 ms of API latency) has been answered.
      group.slice(1).forEach((call, i) => expect(call.at).toBeGreaterThanOrEqual(group[i]!.at + 300));
    }
    expect(h.queues.depth('fifo-dlq')).toBe(0);
    expect(
      h.workerEvents
        .filter(({ event }) => event.kind === 'job' && event.messageId === 'm-1')
        .map(({ event }) => event.kind === 'job' && event.attempt),
    ).toEqual([1, 2]);
  });

  describe('FIFO refills', () => {
    const fast = () => orchestratorHarness({ config: testConfig({ quotas: [{ limit: 50, per: 'second' }] }) });
    const fifoJobs = (h: ReturnType<typeof fast>) =>
      h.workerEvents.map(({ event }) => jobsOf(event).map((job) => (JSON.parse(job.body) as { id: string }).id));

    it('reads the first messages of several groups with one receive, and sends them together in batches', async () => {
      const h = fast();
      for (let i = 1; i <= 8; i++) await sendJob(h.queues, 'fifo', { id: `g${i}` }, { groupId: `g-${i}` });
      const receives = jest.spyOn(h.queues, 'receive');

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 2_000 }), START + 3_000);

      expect(fifoJobs(h).flat().sort()).toEqual(['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8']);
      expect(Math.max(...fifoJobs(h).map((jobs) => jobs.length))).toBeGreaterThan(1);
      await expect(firstFifoReceive(receives)).resolves.toHaveLength(8);
    });

    it("sends a group's messages received together in one batch, in order, each at least the chain gap after the one before", async () => {
      const h = fast();
      const ids = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'];
      for (const id of ids) await sendJob(h.queues, 'fifo', { id }, { groupId: 'g-a' });

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 5_000 }), START + 6_000);

      const invocations = fifoJobs(h);
      expect(invocations.flat()).toEqual(ids);
      expect(Math.max(...invocations.map((jobs) => jobs.length))).toBeGreaterThan(1);
      const jobs = h.workerEvents.flatMap(({ event }) => jobsOf(event));
      for (const event of h.workerEvents.map(({ event }) => jobsOf(event))) {
        event
          .slice(1)
          .forEach((job, i) => expect(job.slotAt - event[i]!.slotAt).toBeGreaterThanOrEqual(INITIAL_CHAIN_GAP_MS));
      }
      // A message left out of its group's batch is handed back (one more receive), and FIFO receives then take no
      // more than went together: none is handed back twice.
      expect(Math.max(...jobs.map((job) => job.attempt))).toBeLessThanOrEqual(2);
    });

    it("hands back a group's messages left out of its batch, and takes no more from a FIFO receive than went together", async () => {
      // No batches: each message goes alone.
      const h = orchestratorHarness({
        config: testConfig({ quotas: [{ limit: 50, per: 'second' }], pacing: { batchWindowMs: 0 } }),
      });
      for (const [id, group] of [
        ['a1', 'g-a'],
        ['a2', 'g-a'],
        ['a3', 'g-a'],
        ['b1', 'g-b'],
      ] as const)
        await sendJob(h.queues, 'fifo', { id }, { groupId: group });
      const receives = jest.spyOn(h.queues, 'receive');

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

      // SQS fills a receive from one group first: a1, a2 and a3 came together, with b1; the buffer takes a1 and b1
      // first. a1 goes alone: a2 and a3 are handed back.
      expect((await firstFifoReceive(receives)).map((m) => m.body)).toEqual([
        '{"id":"a1"}',
        '{"id":"a2"}',
        '{"id":"a3"}',
        '{"id":"b1"}',
      ]);
      const invocations = fifoJobs(h);
      expect(invocations.slice(0, 2)).toEqual([['a1'], ['b1']]);
      expect(invocations.flat().filter((id) => id.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
      const fifoReceives = receives.mock.calls.filter(([queue]) => queue === 'fifo').map(([, options]) => options.max);
      expect(fifoReceives.slice(1).every((max) => max === 1)).toBe(true);
      // a3 was received with a1 and handed back, then received again and dispatched: its attempt counts both receives.
      const a3 = h.workerEvents.flatMap(({ event }) => jobsOf(event)).find((job) => job.body === '{"id":"a3"}');
      expect(a3?.attempt).toBe(2);
    });

    it('keeps a deep group in order through the real worker when a call fails, and calls each message once it succeeds', async () => {
      const clock = new FakeClock(START);
      const api = new ScriptedApi(clock, 40);
      let a2Calls = 0;
      api.answer = (body) =>
        (JSON.parse(body) as { id: string }).id === 'a2' && ++a2Calls === 1 ? httpStatus(503) : httpStatus(200);
      const h = orchestratorHarness({
        clock,
        config: testConfig({ quotas: [{ limit: 50, per: 'second' }] }),
        worker: (event, harness) =>
          processWorkerEvent(event, {
            clock,
            stores: harness.stores,
            queues: harness.queues,
            api,
            config: harness.config,
            random: () => 0.5,
          }),
      });
      const ids = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'];
      for (const id of ids) await sendJob(h.queues, 'fifo', { id }, { groupId: 'g-a' });
      const allDone = () => h.queues.depth('fifo') === 0 && h.invoker.idle();

      await drive(clock, runOrchestrator(h.deps, { deadline: START + 20_000, shouldStop: allDone }), START + 21_000);

      const calls = api.calls.map((c) => ({ id: (JSON.parse(c.body) as { id: string }).id, at: c.at - START }));
      expect(calls.map((c) => c.id)).toEqual(['a1', 'a2', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']);
      calls.slice(1).forEach((call, i) => expect(call.at).toBeGreaterThanOrEqual(calls[i]!.at + 40));
      expect(h.workerEvents.some(({ event }) => jobsOf(event).length > 1)).toBe(true);
      expect(h.queues.depth('fifo-dlq')).toBe(0);
    });
  });

  it("long-polls the FIFO queue while it holds the work, so that a group's next message goes once the one before is deleted", async () => {
    const h = orchestratorHarness({
      // No batches, so no group goes together in one.
      config: testConfig({ quotas: [{ limit: 50, per: 'second' }], pacing: { batchWindowMs: 0 } }),
      // Each worker takes 300 ms (its call), then deletes its message.
      worker: async (event, harness) => {
        await harness.clock.sleep(300);
        for (const job of jobsOf(event)) await harness.queues.delete(job.queue, job.receiptHandle);
      },
    });
    for (const id of ['a1', 'a2', 'a3']) await sendJob(h.queues, 'fifo', { id }, { groupId: 'g-a' });
    const receives = jest.spyOn(h.queues, 'receive');

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    // Each message is dispatched right after the one before is deleted, not after a 1 s poll of the main queue.
    expect(h.workerEvents.map(({ at }) => at - START)).toEqual([0, 300, 600]);
    expect(
      receives.mock.calls.filter(([queue, options]) => queue === 'fifo' && options.waitMs > 0).length,
    ).toBeGreaterThanOrEqual(2);
  });

  /** What the first receive from the FIFO queue that `receives` watched returned. */
  function firstFifoReceive(receives: jest.SpiedFunction<MemoryQueues['receive']>): Promise<ReceivedMessage[]> {
    const i = receives.mock.calls.findIndex(([queue]) => queue === 'fifo');
    const result = receives.mock.results[i];
    if (result === undefined) throw new Error('no receive from the FIFO queue');
    return result.value as Promise<ReceivedMessage[]>;
  }

  it('hands undispatched buffered messages back to their queue at exit', async () => {
    const h = orchestratorHarness({ worker: async () => undefined });
    await sendMain(h.queues, 10);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 500 }), START + 1_000);

    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([0, 200, 400]);
    const messages = h.queues.messages('main');
    expect(messages.filter((m) => m.inFlight).map((m) => m.messageId)).toEqual(['m-1', 'm-2', 'm-3']);
    expect(messages.filter((m) => !m.inFlight)).toHaveLength(7);
  });

  it("exits cleanly, saving the ledger and releasing the lease, when the day's quota is spent, and leaves the rest unreceived", async () => {
    // The day's quota is spent after two: a receive takes no more than two, and the third is never received.
    const config = testConfig({
      quotas: [
        { limit: 5, per: 'second' },
        { limit: 2, per: 'day' },
      ],
    });
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 3);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 40_000 }), START + 41_000);

    expect(summary).toEqual({ lease: 'acquired', dispatched: 2, deadLettered: 0, healthChecks: 0, invokeFailures: 0 });
    expect(h.queues.messages('main')).toMatchObject([{ messageId: 'm-3', receiveCount: 0, inFlight: false }]);
    await expect(storedUsage(h.stores.ledger, config, h.clock.now(), 'day')).resolves.toBe(2);
    await expect(h.stores.lease.acquireLease(LANE, 'orchestrator-2', h.clock.now(), 5_000)).resolves.not.toBeNull();
  });

  it('receives a message only once its slot is within what its visibility covers', async () => {
    // One per minute: the second message waits 60 s for its slot, longer than its 30 s visibility allows.
    const config = testConfig({ quotas: [{ limit: 1, per: 'minute' }] });
    const h = orchestratorHarness({ config });
    await sendMain(h.queues, 2);

    const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 70_000 }), START + 71_000);

    expect(summary).toMatchObject({ dispatched: 2 });
    const jobs = h.workerEvents.map(
      ({ at, event }) => event.kind === 'job' && [event.messageId, event.receiptHandle, at - START],
    );
    // m-2 is received (once) only when its slot is within what its visibility covers: 25 s before it.
    expect(jobs).toEqual([
      ['m-1', 'r-1', 0],
      ['m-2', 'r-2', 60_239],
    ]);
    expect(h.queues.depth('main')).toBe(0);
  });

  describe('with a quota exhausted for hours', () => {
    const DAY_MS = 86_400_000;

    it('receives nothing while a day quota is spent, so a FIFO message waiting through several runs keeps its attempts', async () => {
      const config = testConfig({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 1, per: 'day' },
        ],
      });
      const h = orchestratorHarness({ config });
      await sendJob(h.queues, 'fifo', { id: 'f-1' }, { groupId: 'g' });
      await sendJob(h.queues, 'fifo', { id: 'f-2' }, { groupId: 'g' });
      const runAt = async (at: number, owner: string) => {
        await h.clock.advanceTo(at);
        const run = orchestratorHarness({ clock: h.clock, stores: h.stores, queues: h.queues, config, owner });
        await drive(h.clock, runOrchestrator(run.deps, { deadline: at + 60_000 }), at + 61_000);
        return run;
      };

      const first = await runAt(START, 'orchestrator-1');
      const receives = h.queues.stats.receive;
      const waiting = [];
      for (const hours of [1, 2, 12, 23])
        waiting.push(await runAt(START + hours * 3_600_000, `orchestrator-${hours}h`));
      const next = await runAt(START + DAY_MS, 'orchestrator-next-day');

      expect(first.workerEvents.map(({ event }) => event.kind === 'job' && [event.body, event.attempt])).toEqual([
        ['{"id":"f-1"}', 1],
      ]);
      expect(first.events).toContainEqual({
        type: 'quota-exhausted',
        at: expect.any(Number),
        tier: '1/day',
        kind: 'calendar',
        until: START + DAY_MS,
      });
      for (const run of waiting) {
        expect(run.events.filter((e) => e.type === 'quota-exhausted')).toEqual([
          { type: 'quota-exhausted', at: expect.any(Number), tier: '1/day', kind: 'calendar', until: START + DAY_MS },
        ]);
        expect(run.workerEvents).toEqual([]);
      }
      expect(h.queues.stats.receive).toBeGreaterThan(receives); // the next day's run only
      expect(next.workerEvents.map(({ event }) => event.kind === 'job' && [event.body, event.attempt])).toEqual([
        ['{"id":"f-2"}', 1],
      ]);
    });

    it('receives nothing through a 429 whose Retry-After is a day', async () => {
      const h = orchestratorHarness();
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'rate-limited', retryAt: START + DAY_MS },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      await sendMain(h.queues, 2);

      const summary = await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 60_000 }), START + 61_000);

      expect(summary).toMatchObject({ dispatched: 0 });
      expect(h.queues.stats.receive).toBe(0);
      expect(h.queues.messages('main').map((m) => m.receiveCount)).toEqual([0, 0]);
      expect(h.events.filter((e) => e.type === 'quota-exhausted')).toEqual([
        { type: 'quota-exhausted', at: START, tier: '429', kind: 'pause', until: START + DAY_MS },
      ]);
    });

    it('hides a costly message the rest of the day cannot hold until the window ends, and sends the cheaper ones', async () => {
      const config = testConfig({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 10, per: 'day', unit: 'cost' },
        ],
      });
      const h = orchestratorHarness({ config });
      await sendJob(h.queues, 'main', { id: 'j-1' }, { cost: 8 });
      await sendJob(h.queues, 'main', { id: 'j-2' }, { cost: 5 });
      await sendJob(h.queues, 'main', { id: 'j-3' }, { cost: 1 });

      await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 60_000 }), START + 61_000);

      expect(dispatchedEvents(h.events).map((e) => e.costs)).toEqual([{ cost: 8 }, { cost: 1 }]);
      expect(h.events).toContainEqual({
        type: 'message-held',
        at: START,
        messageId: 'm-2',
        queue: 'main',
        costs: { cost: 5 },
        tier: '10 cost/day',
        until: START + DAY_MS,
      });
      // SQS keeps a message hidden at most 12 hours from its receive.
      expect(h.queues.messages('main')).toMatchObject([
        { messageId: 'm-2', receiveCount: 1, visibleAt: START + 43_200_000 - 60_000 },
      ]);
    });
  });

  it("holds dispatch until a 429's pause is over", async () => {
    const h = orchestratorHarness();
    await applyCircuitEvent(
      h.stores.circuit,
      LANE,
      { type: 'rate-limited', retryAt: START + 1_500 },
      START,
      circuitPolicyFrom(h.config.circuit),
    );
    await sendMain(h.queues, 2);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 3_000 }), START + 4_000);

    expect(rel(dispatchedEvents(h.events).map((e) => e.at))).toEqual([1_500, 1_700]);
  });
});
