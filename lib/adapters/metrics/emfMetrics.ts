import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { SERVICE_NAME } from '../log';

/** The CloudWatch namespace of every metric the functions publish. */
export const METRIC_NAMESPACE = 'QuotaOrchestrator';

/** The units the service's metrics are in (CloudWatch's names). */
export type MetricUnitName = typeof MetricUnit.Count | typeof MetricUnit.Milliseconds | typeof MetricUnit.NoUnit;

/** A metric's dimensions, by name: `{ lane: 'default', outcome: 'success' }`. */
export type MetricDimensions = Readonly<Record<string, string>>;

/** Where adapters put metrics; nothing is written before {@link MetricSink.publish}. */
export interface MetricSink {
  /** Adds `value` (@default 1) to the metric's sum since the last publish, in `Count`. */
  count(name: string, dimensions: MetricDimensions, value?: number): void;
  /** Records one observation of the metric (its statistics are over the observations of a period). */
  record(name: string, unit: MetricUnitName, dimensions: MetricDimensions, value: number): void;
  /** Writes what was counted and recorded since the last publish, and forgets it. */
  publish(): void;
}

/**
 * Most observations of one metric and dimensions in one EMF line: beyond it, that many evenly spaced order statistics
 * of them stand for them (their minimum, maximum and percentiles stay close; the sample count is capped). Below
 * Powertools' 100 values per metric, which would publish on its own, mid-line.
 */
export const MAX_VALUES_PER_LINE = 50;

interface Series {
  readonly name: string;
  readonly unit: MetricUnitName;
  /** A sum (one value), or the observations. */
  readonly values: number[];
  readonly summed: boolean;
}

/**
 * A {@link MetricSink} that writes CloudWatch Embedded Metric Format lines to stdout through Powertools Metrics, in
 * {@link METRIC_NAMESPACE}: one JSON line per set of dimensions at each {@link EmfMetrics.publish}, each metric of
 * the set in it once (a count as its sum, observations as a list of values). Lambda ships the lines to CloudWatch
 * Logs, which makes metrics of them: no API call, no IAM permission. Powertools adds no `service` dimension here: the
 * dimensions are exactly those given. `POWERTOOLS_METRICS_DISABLED=true` turns the lines off.
 */
export class EmfMetrics implements MetricSink {
  private readonly series = new Map<
    string,
    { readonly dimensions: MetricDimensions; readonly metrics: Map<string, Series> }
  >();

  /** @param metrics the Powertools instance that writes the lines. @default one in {@link METRIC_NAMESPACE} */
  constructor(
    private readonly metrics: Metrics = new Metrics({ namespace: METRIC_NAMESPACE, serviceName: SERVICE_NAME }),
  ) {
    this.metrics.clearDefaultDimensions();
  }

  count(name: string, dimensions: MetricDimensions, value = 1): void {
    const series = this.seriesOf(name, MetricUnit.Count, dimensions, true);
    series.values[0] = (series.values[0] ?? 0) + value;
  }

  record(name: string, unit: MetricUnitName, dimensions: MetricDimensions, value: number): void {
    this.seriesOf(name, unit, dimensions, false).values.push(value);
  }

  publish(): void {
    for (const { dimensions, metrics } of this.series.values()) {
      for (const [key, value] of Object.entries(dimensions)) this.metrics.addDimension(key, value);
      for (const { name, unit, values } of metrics.values())
        for (const value of spread(values)) this.metrics.addMetric(name, unit, value);
      this.metrics.publishStoredMetrics();
    }
    this.series.clear();
  }

  private seriesOf(name: string, unit: MetricUnitName, dimensions: MetricDimensions, summed: boolean): Series {
    const key = JSON.stringify(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
    let group = this.series.get(key);
    if (group === undefined) this.series.set(key, (group = { dimensions: { ...dimensions }, metrics: new Map() }));
    let series = group.metrics.get(name);
    if (series === undefined) group.metrics.set(name, (series = { name, unit, values: [], summed }));
    if (series.unit !== unit || series.summed !== summed)
      throw new Error(
        `metric ${name} is recorded both as ${series.unit}${series.summed ? ' (summed)' : ''} and as ${unit}${summed ? ' (summed)' : ''}`,
      );
    return series;
  }
}

/** `values`, or {@link MAX_VALUES_PER_LINE} evenly spaced order statistics of them (the minimum and maximum among). */
function spread(values: readonly number[]): readonly number[] {
  if (values.length <= MAX_VALUES_PER_LINE) return values;
  const sorted = [...values].sort((a, b) => a - b);
  const last = sorted.length - 1;
  return Array.from(
    { length: MAX_VALUES_PER_LINE },
    (_, i) => sorted[Math.round((i * last) / (MAX_VALUES_PER_LINE - 1))]!,
  );
}
