import {
  EXIT_RESERVE_MS,
  makeHandler,
  TICK_MARGIN_MS,
  type OrchestratorContext,
} from '../../../functions/orchestrator';
import type { OrchestratorBaseDeps } from '../../../lib/wiring/orchestratorDeps';
import type { EmfLine } from '../../helpers/emf';
import { recordingTelemetry, TEST_DEPLOYMENT } from '../../helpers/recordingTelemetry';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import { applyCircuitEvent } from '../../../lib/services/circuitUpdates';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryCircuitStore, memoryStores } from '../../../tools/memory/MemoryStores';
import type { CircuitJSON } from '../../../lib/domain/breaker/circuitJSON';
import {
  drive,
  LANE,
  openCircuit,
  orchestratorHarness,
  rel,
  sendJob,
  START,
  testConfig,
  type OrchestratorHarness,
} from '../../helpers/serviceFixtures';

/** A circuit store whose reads are throttled (past the SDK's retries) from `from` until `to`. */
class ThrottledCircuitStore extends MemoryCircuitStore {
  constructor(
    private readonly clock: FakeClock,
    private readonly from: number,
    private readonly to: number,
  ) {
    super();
  }

  override async loadCircuit(lane: string): Promise<CircuitJSON | undefined> {
    const now = this.clock.now();
    if (now >= this.from && now < this.to)
      throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
        name: 'ThrottlingException',
      });
    return super.loadCircuit(lane);
  }
}

/**
 * The handler on a harness's in-memory ports, with everything it logs, the Lambda contexts it was given, and the EMF
 * lines its metrics write to stdout.
 */
function handlerOn(h: OrchestratorHarness) {
  const { clock, stores, queues, invoker, config, random, newId } = h.deps;
  const base: OrchestratorBaseDeps = { clock, stores, queues, invoker, config, random, newId };
  const { telemetry, ...recorded } = recordingTelemetry();
  return { handler: makeHandler(base, telemetry), ...recorded };
}

afterEach(() => jest.restoreAllMocks());

/** A Lambda context with `remainingMs` left at the start of the run (the handler reads it once). */
function context(awsRequestId: string, remainingMs: number): OrchestratorContext {
  return { awsRequestId, getRemainingTimeInMillis: () => remainingMs };
}

/** An EventBridge scheduled event for `rate(1 minute)`, fired at `at`. */
function scheduledEvent(at: number) {
  return {
    version: '0',
    id: 'e-1',
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    time: new Date(at).toISOString(),
    detail: {},
  };
}

/** The harness with its clock `startMs` after START (an invocation's start-up latency after the tick). */
function harnessStartingAt(startMs: number): OrchestratorHarness {
  return orchestratorHarness({ clock: new FakeClock(START + startMs) });
}

