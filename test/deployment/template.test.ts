/**
 * The packaged CloudFormation template: `osls package` runs offline, without credentials, and the template it
 * writes carries the deployment's semantics (singleton orchestrator, dropped overlapping ticks, redrive to
 * per-queue DLQs, alarms, least-privilege roles) and conforms to the CloudFormation resource specification.
 */
import { rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { serviceConfigFromEnv, CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV } from '../../lib/configFromEnv';
import { CloudFormationSpec, findCycle, isIntrinsic, references } from '../helpers/cloudFormationSpec';
import { packageService, readServerlessYml, readTemplate, type PackageRun } from '../../tools/local/packageService';
import type { Template } from '../../tools/local/template';
import { ORCHESTRATOR_MEMORY_MB, WORKER_MEMORY_MB } from '../../tools/bench/cost';
import { ORCHESTRATOR_RANGES } from '../../lib/config';
import { fifoRedriveThreshold } from '../../lib/domain/outcome/retryPolicy';
import {
  DEAD_LETTER_QUEUE_RETENTION_MS,
  LONGEST_COPY_LIFE_MS,
  SOURCE_QUEUE_RETENTION_MS,
} from '../../lib/queueRetention';

jest.setTimeout(30_000);

type Resource = Template['Resources'][string];

let good: PackageRun;
let bad: PackageRun;
/** Packaged with custom.queues.highThroughputFifo on. */
let highThroughput: PackageRun;
let template: Template;
let spec: CloudFormationSpec;
let custom: {
  quotaOrchestrator: { quotas: unknown; retry: { maxAttempts: number }; apiKeyParameter: string };
  queues: { maxReceiveCount: number; fifoMaxReceiveCount: number; highThroughputFifo: boolean };
  stateTable: { pointInTimeRecovery: boolean };
};

beforeAll(async () => {
  // Both packaging runs and the spec database load side by side: about 5 s in all.
  [good, bad, highThroughput, spec] = await Promise.all([
    packageService(),
    packageService((config) => {
      const settings = (config.custom as Record<string, Record<string, unknown>>).quotaOrchestrator!;
      settings.quotas = [{ limit: 10, per: 'fortnight' }];
    }),
    packageService((config) => {
      (config.custom as Record<string, Record<string, unknown>>).queues!.highThroughputFifo = true;
    }),
    CloudFormationSpec.load(),
  ]);
  for (const run of [good, highThroughput])
    if (run.code !== 0) throw new Error(`osls package failed (exit ${run.code}):\n${run.output}`);
  template = await readTemplate(good);
  custom = (await readServerlessYml()).custom as typeof custom;
}, 120_000);

afterAll(async () => {
  for (const run of [good, bad, highThroughput])
    if (run !== undefined) await rm(run.dir, { recursive: true, force: true });
});

function resource(id: string): Resource {
  const found = template.Resources[id];
  if (found === undefined)
    throw new Error(`the template has no resource ${id}; it has ${Object.keys(template.Resources).join(', ')}`);
  return found;
}

function props(id: string): Record<string, unknown> {
  return resource(id).Properties ?? {};
}

function ofType(type: string): [string, Resource][] {
  return Object.entries(template.Resources).filter(([, r]) => r.Type === type);
}

const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });

/** Source queue → its own dead-letter queue. */
const REDRIVE = {
  MainQueue: 'MainDeadLetterQueue',
  FifoQueue: 'FifoDeadLetterQueue',
  RequeueQueue: 'RequeueDeadLetterQueue',
} as const;
const DEAD_LETTER_QUEUES = [...Object.values(REDRIVE), 'WorkerFailureQueue'];

describe('osls package', () => {
  it('succeeds offline without credentials, writing one zip per function', () => {
    expect(good.code).toBe(0);
    expect(existsSync(path.join(good.outDir, 'orchestrator.zip'))).toBe(true);
    expect(existsSync(path.join(good.outDir, 'worker.zip'))).toBe(true);
  });

  it('fails on invalid quota settings, naming the field, before bundling anything', () => {
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain(
      'custom.quotaOrchestrator.quotas[0].per: must be one of second, minute, hour, day, month',
    );
    expect(existsSync(path.join(bad.outDir, 'cloudformation-template-update-stack.json'))).toBe(false);
  });
});

