import { createRequire } from 'node:module';
import path from 'node:path';
import * as quotaSettings from '../../../lib/deploy/quotaSettings';
import type { ServiceView } from '../../../lib/deploy/quotaSettings';
import { queueNames, quotas, service } from '../../helpers/serviceView';

/** The plugin's surface as osls sees it. */
interface PluginInstance {
  readonly hooks: Record<string, () => void>;
}
type PluginClass = new (
  serverless: unknown,
  options: unknown,
  utils: unknown,
  deps?: { loadQuotaSettings?: () => typeof quotaSettings },
) => PluginInstance;

class FakeServerlessError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The settings of `service()`, as a lane of the lanes form sets them. */
function quotaSettings0(): Record<string, unknown> {
  return { ...(service().custom?.quotaOrchestrator as Record<string, unknown>) };
}

describe('QuotaConfigPlugin', () => {
  const QuotaConfigPlugin = createRequire(__filename)(
    path.join(__dirname, '../../../lib/deploy/quotaConfigPlugin.cjs'),
  ) as PluginClass;

  function serverless(view: ServiceView) {
    return { service: structuredClone(view), classes: { Error: FakeServerlessError } };
  }
  // tsx's loader cannot run inside jest's module registry, so these tests hand the plugin the module jest loaded;
  // test/deployment runs the real loader through osls.
  const deps = { loadQuotaSettings: () => quotaSettings };

  it('sets the environment before packaging', () => {
    const sls = serverless(service());
    const verbose = jest.fn();
    new QuotaConfigPlugin(sls, {}, { log: { verbose } }, deps).hooks['before:package:initialize']?.();
    expect(sls.service.provider.environment).toMatchObject({
      TABLE_NAME: { Ref: 'StateTable' },
      QUOTAS: JSON.stringify(quotas),
    });
    expect(sls.service.functions?.worker?.environment).toEqual({
      API_URL: 'https://api.example.com/jobs',
      HEALTH_URL: 'https://api.example.com/health',
    });
    expect(sls.service.functions?.orchestrator?.events).toEqual([{ schedule: 'rate(1 minute)' }]);
    expect(verbose).toHaveBeenCalledWith(
      "custom.quotaOrchestrator is valid: lane 'default', quotas 10/second, 400/minute",
    );
  });

  it('configures every command that sends or reads the environment, and is harmless when two of them run', () => {
    const sls = serverless(service());
    const plugin = new QuotaConfigPlugin(sls, {}, {}, deps);
    expect(Object.keys(plugin.hooks)).toEqual(
      expect.arrayContaining([
        'before:package:initialize',
        'before:deploy:function:initialize',
        'before:invoke:local:loadEnvVars',
      ]),
    );
    // `invoke local` packages first, then loads its environment.
    plugin.hooks['before:package:initialize']?.();
    plugin.hooks['before:invoke:local:loadEnvVars']?.();
    expect(sls.service.provider.environment?.QUOTAS).toBe(JSON.stringify(quotas));
    expect(sls.service.functions?.orchestrator?.events).toEqual([{ schedule: 'rate(1 minute)' }]);
  });

  it('gives each lane of the lanes form its resources, once however many hooks run, and takes out the one-lane queue URLs', () => {
    const queue = (id: string) => ({ Type: 'AWS::SQS::Queue', Properties: { QueueName: `qo-dev-${id}` } });
    const base = service();
    const lanes = { default: { ...quotaSettings0() }, gpt: { ...quotaSettings0() } };
    const view: ServiceView & { resources: unknown } = {
      ...base,
      custom: {
        ...base.custom,
        quotaOrchestrator: { lanes },
        names: queueNames('qo-dev-'),
      },
      provider: { environment: { ...base.provider.environment, MAIN_QUEUE_URL: { Ref: 'MainQueue' } } },
      resources: {
        Resources: {
          MainQueue: queue('main'),
          WorkerRole: {
            Type: 'AWS::IAM::Role',
            Properties: {
              Policies: [
                {
                  PolicyDocument: {
                    Statement: [
                      {
                        Sid: 'SourceQueues',
                        Effect: 'Allow',
                        Action: 'sqs:DeleteMessage',
                        Resource: [{ 'Fn::GetAtt': ['MainQueue', 'Arn'] }],
                      },
                    ],
                  },
                },
              ],
            },
          },
        },
        Outputs: { MainQueueUrl: { Value: { Ref: 'MainQueue' } } },
      },
    };
    const sls = serverless(view);
    const plugin = new QuotaConfigPlugin(sls, {}, {}, deps);
    plugin.hooks['before:package:initialize']?.();
    const once = structuredClone(sls.service);
    plugin.hooks['before:invoke:local:loadEnvVars']?.();
    expect(sls.service).toEqual(once);

    interface Packaged {
      readonly Resources: {
        readonly GptMainQueue: { readonly Properties: { readonly QueueName: string } };
        readonly WorkerRole: {
          readonly Properties: { readonly Policies: { PolicyDocument: { Statement: { Resource: unknown }[] } }[] };
        };
      };
      readonly Outputs: unknown;
    }
    const { resources } = sls.service as unknown as { resources: Packaged };
    expect(Object.keys(resources.Resources)).toEqual(['MainQueue', 'GptMainQueue', 'WorkerRole']);
    expect(resources.Resources.GptMainQueue.Properties.QueueName).toBe('qo-dev-gpt-main');
    expect(resources.Resources.WorkerRole.Properties.Policies[0]?.PolicyDocument.Statement[0]?.Resource).toEqual([
      { 'Fn::GetAtt': ['MainQueue', 'Arn'] },
      { 'Fn::GetAtt': ['GptMainQueue', 'Arn'] },
    ]);
    expect(resources.Outputs).toEqual({
      MainQueueUrl: { Value: { Ref: 'MainQueue' } },
      GptMainQueueUrl: { Value: { Ref: 'GptMainQueue' } },
    });
    expect(sls.service.provider.environment?.MAIN_QUEUE_URL).toBeUndefined();
    expect(Object.keys(JSON.parse(sls.service.provider.environment?.LANES as string))).toEqual(['default', 'gpt']);
  });

  it("stops the command with osls's error class, naming the field", () => {
    const sls = serverless(service({ settings: { quotas: [{ limit: 10, per: 'fortnight' }] } }));
    const hook = new QuotaConfigPlugin(sls, {}, {}, deps).hooks['before:package:initialize'];
    let error: unknown;
    try {
      hook?.();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FakeServerlessError);
    expect((error as FakeServerlessError).message).toMatch(
      /^custom\.quotaOrchestrator\.quotas\[0\]\.per: must be one of second, minute, hour, day, month/,
    );
    expect((error as FakeServerlessError).code).toBe('QUOTA_ORCHESTRATOR_CONFIG_INVALID');
    expect(sls.service.provider.environment).not.toHaveProperty('QUOTAS');
  });

  describe('with a result destination', () => {
    const results = { type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' };
    const own = { Sid: 'OwnLogs', Effect: 'Allow', Action: 'logs:PutLogEvents', Resource: 'x' };
    /** serverless.yml with `results`, and resources/iam.yml's WorkerRole as osls merges it, with one statement. */
    function withRole() {
      const sls = serverless(service({ settings: { results } }));
      const role = {
        Type: 'AWS::IAM::Role',
        Properties: {
          Policies: [{ PolicyName: 'worker', PolicyDocument: { Version: '2012-10-17', Statement: [own] } }],
        },
      };
      Object.assign(sls.service, { resources: { Resources: { WorkerRole: role } } });
      return { sls, statements: () => role.Properties.Policies[0]!.PolicyDocument.Statement };
    }

    it("adds the send to the destination to the worker role's policy, once however often the plugin runs", () => {
      const { sls, statements } = withRole();
      const plugin = new QuotaConfigPlugin(sls, {}, {}, deps);
      plugin.hooks['before:package:initialize']?.();
      plugin.hooks['before:invoke:local:loadEnvVars']?.();
      expect(statements()).toEqual([
        own,
        {
          Sid: 'ResultDestination',
          Effect: 'Allow',
          Action: ['sqs:GetQueueUrl', 'sqs:SendMessage'],
          Resource: results.queueArn,
        },
      ]);
      expect(
        JSON.parse((sls.service.functions?.worker?.environment?.RESULT_DESTINATION as string | undefined) ?? ''),
      ).toEqual(results);
    });

    it('stops the command when there is no worker role to grant it on', () => {
      const sls = serverless(service({ settings: { results } }));
      const hook = new QuotaConfigPlugin(sls, {}, {}, deps).hooks['before:package:initialize'];
      expect(() => hook?.()).toThrow(/custom\.quotaOrchestrator\.results: needs the WorkerRole/);
    });
  });
});
