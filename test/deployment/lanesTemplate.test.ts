/**
 * The lanes form packaged by `osls package`: every lane gets its own queues, alarms, outputs and grants from those
 * resources/*.yml write for one lane, and the functions' environment names each lane's queues exactly as the
 * template does. The one-lane form's template is test/deployment/template.test.ts's, unchanged.
 */
import { rm } from 'node:fs/promises';
import { QUEUE_URL_ENV, type Env } from '../../lib/configFromEnv';
import { laneEnvs } from '../../lib/lanes/laneEnv';
import { QUEUE_LOGICAL_IDS } from '../../lib/deploy/laneResources';
import { QUEUE_NAMES, type QueueName } from '../../lib/ports/QueueReceiver';
import { CloudFormationSpec, findCycle, references } from '../helpers/cloudFormationSpec';
import { packageService, readTemplate, type PackageRun } from '../../tools/local/packageService';
import { LocalStack, type Template } from '../../tools/local/template';

jest.setTimeout(30_000);

const PREFIX = 'quota-orchestrator-dev-';
const ACCOUNT_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/';

const claude = {
  quotas: [{ limit: 50, per: 'minute' }],
  apiUrl: 'https://api.anthropic.com/v1/messages',
  healthUrl: 'https://api.anthropic.com/v1/models',
  apiKeyHeader: 'x-api-key',
  requestHeaders: { 'anthropic-version': '2023-06-01' },
  apiKeyParameter: '/quota-orchestrator/dev/anthropic',
  pools: ['org'],
};
/** A pool the two lanes share. */
const pools = { org: { quotas: [{ limit: 8, per: 'second' }] } };
const gpt = {
  quotas: [{ limit: 5, per: 'second' }],
  pools: ['org'],
  apiUrl: 'https://api.openai.com/v1/chat/completions',
  healthUrl: 'https://api.openai.com/v1/models',
};

/** Packages serverless.yml with its settings turned into `lanes` (the one-lane settings become `default`'s, if kept). */
function packageLanes(keepDefault: boolean): Promise<PackageRun> {
  return packageService((config) => {
    const custom = config.custom as Record<string, Record<string, unknown>>;
    const { timeZone, orchestrator, ...own } = custom.quotaOrchestrator!;
    delete own.lane;
    const lanes = keepDefault ? { default: own, 'gpt-4o': gpt, claude } : { 'gpt-4o': gpt, claude };
    custom.quotaOrchestrator = { timeZone, orchestrator, pools, lanes };
  });
}

let withDefault: Template;
let withoutDefault: Template;
let spec: CloudFormationSpec;
const runs: PackageRun[] = [];

beforeAll(async () => {
  const [a, b, loaded] = await Promise.all([packageLanes(true), packageLanes(false), CloudFormationSpec.load()]);
  runs.push(a, b);
  for (const run of runs) if (run.code !== 0) throw new Error(`osls package failed (exit ${run.code}):\n${run.output}`);
  [withDefault, withoutDefault] = await Promise.all([readTemplate(a), readTemplate(b)]);
  spec = loaded;
}, 120_000);

afterAll(async () => {
  for (const run of runs) await rm(run.dir, { recursive: true, force: true });
});

/**
 * A function's environment as CloudFormation would resolve it, the queues' URLs in this test's account: each
 * intrinsic resolved against the template's queues (the others' values are not read here).
 */
function deployedEnv(template: Template, fn: string): Env {
  const stack = new LocalStack(template);
  for (const id of stack.idsOf('AWS::SQS::Queue')) {
    const name = (template.Resources[id]!.Properties as { QueueName: string }).QueueName;
    stack.define(id, { ref: `${ACCOUNT_URL}${name}`, attributes: {} });
  }
  const variables = (template.Resources[fn]!.Properties as { Environment: { Variables: Record<string, unknown> } })
    .Environment.Variables;
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [
      name,
      typeof value === 'string' ? value : name === 'QUEUE_URL_PREFIX' ? String(stack.resolve(value)) : '(resolved)',
    ]),
  );
}