describe('the functions', () => {
  it.each(['OrchestratorLambdaFunction', 'WorkerLambdaFunction'])('%s runs on nodejs22.x, arm64', (id) => {
    expect(props(id).Runtime).toBe('nodejs22.x');
    expect(props(id).Architectures).toEqual(['arm64']);
  });

  it('runs one orchestrator at a time, for several minutes per run', () => {
    const orchestrator = props('OrchestratorLambdaFunction');
    expect(orchestrator.ReservedConcurrentExecutions).toBe(1);
    expect(orchestrator.Timeout).toBe(300);
  });

  it('starts the orchestrator every minute', () => {
    const rules = ofType('AWS::Events::Rule').map(([, r]) => r.Properties ?? {});
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
    expect((rules[0]!.Targets as { Arn: unknown }[]).map((t) => t.Arn)).toEqual([getAtt('OrchestratorLambdaFunction')]);
    const permissions = ofType('AWS::Lambda::Permission').map(([, r]) => r.Properties ?? {});
    expect(permissions).toContainEqual(
      expect.objectContaining({
        Principal: 'events.amazonaws.com',
        FunctionName: getAtt('OrchestratorLambdaFunction'),
      }),
    );
  });

  it('drops overlapping ticks instead of queueing or retrying them (the singleton rule)', () => {
    const config = ofType('AWS::Lambda::EventInvokeConfig').find(
      ([, r]) => JSON.stringify(r.Properties?.FunctionName) === JSON.stringify({ Ref: 'OrchestratorLambdaFunction' }),
    );
    expect(config).toBeDefined();
    expect(config![1].Properties?.MaximumRetryAttempts).toBe(0);
    expect(config![1].Properties?.MaximumEventAgeInSeconds).toBeLessThanOrEqual(120);
  });

  it("sends the worker's failed or late asynchronous invocations to the failure queue at once: Lambda's own retries would call the API unpaced", () => {
    const config = ofType('AWS::Lambda::EventInvokeConfig').find(
      ([, r]) => JSON.stringify(r.Properties?.FunctionName) === JSON.stringify({ Ref: 'WorkerLambdaFunction' }),
    );
    expect(config).toBeDefined();
    expect(config![1].Properties?.DestinationConfig).toEqual({
      OnFailure: { Destination: getAtt('WorkerFailureQueue') },
    });
    expect(config![1].Properties?.MaximumRetryAttempts).toBe(0);
    expect(config![1].Properties?.MaximumEventAgeInSeconds).toBe(60);
  });

  it('has the memory the bench prices each function at', () => {
    expect(props('OrchestratorLambdaFunction').MemorySize).toBe(ORCHESTRATOR_MEMORY_MB);
    expect(props('WorkerLambdaFunction').MemorySize).toBe(WORKER_MEMORY_MB);
  });

  it("gives the orchestrator the worker's name", () => {
    const variables = (props('OrchestratorLambdaFunction').Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(variables[RESOURCE_ENV.workerFunctionName]).toEqual({ Ref: 'WorkerLambdaFunction' });
  });
});

describe('the environment', () => {
  const variables = (id: string) => (props(id).Environment as { Variables: Record<string, unknown> }).Variables;

  it('carries custom.quotaOrchestrator.quotas as written, as JSON', () => {
    for (const id of ['OrchestratorLambdaFunction', 'WorkerLambdaFunction']) {
      expect(variables(id)[CONFIG_ENV.quotas]).toBe(JSON.stringify(custom.quotaOrchestrator.quotas));
    }
  });

  it.each(['OrchestratorLambdaFunction', 'WorkerLambdaFunction'])(
    'of %s is a configuration the function accepts at cold start',
    (id) => {
      const literal = Object.fromEntries(
        Object.entries(variables(id)).filter(([, v]) => typeof v === 'string'),
      ) as Record<string, string>;
      const config = serviceConfigFromEnv(literal);
      expect(config.orchestrator.workerTimeoutMs).toBe((props('WorkerLambdaFunction').Timeout as number) * 1000);
    },
  );

  it.each(['OrchestratorLambdaFunction', 'WorkerLambdaFunction'])(
    'of %s names the table and the eight queues by reference',
    (id) => {
      const vars = variables(id);
      expect(vars[RESOURCE_ENV.tableName]).toEqual({ Ref: 'StateTable' });
      const logicalIds = {
        main: 'MainQueue',
        fifo: 'FifoQueue',
        requeue: 'RequeueQueue',
        bulk: 'BulkQueue',
        'main-dlq': 'MainDeadLetterQueue',
        'fifo-dlq': 'FifoDeadLetterQueue',
        'requeue-dlq': 'RequeueDeadLetterQueue',
        'bulk-dlq': 'BulkDeadLetterQueue',
      };
      for (const [queue, name] of Object.entries(QUEUE_URL_ENV))
        expect(vars[name]).toEqual({ Ref: logicalIds[queue as keyof typeof logicalIds] });
    },
  );

  it("gives only the worker the API's URLs", () => {
    expect(variables('WorkerLambdaFunction')).toMatchObject({
      API_URL: expect.stringMatching(/^https:\/\//),
      HEALTH_URL: expect.stringMatching(/^https:\/\//),
    });
    expect(variables('OrchestratorLambdaFunction')).not.toHaveProperty('API_URL');
  });

  it('names the API key parameter, how long the key is kept and read, and holds no credential in plain text', () => {
    expect(variables('WorkerLambdaFunction').API_KEY_PARAMETER).toBe('/quota-orchestrator/dev/api-key');
    expect(variables('WorkerLambdaFunction').API_KEY_CACHE_SECONDS).toBe('300');
    expect(variables('WorkerLambdaFunction').API_KEY_READ_TIMEOUT_MS).toBe('2000');
    for (const fn of ['WorkerLambdaFunction', 'OrchestratorLambdaFunction']) {
      expect(Object.keys(variables(fn)).filter((name) => /KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL/.test(name))).toEqual(
        fn === 'WorkerLambdaFunction' ? ['API_KEY_PARAMETER', 'API_KEY_CACHE_SECONDS', 'API_KEY_READ_TIMEOUT_MS'] : [],
      );
    }
  });
});

describe('the table', () => {
  it('is keyed by pk alone, on demand, with TTL on ttl', () => {
    expect(props('StateTable')).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    });
  });

  it('is encrypted at rest with a KMS key, and has point-in-time recovery as custom.stateTable says', () => {
    expect(props('StateTable').SSESpecification).toEqual({ SSEEnabled: true });
    expect(custom.stateTable.pointInTimeRecovery).toBe(true);
    expect(props('StateTable').PointInTimeRecoverySpecification).toEqual({
      PointInTimeRecoveryEnabled: custom.stateTable.pointInTimeRecovery,
    });
  });
});

describe('the queues', () => {
  it.each(Object.entries(REDRIVE))('%s redrives to its own DLQ, %s, as a last guard', (source, dlq) => {
    const policy = props(source).RedrivePolicy as { deadLetterTargetArn: unknown; maxReceiveCount: number };
    expect(policy.deadLetterTargetArn).toEqual(getAtt(dlq));
    if (source === 'FifoQueue') {
      // Every retry and every hand-back of its group re-receives a FIFO message; its attempts are the service's count.
      expect(policy.maxReceiveCount).toBe(custom.queues.fifoMaxReceiveCount);
      expect(policy.maxReceiveCount).toBeGreaterThanOrEqual(
        fifoRedriveThreshold(custom.quotaOrchestrator.retry.maxAttempts),
      );
    } else {
      expect(policy.maxReceiveCount).toBe(custom.queues.maxReceiveCount);
      expect(policy.maxReceiveCount).toBeGreaterThan(custom.quotaOrchestrator.retry.maxAttempts);
    }
  });

  it('makes the FIFO queue and its DLQ FIFO, with explicit deduplication ids, and no other', () => {
    for (const id of ['FifoQueue', 'FifoDeadLetterQueue']) {
      expect(props(id)).toMatchObject({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        QueueName: expect.stringMatching(/\.fifo$/),
      });
    }
    for (const id of [
      'MainQueue',
      'MainDeadLetterQueue',
      'RequeueQueue',
      'RequeueDeadLetterQueue',
      'WorkerFailureQueue',
    ]) {
      expect(props(id).FifoQueue).toBeUndefined();
    }
  });

  it('limits the FIFO queue as a whole by default, and per message group in high-throughput mode', async () => {
    expect(custom.queues.highThroughputFifo).toBe(false);
    expect(props('FifoQueue')).toMatchObject({ FifoThroughputLimit: 'perQueue', DeduplicationScope: 'queue' });
    const fifo = (await readTemplate(highThroughput)).Resources.FifoQueue?.Properties;
    expect(fifo).toMatchObject({ FifoThroughputLimit: 'perMessageGroupId', DeduplicationScope: 'messageGroup' });
  });

  it.each(DEAD_LETTER_QUEUES)('%s keeps messages for 14 days, longer than any source queue', (id) => {
    expect(props(id).MessageRetentionPeriod).toBe(1_209_600);
    for (const source of Object.keys(REDRIVE)) expect(props(source).MessageRetentionPeriod).toBeLessThan(1_209_600);
  });

  it('keeps messages as long as the idempotency TTL’s minimum counts on (lib/queueRetention.ts)', () => {
    for (const source of Object.keys(REDRIVE))
      expect(props(source).MessageRetentionPeriod).toBe(SOURCE_QUEUE_RETENTION_MS / 1_000);
    for (const dlq of Object.values(REDRIVE))
      expect(props(dlq).MessageRetentionPeriod).toBe(DEAD_LETTER_QUEUE_RETENTION_MS / 1_000);
    expect(ORCHESTRATOR_RANGES.idempotencyTtlMs.min).toBe(LONGEST_COPY_LIFE_MS);
  });

  it('encrypts every queue at rest (SQS-managed keys)', () => {
    for (const [id] of ofType('AWS::SQS::Queue')) expect(props(id).SqsManagedSseEnabled).toBe(true);
  });

  it('lets every message the producers may send reach its DLQ with the service attributes added', () => {
    const size = (id: string) => props(id).MaximumMessageSize;
    for (const source of ['MainQueue', 'BulkQueue', 'FifoQueue']) expect(size(source)).toBe(262_144);
    for (const roomy of [
      'RequeueQueue',
      'MainDeadLetterQueue',
      'BulkDeadLetterQueue',
      'FifoDeadLetterQueue',
      'RequeueDeadLetterQueue',
    ])
      expect(size(roomy)).toBe(1_048_576);
  });

  it('has nine queues, all in the outputs with the table', () => {
    expect(ofType('AWS::SQS::Queue')).toHaveLength(9);
    const outputs = Object.values(template.Outputs ?? {}).map((o) => o.Value);
    for (const [id] of ofType('AWS::SQS::Queue')) expect(outputs).toContainEqual({ Ref: id });
    expect(outputs).toContainEqual({ Ref: 'StateTable' });
  });
});

describe('the alarms', () => {
  it.each(DEAD_LETTER_QUEUES)('fire on the first message in %s', (queue) => {
    const alarms = ofType('AWS::CloudWatch::Alarm')
      .map(([, r]) => r.Properties ?? {})
      .filter(
        (p) =>
          JSON.stringify(p.Dimensions) === JSON.stringify([{ Name: 'QueueName', Value: getAtt(queue, 'QueueName') }]),
      );
    expect(alarms).toHaveLength(1);
    const alarm = alarms[0]!;
    expect(alarm).toMatchObject({
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(alarm.Threshold).toBeGreaterThanOrEqual(1);
    expect(alarm.AlarmActions).toEqual([{ Ref: 'AlarmTopic' }]);
    expect(resource('AlarmTopic').Type).toBe('AWS::SNS::Topic');
  });
});

describe('IAM', () => {
  interface Statement {
    readonly Effect: string;
    readonly Action: string | string[];
    readonly Resource: unknown;
  }

  /** Every statement of every inline and standalone policy in the template, with where it is. */
  function statements(): [string, Statement][] {
    const found: [string, Statement][] = [];
    for (const [id, r] of Object.entries(template.Resources)) {
      const documents: unknown[] = [];
      if (r.Type === 'AWS::IAM::Role')
        for (const policy of (r.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? [])
          documents.push(policy.PolicyDocument);
      if (['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy'].includes(r.Type))
        documents.push(r.Properties?.PolicyDocument);
      for (const document of documents) {
        for (const statement of ([] as Statement[]).concat(
          (document as { Statement: Statement | Statement[] }).Statement,
        ))
          found.push([id, statement]);
      }
    }
    return found;
  }

  it('gives each function its own role, and creates no shared one', () => {
    expect(template.Resources).not.toHaveProperty('IamRoleLambdaExecution');
    expect(props('OrchestratorLambdaFunction').Role).toEqual(getAtt('OrchestratorRole'));
    expect(props('WorkerLambdaFunction').Role).toEqual(getAtt('WorkerRole'));
  });

  it('grants no SQS, DynamoDB or Lambda action on a wildcard resource', () => {
    const scoped = statements().filter(([, s]) =>
      ([] as string[]).concat(s.Action).some((a) => /^(sqs|dynamodb|lambda):|^\*$/.test(a)),
    );
    expect(scoped.length).toBeGreaterThanOrEqual(6);
    for (const [id, statement] of scoped) {
      for (const target of ([] as unknown[]).concat(statement.Resource)) {
        // Every resource is a reference to a resource of this stack, never a string (which could hold a `*`).
        expect({ id, target, intrinsic: isIntrinsic(target) }).toEqual({ id, target, intrinsic: true });
      }
    }
  });

  it('lets only the orchestrator invoke the worker, and only the worker', () => {
    const invokes = statements().filter(([, s]) => ([] as string[]).concat(s.Action).includes('lambda:InvokeFunction'));
    expect(invokes).toEqual([
      ['OrchestratorRole', expect.objectContaining({ Resource: getAtt('WorkerLambdaFunction') })],
    ]);
  });

  it("lets the worker send to its failure queue, which Lambda does with the worker's role", () => {
    const sends = statements().filter(
      ([id, s]) => id === 'WorkerRole' && JSON.stringify(s.Resource).includes('"WorkerFailureQueue"'),
    );
    expect(sends.map(([, s]) => s.Action)).toEqual(['sqs:SendMessage']);
  });

  it('lets only the worker read its API key parameter, and nothing else in Parameter Store', () => {
    const reads = statements().filter(([, s]) => ([] as string[]).concat(s.Action).some((a) => a.startsWith('ssm:')));
    expect(reads).toHaveLength(1);
    const [role, statement] = reads[0]!;
    expect(role).toBe('WorkerRole');
    expect(statement.Action).toBe('ssm:GetParameter');
    const parts = (statement.Resource as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    expect(parts.at(-1)).toBe(
      custom.quotaOrchestrator.apiKeyParameter
        .replace('${self:service}', 'quota-orchestrator')
        .replace('${sls:stage}', 'dev'),
    );
    expect(parts).toContain(':parameter');
  });

  it('scopes log writes to the function’s own log group', () => {
    for (const [role, group] of [
      ['OrchestratorRole', 'OrchestratorLogGroup'],
      ['WorkerRole', 'WorkerLogGroup'],
    ] as const) {
      const logs = statements().filter(
        ([id, s]) => id === role && ([] as string[]).concat(s.Action).some((a) => a.startsWith('logs:')),
      );
      expect(logs.map(([, s]) => s.Resource)).toEqual([getAtt(group)]);
    }
  });
});

describe('the template as a whole', () => {
  it('conforms to the CloudFormation resource specification (@aws-cdk/aws-service-spec)', () => {
    expect(spec.problems(template)).toEqual([]);
  });

  it('is checked by a spec check that does catch mistakes', () => {
    const broken: Template = {
      Resources: {
        Table: {
          Type: 'AWS::DynamoDB::Table',
          Properties: {
            KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
            TimeToLiveSpecification: { AttributeName: 'ttl', Enable: true },
          },
        },
        Queue: {
          Type: 'AWS::SQS::Queue',
          Properties: { QueueName: 'q', VisibilityTimeout: 'soon', RetentionPeriod: 60 },
        },
        Alarm: { Type: 'AWS::CloudWatch::Alarms', Properties: {} },
        Role: { Type: 'AWS::IAM::Role', Properties: { Description: { 'Fn::GetAtt': ['Queue', 'Url'] } } },
      },
    };
    expect(spec.problems(broken).sort()).toEqual([
      'Alarm: unknown resource type AWS::CloudWatch::Alarms',
      'Queue.Properties.RetentionPeriod: unknown property',
      'Queue.Properties.VisibilityTimeout: must be a number',
      'Role: Fn::GetAtt Queue.Url: AWS::SQS::Queue has no attribute Url',
      'Role: missing required property AssumeRolePolicyDocument',
      'Table.Properties.TimeToLiveSpecification.Enable: unknown property',
    ]);
  });

  it('refers only to resources it defines', () => {
    for (const [id, r] of Object.entries(template.Resources)) {
      for (const target of [...references(r.Properties), ...([] as string[]).concat(r.DependsOn ?? [])]) {
        expect({ id, target, defined: target in template.Resources }).toEqual({ id, target, defined: true });
      }
    }
  });

  it('has no dependency cycle (role → function → role)', () => {
    expect(findCycle(template)).toBeUndefined();
  });
});
