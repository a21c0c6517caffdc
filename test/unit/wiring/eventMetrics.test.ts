import { EmfMetrics } from '../../../lib/adapters/metrics/emfMetrics';
import { METRICS, METRICS_PUBLISH_INTERVAL_MS } from '../../../lib/adapters/metrics/serviceMetrics';
import { OrchestratorMetrics, WorkerMetrics } from '../../../lib/wiring/eventMetrics';
import { captureStdout } from '../../helpers/emf';
import { START } from '../../helpers/serviceFixtures';

/** A deployment's metrics: every one carries its service, stage and lane. */
const SCOPE = { service: 'quota-orchestrator', stage: 'prod', lane: 'sms' };

afterEach(() => jest.restoreAllMocks());

describe('OrchestratorMetrics', () => {
  describe('observe', () => {
    it(`publishes once ${METRICS_PUBLISH_INTERVAL_MS} ms of event time have passed since the last publish, with the heartbeat`, () => {
      const stdout = captureStdout();
      const metrics = new OrchestratorMetrics(new EmfMetrics(), SCOPE, START);

      metrics.observe({
        type: 'flushed',
        at: START + METRICS_PUBLISH_INTERVAL_MS - 1,
        settlements: 0,
        handedBack: {},
        usage: [],
      });
      expect(stdout.emf()).toEqual([]);
      metrics.observe({
        type: 'flushed',
        at: START + METRICS_PUBLISH_INTERVAL_MS,
        settlements: 0,
        handedBack: {},
        usage: [],
      });

      expect(stdout.metric(METRICS.heartbeat)).toEqual([{ unit: 'Count', dimensions: SCOPE, value: 1 }]);
    });

    it('holds CalendarQuotaExhausted at 1 from a day or month exhaustion until the quota is available again', () => {
      const stdout = captureStdout();
      const metrics = new OrchestratorMetrics(new EmfMetrics(), SCOPE, START);
      metrics.observe({
        type: 'flushed',
        at: START,
        settlements: 0,
        handedBack: {},
        usage: [{ tier: '1/day', kind: 'calendar', used: 1, limit: 1 }],
      });
      metrics.observe({ type: 'quota-exhausted', at: START, tier: '1/day', kind: 'calendar', until: START + 20_000 });
      metrics.end(START + 1);
      metrics.observe({ type: 'quota-available', at: START + 20_000, tier: '1/day', exhaustedMs: 20_000 });
      metrics.end(START + 20_001);

      expect(stdout.metric(METRICS.calendarQuotaExhausted).map((m) => m.value)).toEqual([1, 0]);
      expect(stdout.metric(METRICS.quotaExhaustedFor)).toEqual([
        { unit: 'Milliseconds', dimensions: { ...SCOPE, tier: '1/day' }, value: 20_000 },
      ]);
      expect(stdout.metric(METRICS.tierUsageRatio)).toEqual([
        { unit: 'None', dimensions: { ...SCOPE, tier: '1/day' }, value: 1 },
      ]);
    });

    it('does not count a 429 pause as a calendar exhaustion', () => {
      const stdout = captureStdout();
      const metrics = new OrchestratorMetrics(new EmfMetrics(), SCOPE, START);
      metrics.observe({ type: 'quota-exhausted', at: START, tier: '429', kind: 'pause', until: START + 60_000 });
      metrics.end(START);

      expect(stdout.metric(METRICS.calendarQuotaExhausted).map((m) => m.value)).toEqual([0]);
    });
  });
});

describe('WorkerMetrics', () => {
  describe('observe', () => {
    it('counts an undelivered result', () => {
      const stdout = captureStdout();
      const metrics = new WorkerMetrics(new EmfMetrics(), SCOPE);
      metrics.observe({
        type: 'result-undelivered',
        lane: 'sms',
        at: START,
        reason: 'AccessDenied',
        messageId: 'm',
        dispatchId: 'd',
        idempotencyKey: 'k',
      });
      metrics.publish();

      expect(stdout.metric(METRICS.resultsUndelivered)).toEqual([{ unit: 'Count', dimensions: SCOPE, value: 1 }]);
    });

    it('counts nothing for an API caller that could not get ready: its job outcome counts it', () => {
      const stdout = captureStdout();
      const metrics = new WorkerMetrics(new EmfMetrics(), SCOPE);
      metrics.observe({ type: 'caller-not-ready', lane: 'sms', at: START, reason: 'no authorization', checkId: 'c-1' });
      metrics.publish();

      expect(stdout.metric(METRICS.resultsUndelivered)).toEqual([]);
    });
  });
});