/** What ends each queue's name. */
const SUFFIX: Readonly<Record<QueueName, string>> = {
  main: 'main',
  fifo: 'fifo.fifo',
  requeue: 'requeue',
  bulk: 'bulk',
  'main-dlq': 'main-dlq',
  'fifo-dlq': 'fifo-dlq.fifo',
  'requeue-dlq': 'requeue-dlq',
  'bulk-dlq': 'bulk-dlq',
};

/** The logical id prefix of each lane's resources, as the lanes are packaged. */
const ID_PREFIX: Readonly<Record<string, string>> = { default: '', 'gpt-4o': 'Gpt4o', claude: 'Claude' };

describe.each([
  ['with a lane named default', () => withDefault, ['default', 'gpt-4o', 'claude']],
  ['without a lane named default', () => withoutDefault, ['gpt-4o', 'claude']],
])('the lanes form %s', (_, template, lanes) => {
  it("gives each lane eight queues, each source queue redriven to the lane's own dead-letter queue", () => {
    const t = template();
    for (const lane of lanes) {
      for (const queue of QUEUE_NAMES) {
        const resource = t.Resources[`${ID_PREFIX[lane]}${QUEUE_LOGICAL_IDS[queue]}`];
        expect(resource?.Type).toBe('AWS::SQS::Queue');
        const name = (resource!.Properties as { QueueName: string }).QueueName;
        expect(name).toBe(`${PREFIX}${lane === 'default' ? '' : `${lane}-`}${SUFFIX[queue]}`);
        const redrive = (resource!.Properties as { RedrivePolicy?: { deadLetterTargetArn: unknown } }).RedrivePolicy;
        if (!queue.endsWith('-dlq'))
          expect(redrive?.deadLetterTargetArn).toEqual({
            'Fn::GetAtt': [`${ID_PREFIX[lane]}${QUEUE_LOGICAL_IDS[`${queue}-dlq` as 'main-dlq']}`, 'Arn'],
          });
      }
    }
    const queues = Object.values(t.Resources).filter(({ Type }) => Type === 'AWS::SQS::Queue');
    expect(queues).toHaveLength(lanes.length * 8 + 1); // and the worker's failure queue
  });

  it("names in the functions' environment the very queues the template makes, for every lane", () => {
    const t = template();
    for (const fn of ['OrchestratorLambdaFunction', 'WorkerLambdaFunction']) {
      const env = deployedEnv(t, fn);
      expect(env.MAIN_QUEUE_URL).toBeUndefined();
      const read = laneEnvs(env);
      expect(read.map(({ lane }) => lane)).toEqual(lanes);
      for (const { lane, env: laneEnv } of read) {
        for (const queue of QUEUE_NAMES) {
          const resource = t.Resources[`${ID_PREFIX[lane]}${QUEUE_LOGICAL_IDS[queue]}`]!;
          expect(laneEnv[QUEUE_URL_ENV[queue]]).toBe(
            `${ACCOUNT_URL}${(resource.Properties as { QueueName: string }).QueueName}`,
          );
        }
      }
    }
  });

  it("lets each role reach every lane's queues and state items, and the worker every lane's key", () => {
    const t = template();
    const text = (id: string) => JSON.stringify(t.Resources[id]);
    for (const lane of lanes) {
      for (const role of ['OrchestratorRole', 'WorkerRole']) {
        expect(text(role)).toContain(`"circuit#${lane}"`);
        expect(text(role)).toContain(`"settle#${lane}#*"`);
        expect(text(role)).toContain(`"${ID_PREFIX[lane]}MainQueue","Arn"`);
      }
      expect(text('OrchestratorRole')).toContain(`"lane#${lane}"`);
      expect(text('ProducerPolicy')).toContain(`"${ID_PREFIX[lane]}FifoQueue","Arn"`);
    }
    expect(text('WorkerRole')).toContain('"/quota-orchestrator/dev/anthropic"');
    if (!lanes.includes('default')) expect(JSON.stringify(t)).not.toMatch(/#default"/);
  });

  it("lets the orchestrator reach the pool's lease, ledger, settlements and pause, the worker its settlements and pause, and no more", () => {
    const text = (id: string) => JSON.stringify(template().Resources[id]);
    expect(text('OrchestratorRole')).toContain('"lane#pool:org"');
    for (const role of ['OrchestratorRole', 'WorkerRole']) {
      expect(text(role)).toContain('"settle#pool:org#*"');
      expect(text(role)).toContain('"circuit#pool:org"');
      expect(text(role)).not.toContain('"slots#pool:org"');
    }
    expect(text('WorkerRole')).not.toContain('"lane#pool:org"');
  });

  it("gives each lane that draws from the pool its tiers in the functions' environment", () => {
    const env = deployedEnv(template(), 'WorkerLambdaFunction');
    const byLane = new Map(laneEnvs(env).map((lane) => [lane.lane, JSON.parse(lane.env.POOLS ?? 'null')]));
    const org = [{ name: 'org', quotas: pools.org.quotas }];
    expect(byLane.get('gpt-4o')).toEqual(org);
    expect(byLane.get('claude')).toEqual(org);
    if (lanes.includes('default')) expect(byLane.get('default')).toBeNull();
  });

  it('gives each lane its own alarms and queue outputs, named with the lane', () => {
    const t = template();
    for (const lane of lanes) {
      const circuit = t.Resources[`${ID_PREFIX[lane]}CircuitOpenAlarm`]!.Properties as {
        AlarmName: string;
        Dimensions: { Name: string; Value: unknown }[];
      };
      expect(circuit.Dimensions).toContainEqual({ Name: 'lane', Value: lane });
      expect(circuit.AlarmName).toBe(
        `quota-orchestrator-dev-orchestrator-circuit-open${lane === 'default' ? '' : `-${lane}`}`,
      );
      expect(t.Resources[`${ID_PREFIX[lane]}MainDeadLetterQueueAlarm`]).toBeDefined();
      expect(t.Outputs?.[`${ID_PREFIX[lane]}FifoQueueUrl`]).toEqual({
        Description: expect.any(String),
        Value: { Ref: `${ID_PREFIX[lane]}FifoQueue` },
      });
    }
    const names = Object.values(t.Resources)
      .filter(({ Type }) => Type === 'AWS::CloudWatch::Alarm')
      .map(({ Properties }) => (Properties as { AlarmName: string }).AlarmName);
    expect(new Set(names).size).toBe(names.length);
  });

  it("shows every lane's metrics and queues on the dashboard, each graph's expression ids unique", () => {
    const body = JSON.parse(
      (template().Resources.Dashboard!.Properties as { DashboardBody: string }).DashboardBody,
    ) as {
      widgets: { properties: { metrics?: unknown[] } }[];
    };
    const text = JSON.stringify(body);
    for (const lane of lanes) {
      expect(text).toContain(`"lane","${lane}"`);
      expect(text).toContain(`lane=\\"${lane}\\"`);
      expect(text).toContain(`"QueueName","${PREFIX}${lane === 'default' ? '' : `${lane}-`}main"`);
    }
    if (!lanes.includes('default')) expect(text).not.toMatch(/"lane","default"|lane=\\"default\\"/);
    for (const { properties } of body.widgets) {
      const ids = (properties.metrics ?? []).flatMap((entry) =>
        Array.isArray(entry) ? entry.flatMap((item: { id?: string }) => (item?.id === undefined ? [] : [item.id])) : [],
      );
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('conforms to the CloudFormation specification, refers only to resources it defines, and has no cycle', () => {
    const t = template();
    expect(spec.problems(t)).toEqual([]);
    for (const [id, r] of Object.entries(t.Resources))
      for (const target of [...references(r.Properties), ...([] as string[]).concat(r.DependsOn ?? [])])
        expect({ id, target, defined: target in t.Resources }).toEqual({ id, target, defined: true });
    for (const [key, output] of Object.entries(t.Outputs ?? {}))
      for (const target of references(output))
        expect({ key, target, defined: target in t.Resources }).toEqual({ key, target, defined: true });
    expect(findCycle(t)).toBeUndefined();
  });
});