describe('orchestrator handler', () => {
  describe('run deadline', () => {
    it('ends a scheduled run just before the last tick that fits in the remaining time', async () => {
      // Tick at START, started 2 s late with 300 s left: the hard end is 297 s, the last tick before it is at 240 s.
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);

      const summary = await drive(h.clock, handler(scheduledEvent(START), context('req-1', 300_000)), START + 400_000);

      expect(summary.lease).toBe('acquired');
      expect(h.clock.now() - START).toBe(240_000 - TICK_MARGIN_MS);
    });

    it('leaves the lease free for the run of the next tick', async () => {
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);

      await drive(h.clock, handler(scheduledEvent(START), context('req-1', 300_000)), START + 400_000);

      await expect(
        h.stores.lease.acquireLease(LANE, 'orchestrator-next', START + 240_000, 5_000),
      ).resolves.not.toBeNull();
    });

    it('keeps dispatching until its deadline', async () => {
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);
      const run = handler(scheduledEvent(START), context('req-1', 300_000));
      await h.clock.advanceTo(START + 200_000);
      await sendJob(h.queues, 'main', { id: 'late' });

      const summary = await drive(h.clock, run, START + 400_000);

      expect(summary.dispatched).toBe(1);
      expect(rel(h.workerEvents.map((w) => w.at))).toEqual([200_000]);
    });

    it('runs a manual invoke (no time) until the remaining time less the exit reserve', async () => {
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 300_000)), START + 400_000);

      expect(h.clock.now() - START).toBe(2_000 + 300_000 - EXIT_RESERVE_MS);
    });

    it.each([
      ['an unparseable time', { time: 'yesterday' }],
      ['a time that is not a string', { time: START }],
      ['no event at all', null],
    ])('treats an event with %s as a manual invoke', async (_, event) => {
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);

      await drive(h.clock, handler(event, context('req-1', 300_000)), START + 400_000);

      expect(h.clock.now() - START).toBe(297_000);
    });

    it('runs a scheduled invoke with no tick before its hard end until the hard end', async () => {
      const h = harnessStartingAt(2_000);
      const { handler } = handlerOn(h);

      await drive(h.clock, handler(scheduledEvent(START), context('req-1', 30_000)), START + 100_000);

      expect(h.clock.now() - START).toBe(2_000 + 30_000 - EXIT_RESERVE_MS);
    });
  });

  describe('lease', () => {
    it('returns held-elsewhere, doing nothing, when another request’s run holds the lane', async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'main', { id: 'a' });
      const { handler, lines } = handlerOn(h);
      const first = handler(scheduledEvent(START), context('req-1', 30_000));

      const second = await handler(scheduledEvent(START), context('req-2', 30_000));
      const summary = await drive(h.clock, first, START + 60_000);

      expect(second).toEqual({
        lease: 'held-elsewhere',
        dispatched: 0,
        deadLettered: 0,
        healthChecks: 0,
        invokeFailures: 0,
      });
      expect(summary).toMatchObject({ lease: 'acquired', dispatched: 1 });
      expect(h.invoker.invocations).toBe(1);
      expect(lines.map((l) => l.fields?.owner)).toEqual(['orchestrator-req-2', 'orchestrator-req-1']);
    });
  });

  describe('logging', () => {
    it('logs an exhausted quota as a warn line with its tier and until', async () => {
      const h = harnessStartingAt(0);
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'rate-limited', retryAt: START + 86_400_000 },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      const { handler, lines } = handlerOn(h);

      await drive(h.clock, handler(scheduledEvent(START), context('req-1', 60_000)), START + 120_000);

      expect(lines.filter((l) => l.fields?.type === 'quota-exhausted')).toEqual([
        {
          level: 'warn',
          message: 'quota 429 exhausted until 2026-01-06T00:00:00.000Z; not receiving until then',
          fields: { type: 'quota-exhausted', at: START, tier: '429', kind: 'pause', until: START + 86_400_000 },
        },
      ]);
    });

    it('adds each invocation’s Lambda context to the log', async () => {
      const h = harnessStartingAt(0);
      const { handler, contexts } = handlerOn(h);
      const lambdaContext = context('req-9', 10_000);

      await drive(h.clock, handler({}, lambdaContext), START + 20_000);

      expect(contexts).toEqual([lambdaContext]);
    });

    it('logs the circuit transition it writes, and a change of status it reads, but not its first read', async () => {
      const h = orchestratorHarness({
        worker: async (event, harness) => {
          if (event.kind === 'health-check')
            await applyCircuitEvent(
              harness.stores.circuit,
              LANE,
              { type: 'health-check-ok', checkId: event.checkId },
              harness.clock.now(),
              circuitPolicyFrom(harness.config.circuit),
            );
        },
      });
      await openCircuit(h.stores.circuit, h.config, START);
      const { handler, lines } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(lines.filter((l) => /^circuit/.test(l.message)).map((l) => [l.level, l.message])).toEqual([
        ['info', 'circuit open -> half-open: health check id-1 sent'],
        ['info', 'circuit read closed; dispatching'],
      ]);
    });
  });

  describe('a lane of several', () => {
    /** The handler as a deployment of several lanes builds each lane's: it first asks whether the queues hold work. */
    function laneHandlerOn(h: OrchestratorHarness) {
      const { clock, stores, queues, invoker, config, random, newId } = h.deps;
      const { telemetry, ...recorded } = recordingTelemetry();
      const handler = makeHandler(
        { clock, stores, queues, invoker, config, random, newId },
        telemetry,
        undefined,
        true,
      );
      return { handler, ...recorded };
    }

    it('takes no lease and reads no state when its queues are empty, and still publishes its heartbeat', async () => {
      const h = harnessStartingAt(0);
      const { handler, stdout } = laneHandlerOn(h);

      const summary = await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(summary).toEqual({ lease: 'idle', dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 });
      expect(await h.stores.ledger.loadLedger(LANE)).toBeUndefined();
      expect(stdout.metric('OrchestratorHeartbeat').map((m) => m.value)).toEqual([1]);
    });

    it('runs as a one-lane run does once a queue holds a job, even one a worker still has in flight', async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'requeue', { id: 'a' });
      await h.queues.receive('requeue', { max: 1, visibilityMs: 60_000, waitMs: 0 });
      const { handler } = laneHandlerOn(h);

      const summary = await drive(h.clock, handler({}, context('req-1', 100_000)), START + 200_000);

      expect(summary.lease).toBe('acquired');
      expect(await h.stores.ledger.loadLedger(LANE)).toBeDefined();
    });
  });

  describe('metrics', () => {
    it('publishes the dispatches, their lag, the tiers’ usage, the circuit gauge and the heartbeat as EMF lines on stdout at the end of a run', async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const { handler, stdout } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      const byDimensions = (line: EmfLine) => JSON.stringify(line._aws.CloudWatchMetrics[0]?.Dimensions);
      const lines = stdout.emf().sort((a, b) => byDimensions(a).localeCompare(byDimensions(b)));
      expect(lines).toEqual([
        {
          _aws: {
            Timestamp: expect.any(Number),
            CloudWatchMetrics: [
              {
                Namespace: 'QuotaOrchestrator',
                Dimensions: [['service', 'stage', 'lane', 'tier']],
                Metrics: [{ Name: 'TierUsageRatio', Unit: 'None' }],
              },
            ],
          },
          ...TEST_DEPLOYMENT,
          lane: LANE,
          tier: '5/second',
          TierUsageRatio: expect.arrayContaining([0, 0.2]),
        },
        {
          _aws: {
            Timestamp: expect.any(Number),
            CloudWatchMetrics: [
              {
                Namespace: 'QuotaOrchestrator',
                Dimensions: [['service', 'stage', 'lane']],
                Metrics: [
                  { Name: 'JobsDispatched', Unit: 'Count' },
                  { Name: 'DispatchLag', Unit: 'Milliseconds' },
                  { Name: 'OrchestratorHeartbeat', Unit: 'Count' },
                  { Name: 'CircuitOpen', Unit: 'None' },
                  { Name: 'CalendarQuotaExhausted', Unit: 'None' },
                ],
              },
            ],
          },
          ...TEST_DEPLOYMENT,
          lane: LANE,
          JobsDispatched: 2,
          DispatchLag: [0, 200],
          OrchestratorHeartbeat: 1,
          CircuitOpen: 0,
          CalendarQuotaExhausted: 0,
        },
      ]);
    });

    it('publishes at least every 30 s while a run lasts, each time with a heartbeat', async () => {
      const h = harnessStartingAt(0);
      const { handler, stdout } = handlerOn(h);
      const run = handler({}, context('req-1', 125_000));

      await h.clock.advanceTo(START + 100_000);
      expect(stdout.metric('OrchestratorHeartbeat').map((m) => m.value)).toEqual([1, 1, 1]);
      await drive(h.clock, run, START + 200_000);

      expect(stdout.metric('OrchestratorHeartbeat')).toHaveLength(5);
      expect(stdout.metric('OrchestratorHeartbeat')[0]).toEqual({
        unit: 'Count',
        dimensions: { ...TEST_DEPLOYMENT, lane: LANE },
        value: 1,
      });
    });

    it('publishes a heartbeat, and no gauge it does not know, from a run that found the lease held elsewhere', async () => {
      const h = harnessStartingAt(0);
      await h.stores.lease.acquireLease(LANE, 'orchestrator-other', START, 60_000);
      const { handler, stdout } = handlerOn(h);

      await expect(handler({}, context('req-2', 10_000))).resolves.toMatchObject({ lease: 'held-elsewhere' });

      expect(stdout.emf()).toEqual([
        {
          _aws: {
            Timestamp: expect.any(Number),
            CloudWatchMetrics: [
              {
                Namespace: 'QuotaOrchestrator',
                Dimensions: [['service', 'stage', 'lane']],
                Metrics: [{ Name: 'OrchestratorHeartbeat', Unit: 'Count' }],
              },
            ],
          },
          ...TEST_DEPLOYMENT,
          lane: LANE,
          OrchestratorHeartbeat: 1,
        },
      ]);
    });

    it('publishes CircuitOpen 1 while the circuit is open, and counts the transition it writes by the state it went to', async () => {
      const h = harnessStartingAt(0);
      await openCircuit(h.stores.circuit, h.config, START);
      const { handler, stdout } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(stdout.metric('CircuitOpen').map((m) => m.value)).toEqual([1]);
      expect(stdout.metric('CircuitTransitions')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, to: 'half-open' }, value: 1 },
      ]);
    });

    it('counts a message it dead-letters by the class of its reason', async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'main', 'not json');
      const { handler, stdout } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(stdout.metric('DeadLetters')).toEqual([
        { unit: 'Count', dimensions: { ...TEST_DEPLOYMENT, lane: LANE, reason: 'malformed' }, value: 1 },
      ]);
    });

    it('publishes CalendarQuotaExhausted 1 and how long the quota stays exhausted while a day tier is spent', async () => {
      const config = testConfig({
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 1, per: 'day' },
        ],
      });
      const h = orchestratorHarness({ config });
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const { handler, stdout } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(stdout.metric('CalendarQuotaExhausted').map((m) => m.value)).toEqual([1]);
      expect(stdout.metric('QuotaExhaustedForMs')).toEqual([
        {
          unit: 'Milliseconds',
          dimensions: { ...TEST_DEPLOYMENT, lane: LANE, tier: '1/day' },
          value: expect.any(Number),
        },
      ]);
      expect(
        stdout
          .metric('TierUsageRatio')
          .filter((m) => m.dimensions.tier === '1/day')
          .map((m) => (m.value as number[]).at(-1)),
      ).toEqual([1]);
    });

    it("logs 'orchestrator run ended' with the owner from awsRequestId, the lane and the run's summary", async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      const { handler, lines } = handlerOn(h);

      const summary = await drive(h.clock, handler({}, context('7f3c-req', 10_000)), START + 20_000);

      expect(lines).toEqual([
        {
          level: 'info',
          message: 'orchestrator run ended',
          fields: {
            owner: 'orchestrator-7f3c-req',
            lane: 'default',
            lease: 'acquired',
            dispatched: 2,
            deadLettered: 0,
            healthChecks: 0,
            invokeFailures: 0,
          },
        },
      ]);
      expect(summary).toEqual({
        lease: 'acquired',
        dispatched: 2,
        deadLettered: 0,
        healthChecks: 0,
        invokeFailures: 0,
      });
    });

    it('logs a dead-lettered message and a failed invoke as warnings, but not each dispatch', async () => {
      const h = harnessStartingAt(0);
      await sendJob(h.queues, 'main', 'not json');
      await sendJob(h.queues, 'main', { id: 'b' });
      h.invoker.failNext(1, 'failed');
      const { handler, lines } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(lines.map((l) => [l.level, l.message])).toEqual([
        ['warn', 'dead-lettered a message that can never be dispatched'],
        ['warn', 'worker invoke failed; backing off'],
        ['info', 'orchestrator run ended'],
      ]);
      expect(lines[0]?.fields).toMatchObject({
        type: 'dead-lettered',
        messageId: 'm-1',
        reason: expect.stringMatching(/^malformed: body is not JSON/),
      });
      expect(lines[2]?.fields).toMatchObject({ dispatched: 1, deadLettered: 1, invokeFailures: 1 });
    });

    it('logs failed state-store calls as warnings and the recovery as info', async () => {
      const clock = new FakeClock(START);
      const h = orchestratorHarness({
        clock,
        stores: { ...memoryStores(), circuit: new ThrottledCircuitStore(clock, START + 500, START + 700) },
      });
      await sendJob(h.queues, 'main', { id: 'a' });
      // The circuit is read before a dispatch when its last read is older than 250 ms: the read before 'b' goes, at
      // 500, fails.
      void clock.sleep(500).then(() => sendJob(h.queues, 'main', { id: 'b' }));
      const { handler, lines } = handlerOn(h);

      await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(lines.map((l) => [l.level, l.message])).toEqual([
        ['warn', 'state store call failed; backing off'],
        ['info', 'state store available again'],
        ['info', 'orchestrator run ended'],
      ]);
      expect(lines[0]?.fields).toMatchObject({
        type: 'state-unavailable',
        at: START + 500,
        operation: 'loadCircuit',
        error: expect.stringMatching(/ThrottlingException/),
      });
      expect(lines[1]?.fields).toMatchObject({ type: 'state-recovered', at: START + 700, unavailableMs: 200 });
      expect(lines[2]?.fields).toMatchObject({ lease: 'acquired', dispatched: 2 });
    });

    it("logs a run that could not start, the store failing all along, as a warning with lease 'unavailable'", async () => {
      const clock = new FakeClock(START);
      const h = orchestratorHarness({
        clock,
        stores: { ...memoryStores(), circuit: new ThrottledCircuitStore(clock, START, START + 60_000) },
      });
      const { handler, lines } = handlerOn(h);

      const summary = await drive(h.clock, handler({}, context('req-1', 10_000)), START + 20_000);

      expect(summary).toEqual({
        lease: 'unavailable',
        dispatched: 0,
        deadLettered: 0,
        healthChecks: 0,
        invokeFailures: 0,
      });
      expect(lines[lines.length - 1]).toMatchObject({
        level: 'warn',
        message: 'orchestrator run ended',
        fields: { lease: 'unavailable' },
      });
    });
  });
});
