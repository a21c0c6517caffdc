import type { CircuitStatus } from '../domain/breaker/state';
import type { MetricSink } from '../adapters/metrics/emfMetrics';
import {
  deadLetterClass,
  METRICS,
  METRICS_PUBLISH_INTERVAL_MS,
  type MetricScope,
} from '../adapters/metrics/serviceMetrics';
import type { JobOutcome, WorkerReport } from '../services/worker/types';
import type { OrchestratorEvent } from '../services/orchestrator/types';

/** The {@link METRICS.circuitOpen} value of a status: the circuit lets no job through unless closed. */
function openGauge(status: CircuitStatus): number {
  return status === 'closed' ? 0 : 1;
}

/**
 * The metrics of one orchestrator run, from its events: counts and observations go to the sink as they come, and
 * the sink is published every {@link METRICS_PUBLISH_INTERVAL_MS} of event time and at the run's end, each time with
 * the heartbeat and the gauges the run knows (the circuit once read, the calendar exhaustion once the ledger is).
 */
export class OrchestratorMetrics {
  private lastPublishAt: number;
  private circuitOpen: number | undefined;
  private calendarExhausted: number | undefined;

  constructor(
    private readonly sink: MetricSink,
    private readonly scope: MetricScope,
    startedAt: number,
  ) {
    this.lastPublishAt = startedAt;
  }

  /** Records `event`, then publishes if the interval has passed by its time. */
  observe(event: OrchestratorEvent): void {
    const scope = { ...this.scope };
    switch (event.type) {
      case 'dispatched':
        this.sink.count(METRICS.dispatched, scope);
        this.sink.record(METRICS.dispatchLag, 'Milliseconds', scope, event.waitedMs);
        break;
      case 'dead-lettered':
        this.sink.count(METRICS.deadLetters, { ...scope, reason: deadLetterClass(event.reason) });
        break;
      case 'circuit-transition':
        this.sink.count(METRICS.circuitTransitions, { ...scope, to: event.to });
        break;
      case 'circuit-seen':
        this.circuitOpen = openGauge(event.status);
        break;
      case 'flushed':
        this.calendarExhausted ??= 0;
        for (const { tier, used, limit, learned } of event.usage) {
          this.sink.record(METRICS.tierUsageRatio, 'None', { ...scope, tier }, used / limit);
          if (learned !== undefined)
            this.sink.record(METRICS.learnedLimitRatio, 'None', { ...scope, tier }, learned.limit / limit);
        }
        for (const [unit, units] of Object.entries(event.handedBack))
          this.sink.record(METRICS.unitsHandedBack, 'Count', { ...scope, unit }, units);
        if (event.inFlight !== undefined) this.sink.record(METRICS.callsInFlight, 'Count', scope, event.inFlight);
        break;
      case 'quota-exhausted':
        this.calendarExhausted = event.kind === 'calendar' ? 1 : 0;
        this.sink.record(
          METRICS.quotaExhaustedFor,
          'Milliseconds',
          { ...scope, tier: event.tier },
          Math.max(0, event.until - event.at),
        );
        break;
      case 'quota-available':
        this.calendarExhausted = 0;
        break;
      default:
        break;
    }
    if (event.at - this.lastPublishAt >= METRICS_PUBLISH_INTERVAL_MS) this.publish(event.at);
  }

  /** Publishes what is left, with the heartbeat: at the end of the run, whatever its outcome. */
  end(now: number): void {
    this.publish(now);
  }

  private publish(now: number): void {
    const scope = { ...this.scope };
    this.sink.count(METRICS.heartbeat, scope);
    if (this.circuitOpen !== undefined) this.sink.record(METRICS.circuitOpen, 'None', scope, this.circuitOpen);
    if (this.calendarExhausted !== undefined)
      this.sink.record(METRICS.calendarQuotaExhausted, 'None', scope, this.calendarExhausted);
    this.sink.publish();
    this.lastPublishAt = now;
  }
}

/**
 * Records a worker's reports and job outcomes in `sink`, in `scope`; the handler publishes at the end of each
 * invocation.
 */
export class WorkerMetrics {
  constructor(
    private readonly sink: MetricSink,
    private readonly scope: MetricScope,
  ) {}

  /** Records one report of the worker's services. */
  observe(report: WorkerReport): void {
    const scope = { ...this.scope };
    if (report.type === 'api-called') {
      this.sink.count(METRICS.apiCalls, { ...scope, outcome: report.result });
      if (report.result === 'rate-limited') this.sink.count(METRICS.rateLimited, scope);
    } else if (report.type === 'dead-lettered') {
      this.sink.count(METRICS.deadLetters, { ...scope, reason: deadLetterClass(report.reason) });
    } else if (report.type === 'circuit-transition') {
      this.sink.count(METRICS.circuitTransitions, { ...scope, to: report.to });
    } else if (report.type === 'result-undelivered') {
      this.sink.count(METRICS.resultsUndelivered, scope);
    }
  }

  /** Records how one job delivery ended. */
  job(outcome: JobOutcome): void {
    const scope = { ...this.scope };
    this.sink.count(METRICS.jobOutcomes, { ...scope, outcome });
    if (outcome === 'too-late') this.sink.count(METRICS.lateStartsRefused, scope);
  }

  /** Writes what the invocation recorded. */
  publish(): void {
    this.sink.publish();
  }
}
