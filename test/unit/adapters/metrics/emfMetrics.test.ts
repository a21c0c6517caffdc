import { EmfMetrics, MAX_VALUES_PER_LINE, METRIC_NAMESPACE } from '../../../../lib/adapters/metrics/emfMetrics';
import { captureStdout } from '../../../helpers/emf';

afterEach(() => jest.restoreAllMocks());

describe('EmfMetrics', () => {
  describe('publish', () => {
    it('writes one EMF line per set of dimensions, with each count summed and each observation listed', () => {
      const stdout = captureStdout();
      const metrics = new EmfMetrics();
      metrics.count('Calls', { lane: 'sms', outcome: 'success' });
      metrics.count('Calls', { outcome: 'success', lane: 'sms' }, 2);
      metrics.count('Calls', { lane: 'sms', outcome: 'transient' });
      metrics.record('Lag', 'Milliseconds', { lane: 'sms' }, 40);
      metrics.record('Lag', 'Milliseconds', { lane: 'sms' }, 10);
      metrics.count('Dispatched', { lane: 'sms' }, 5);

      metrics.publish();

      const line = (
        dimensions: string[],
        definitions: { Name: string; Unit: string }[],
        values: Record<string, unknown>,
      ) => ({
        _aws: {
          Timestamp: expect.any(Number),
          CloudWatchMetrics: [{ Namespace: METRIC_NAMESPACE, Dimensions: [dimensions], Metrics: definitions }],
        },
        ...values,
      });
      expect(stdout.emf()).toEqual([
        line(['lane', 'outcome'], [{ Name: 'Calls', Unit: 'Count' }], { lane: 'sms', outcome: 'success', Calls: 3 }),
        line(['lane', 'outcome'], [{ Name: 'Calls', Unit: 'Count' }], { lane: 'sms', outcome: 'transient', Calls: 1 }),
        line(
          ['lane'],
          [
            { Name: 'Lag', Unit: 'Milliseconds' },
            { Name: 'Dispatched', Unit: 'Count' },
          ],
          { lane: 'sms', Lag: [40, 10], Dispatched: 5 },
        ),
      ]);
    });

    it('adds no service dimension of its own, and the namespace is QuotaOrchestrator', () => {
      const stdout = captureStdout();
      const metrics = new EmfMetrics();
      metrics.count('Beat', { lane: 'a' });

      metrics.publish();

      expect(METRIC_NAMESPACE).toBe('QuotaOrchestrator');
      expect(stdout.emf()[0]).not.toHaveProperty('service');
      expect(stdout.emf()[0]?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['lane']]);
    });

    it('forgets what it published, and writes nothing when nothing was recorded', () => {
      const stdout = captureStdout();
      const metrics = new EmfMetrics();
      metrics.count('Beat', { lane: 'a' });
      metrics.publish();

      metrics.publish();

      expect(stdout.emf()).toHaveLength(1);
    });

    it(`stands ${MAX_VALUES_PER_LINE} evenly spaced order statistics for more observations, the minimum and maximum among them`, () => {
      const stdout = captureStdout();
      const metrics = new EmfMetrics();
      for (let i = 1000; i >= 0; i--) metrics.record('Lag', 'Milliseconds', { lane: 'a' }, i);

      metrics.publish();

      const values = stdout.metric('Lag')[0]?.value as number[];
      expect(values).toHaveLength(MAX_VALUES_PER_LINE);
      expect(values[0]).toBe(0);
      expect(values.at(-1)).toBe(1000);
      expect(values).toEqual([...values].sort((a, b) => a - b));
      expect(values[Math.floor(MAX_VALUES_PER_LINE / 2)]).toBeCloseTo(510, -1);
    });
  });

  describe('record', () => {
    it('refuses a metric recorded under two units', () => {
      const metrics = new EmfMetrics();
      metrics.record('Lag', 'Milliseconds', { lane: 'a' }, 1);
      expect(() => metrics.record('Lag', 'None', { lane: 'a' }, 1)).toThrow(
        'metric Lag is recorded both as Milliseconds and as None',
      );
    });
  });
});
