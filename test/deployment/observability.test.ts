/**
 * What the packaged template gives operators to watch the service: JSON logs, the alarms of resources/alarms.yml
 * with their thresholds from `custom.alarms`, the optional email subscription, and the dashboard of
 * resources/dashboard.yml. The metric names are those the functions publish (lib/adapters/metrics).
 */
import { rm } from 'node:fs/promises';
import { METRIC_NAMESPACE } from '../../lib/adapters/metrics/emfMetrics';
import { METRICS } from '../../lib/adapters/metrics/serviceMetrics';
import { packageService, readServerlessYml, readTemplate, type PackageRun } from '../../tools/local/packageService';
import type { Template } from '../../tools/local/template';

jest.setTimeout(30_000);

type Resource = Template['Resources'][string];

let good: PackageRun;
/** Packaged with custom.alarms.email set. */
let withEmail: PackageRun;
let template: Template;
let emailTemplate: Template;
let custom: {
  alarms: { email: string; oldestMessageAgeSeconds: number; circuitOpenMinutes: number };
  quotaOrchestrator: { lane: string };
  names: Record<string, string>;
};
let region: string;

const EMAIL = 'ops@example.com';

beforeAll(async () => {
  [good, withEmail] = await Promise.all([
    packageService(),
    packageService((config) => {
      (config.custom as Record<string, Record<string, unknown>>).alarms!.email = EMAIL;
    }),
  ]);
  for (const run of [good, withEmail])
    if (run.code !== 0) throw new Error(`osls package failed (exit ${run.code}):\n${run.output}`);
  [template, emailTemplate] = await Promise.all([readTemplate(good), readTemplate(withEmail)]);
  const yml = await readServerlessYml();
  custom = yml.custom as typeof custom;
  region = ((yml.provider as { region: string }).region.match(/'([^']+)'/) ?? [])[1] ?? '';
}, 120_000);

afterAll(async () => {
  for (const run of [good, withEmail]) if (run !== undefined) await rm(run.dir, { recursive: true, force: true });
});

function resource(t: Template, id: string): Resource {
  const found = t.Resources[id];
  if (found === undefined) throw new Error(`the template has no resource ${id}`);
  return found;
}

const getAtt = (id: string, attribute: string) => ({ 'Fn::GetAtt': [id, attribute] });
const TOPIC = [{ Ref: 'AlarmTopic' }];

describe('the functions’ logs', () => {
  it.each(['OrchestratorLambdaFunction', 'WorkerLambdaFunction'])('of %s are in Lambda’s JSON log format', (id) => {
    expect(resource(template, id).Properties?.LoggingConfig).toEqual({ LogFormat: 'JSON' });
  });
});

describe('the alarms', () => {
  // The packaged stage is the default one, dev: two stages or deployments never share a series or an alarm.
  const lane = () => [
    { Name: 'service', Value: 'quota-orchestrator' },
    { Name: 'stage', Value: 'dev' },
    { Name: 'lane', Value: custom.quotaOrchestrator.lane },
  ];
  const queue = (id: string) => [{ Name: 'QueueName', Value: getAtt(id, 'QueueName') }];

  /** Each alarm: the metric it watches and when it fires; every one goes to the alarm topic, raised and cleared. */
  const expected = () =>
    ({
      MainDeadLetterQueueAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queue('MainDeadLetterQueue'),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      BulkDeadLetterQueueAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queue('BulkDeadLetterQueue'),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      FifoDeadLetterQueueAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queue('FifoDeadLetterQueue'),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      RequeueDeadLetterQueueAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queue('RequeueDeadLetterQueue'),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      WorkerFailureQueueAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queue('WorkerFailureQueue'),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      OrchestratorErrorsAlarm: {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: 'OrchestratorLambdaFunction' } }],
        Statistic: 'Sum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      OrchestratorNotRunningAlarm: {
        Namespace: METRIC_NAMESPACE,
        MetricName: METRICS.heartbeat,
        Dimensions: lane(),
        Statistic: 'Sum',
        Period: 60,
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
      },
      MainQueueOldestMessageAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queue('MainQueue'),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: custom.alarms.oldestMessageAgeSeconds,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      BulkQueueOldestMessageAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queue('BulkQueue'),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: custom.alarms.oldestMessageAgeSeconds,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      FifoQueueOldestMessageAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queue('FifoQueue'),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: custom.alarms.oldestMessageAgeSeconds,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      RequeueQueueOldestMessageAlarm: {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queue('RequeueQueue'),
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: custom.alarms.oldestMessageAgeSeconds,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
      CircuitOpenAlarm: {
        Namespace: METRIC_NAMESPACE,
        MetricName: METRICS.circuitOpen,
        Dimensions: lane(),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: custom.alarms.circuitOpenMinutes,
        DatapointsToAlarm: custom.alarms.circuitOpenMinutes,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'missing',
      },
      CalendarQuotaExhaustedAlarm: {
        Namespace: METRIC_NAMESPACE,
        MetricName: METRICS.calendarQuotaExhausted,
        Dimensions: lane(),
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
    }) as const;

  it('are exactly these, each on its metric, threshold, period and evaluation, raised and cleared on the alarm topic', () => {
    const alarms = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(alarms.map(([id]) => id).sort()).toEqual(Object.keys(expected()).sort());
    for (const [id, watch] of Object.entries(expected())) {
      const { AlarmName, AlarmDescription, AlarmActions, OKActions, ...rest } = resource(template, id).Properties ?? {};
      expect({ id, ...rest }).toEqual({ id, ...watch });
      expect({ id, AlarmActions, OKActions }).toEqual({ id, AlarmActions: TOPIC, OKActions: TOPIC });
      expect(AlarmName).toEqual(expect.stringMatching(/^quota-orchestrator-dev-/));
      expect(typeof AlarmDescription).toBe('string');
    }
  });

  it('read their thresholds from custom.alarms: a day of age, 15 minutes of open circuit', () => {
    expect(custom.alarms).toEqual({ email: '', oldestMessageAgeSeconds: 86_400, circuitOpenMinutes: 15 });
  });

  it('watch the heartbeat for 3 minutes, missing data counting as no run: Lambda’s invocations cannot tell, a run spans several ticks', () => {
    const { EvaluationPeriods, Period, TreatMissingData } =
      resource(template, 'OrchestratorNotRunningAlarm').Properties ?? {};
    expect((EvaluationPeriods as number) * (Period as number)).toBe(180);
    expect(TreatMissingData).toBe('breaching');
  });
});

describe('the email subscription', () => {
  it('exists only under the HasAlarmEmail condition, which holds when custom.alarms.email is not empty', () => {
    const subscription = resource(template, 'AlarmEmailSubscription');
    expect(subscription).toMatchObject({
      Type: 'AWS::SNS::Subscription',
      Condition: 'HasAlarmEmail',
      Properties: { TopicArn: { Ref: 'AlarmTopic' }, Protocol: 'email' },
    });
    expect((template as { Conditions?: unknown }).Conditions).toEqual({
      HasAlarmEmail: { 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] },
    });
  });

  it('subscribes the address custom.alarms.email names', () => {
    expect(resource(emailTemplate, 'AlarmEmailSubscription').Properties?.Endpoint).toBe(EMAIL);
    expect((emailTemplate as { Conditions?: unknown }).Conditions).toEqual({
      HasAlarmEmail: { 'Fn::Not': [{ 'Fn::Equals': [EMAIL, ''] }] },
    });
  });
});

describe('the dashboard', () => {
  interface Widget {
    readonly type: string;
    readonly properties: {
      readonly title: string;
      readonly region: string;
      readonly metrics: readonly (readonly unknown[])[];
    };
  }

  function widgets(): Widget[] {
    const dashboard = resource(template, 'Dashboard');
    expect(dashboard.Type).toBe('AWS::CloudWatch::Dashboard');
    return (JSON.parse(dashboard.Properties?.DashboardBody as string) as { widgets: Widget[] }).widgets;
  }

  /** A widget's metrics: `Namespace/Name dim=value…` for a metric, the expression for a SEARCH. */
  function metricsOf(widget: Widget): string[] {
    return widget.properties.metrics.map((row) => {
      const first = row[0];
      if (typeof first === 'object' && first !== null && 'expression' in first)
        return (first as { expression: string }).expression;
      const [namespace, name, ...rest] = row.filter((cell): cell is string => typeof cell === 'string');
      const dims = [];
      for (let i = 0; i + 1 < rest.length; i += 2) dims.push(`${rest[i]}=${rest[i + 1]}`);
      return [`${namespace}/${name}`, ...dims].join(' ');
    });
  }

  const search = (dimensions: string, metric: string, stat: string) =>
    `SEARCH('{QuotaOrchestrator,service,stage,lane,${dimensions}} MetricName="${metric}" service="quota-orchestrator" stage="dev" lane="${custom.quotaOrchestrator.lane}"', '${stat}', 60)`;
  const own = (metric: string) =>
    `QuotaOrchestrator/${metric} service=quota-orchestrator stage=dev lane=${custom.quotaOrchestrator.lane}`;
  const sqs = (metric: string, queue: string) =>
    `AWS/SQS/${metric} QueueName=${custom.names[queue]!.replace('${self:service}-${sls:stage}', 'quota-orchestrator-dev')}`;

  it('shows, widget by widget, the usage against each limit, calls by outcome, jobs, the circuit, the orchestrator and the queues', () => {
    const sources = ['mainQueue', 'bulkQueue', 'fifoQueue', 'requeueQueue'];
    expect(Object.fromEntries(widgets().map((w) => [w.properties.title, metricsOf(w)]))).toEqual({
      'Usage against each limit (used / limit per tier)': [search('tier', METRICS.tierUsageRatio, 'Maximum')],
      'API calls by outcome': [search('outcome', METRICS.apiCalls, 'Sum')],
      'Jobs: dispatched, dead-lettered by reason, late starts refused, 429s': [
        own(METRICS.dispatched),
        own(METRICS.lateStartsRefused),
        own(METRICS.rateLimited),
        search('reason', METRICS.deadLetters, 'Sum'),
      ],
      'Circuit: open (1) or closed (0), and transitions by new state': [
        own(METRICS.circuitOpen),
        search('to', METRICS.circuitTransitions, 'Sum'),
      ],
      'Orchestrator: heartbeat, errors, dispatch lag (p99, ms)': [
        own(METRICS.heartbeat),
        'AWS/Lambda/Errors FunctionName=quota-orchestrator-dev-orchestrator',
        own(METRICS.dispatchLag),
      ],
      'Age of the oldest message (s)': sources.map((q) => sqs('ApproximateAgeOfOldestMessage', q)),
      'Queue depths (visible messages)': [
        ...sources,
        'mainDeadLetterQueue',
        'bulkDeadLetterQueue',
        'fifoDeadLetterQueue',
        'requeueDeadLetterQueue',
        'workerFailureQueue',
      ].map((q) => sqs('ApproximateNumberOfMessagesVisible', q)),
    });
  });

  it('looks in the stack’s region', () => {
    expect(region).toBe('us-east-1');
    for (const widget of widgets()) expect(widget.properties.region).toBe(region);
  });
});
