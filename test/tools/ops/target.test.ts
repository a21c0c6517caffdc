import { GetFunctionConfigurationCommand, LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, QueueDoesNotExist, SQSClient } from '@aws-sdk/client-sqs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mockClient } from 'aws-sdk-client-mock';
import { localTargets, stageNames, stageTarget, stageTargets } from '../../../tools/ops/target';

// There is no Lambda emulator to hold a deployed function's configuration: GetFunctionConfiguration and GetQueueUrl
// of a deployed stage are mocked.
const lambda = mockClient(LambdaClient);
const sqs = mockClient(SQSClient);

const ENVIRONMENT = {
  LANE: 'default',
  QUOTAS: '[{"limit":10,"per":"second"},{"limit":20000,"per":"day"}]',
  TIME_ZONE: 'Europe/Paris',
};

beforeEach(() => {
  lambda.reset();
  sqs.reset();
});

describe('stageNames', () => {
  it("names the stage's resources as serverless.yml's custom.names does", () => {
    expect(stageNames('quota-orchestrator', 'prod')).toEqual({
      table: 'quota-orchestrator-prod',
      queues: {
        main: 'quota-orchestrator-prod-main',
        fifo: 'quota-orchestrator-prod-fifo.fifo',
        requeue: 'quota-orchestrator-prod-requeue',
        bulk: 'quota-orchestrator-prod-bulk',
        'main-dlq': 'quota-orchestrator-prod-main-dlq',
        'fifo-dlq': 'quota-orchestrator-prod-fifo-dlq.fifo',
        'requeue-dlq': 'quota-orchestrator-prod-requeue-dlq',
        'bulk-dlq': 'quota-orchestrator-prod-bulk-dlq',
      },
      orchestratorFunction: 'quota-orchestrator-prod-orchestrator',
      workerFunction: 'quota-orchestrator-prod-worker',
    });
  });
});

describe('stageTarget', () => {
  const options = { stage: 'prod', service: 'quota-orchestrator', region: 'eu-west-3', lane: 'default' };

  it("reads the lane's configuration from the orchestrator's environment and each queue's URL by its name", async () => {
    lambda
      .on(GetFunctionConfigurationCommand, { FunctionName: 'quota-orchestrator-prod-orchestrator' })
      .resolves({ Environment: { Variables: ENVIRONMENT } });
    sqs.on(GetQueueUrlCommand).callsFake(({ QueueName }: { QueueName: string }) => ({
      QueueUrl: `https://sqs.eu-west-3.amazonaws.com/123456789012/${QueueName}`,
    }));

    const target = await stageTarget(options);
    target.destroy();

    expect(target.label).toBe("stage 'prod' in eu-west-3");
    expect(target.tableName).toBe('quota-orchestrator-prod');
    expect(target.queueUrls['fifo-dlq']).toBe(
      'https://sqs.eu-west-3.amazonaws.com/123456789012/quota-orchestrator-prod-fifo-dlq.fifo',
    );
    expect(target.config.timeZone).toBe('Europe/Paris');
    expect(target.config.quotas.map((t) => `${t.limit}/${t.per}`)).toEqual(['10/second', '20000/day']);
  });

  it('says the stage is not there when its orchestrator function is not', async () => {
    lambda
      .on(GetFunctionConfigurationCommand)
      .rejects(new ResourceNotFoundException({ message: 'Function not found', $metadata: {} }));

    await expect(stageTarget(options)).rejects.toMatchObject({
      name: 'OpsError',
      message:
        "stage 'prod' of service 'quota-orchestrator' not found in region eu-west-3: there is no function quota-orchestrator-prod-orchestrator (check --stage, --service and --region)",
    });
  });

  it('names a queue that is missing', async () => {
    lambda.on(GetFunctionConfigurationCommand).resolves({ Environment: { Variables: ENVIRONMENT } });
    sqs.on(GetQueueUrlCommand).resolves({ QueueUrl: 'https://sqs/q' });
    sqs
      .on(GetQueueUrlCommand, { QueueName: 'quota-orchestrator-prod-requeue-dlq' })
      .rejects(new QueueDoesNotExist({ message: 'The specified queue does not exist.', $metadata: {} }));

    await expect(stageTarget(options)).rejects.toMatchObject({
      name: 'OpsError',
      message: "queue quota-orchestrator-prod-requeue-dlq of stage 'prod' not found in region eu-west-3",
    });
  });

  it('refuses a lane the stage does not serve, naming the one it does', async () => {
    lambda
      .on(GetFunctionConfigurationCommand)
      .resolves({ Environment: { Variables: { ...ENVIRONMENT, LANE: 'sms' } } });

    await expect(stageTarget(options)).rejects.toMatchObject({
      name: 'OpsError',
      message: "stage 'prod' serves lane 'sms', not 'default': pass --lane sms, or leave --lane out",
    });
  });

  it("reads a lane of a deployment of several: its own settings, and its queues by the lanes' naming rule", async () => {
    const lanes = {
      LANES: JSON.stringify({
        default: { QUOTAS: [{ limit: 10, per: 'second' }], API_URL: 'https://a/jobs', HEALTH_URL: 'https://a/h' },
        gpt: { QUOTAS: [{ limit: 500, per: 'minute' }], API_URL: 'https://b/jobs', HEALTH_URL: 'https://b/h' },
      }),
      QUEUE_URL_PREFIX: 'https://sqs.eu-west-3.amazonaws.com/123456789012/quota-orchestrator-prod-',
      TIME_ZONE: 'Europe/Paris',
    };
    lambda.on(GetFunctionConfigurationCommand).resolves({ Environment: { Variables: lanes } });
    sqs.on(GetQueueUrlCommand).callsFake(({ QueueName }: { QueueName: string }) => ({
      QueueUrl: `https://sqs.eu-west-3.amazonaws.com/123456789012/${QueueName}`,
    }));

    const target = await stageTarget({ ...options, lane: 'gpt' });
    target.destroy();

    expect(target.config).toMatchObject({ lane: 'gpt', timeZone: 'Europe/Paris' });
    expect(target.config.quotas.map((t) => `${t.limit}/${t.per}`)).toEqual(['500/minute']);
    expect(target.queueUrls.main).toBe(
      'https://sqs.eu-west-3.amazonaws.com/123456789012/quota-orchestrator-prod-gpt-main',
    );
    await expect(stageTarget({ ...options, lane: 'claude' })).rejects.toMatchObject({
      name: 'OpsError',
      message: "stage 'prod' has no lane 'claude'; its lanes are 'default', 'gpt'",
    });
    // Without --lane: every lane, each with its own queues.
    const all = await stageTargets({ stage: 'prod', service: 'quota-orchestrator', region: 'eu-west-3' });
    for (const t of all) t.destroy();
    expect(all.map((t) => [t.lane, t.queueUrls['fifo-dlq'].split('/').pop()])).toEqual([
      ['default', 'quota-orchestrator-prod-fifo-dlq.fifo'],
      ['gpt', 'quota-orchestrator-prod-gpt-fifo-dlq.fifo'],
    ]);
  });

  it("names the variable when the function's configuration does not parse", async () => {
    lambda.on(GetFunctionConfigurationCommand).resolves({ Environment: { Variables: { LANE: 'default' } } });

    await expect(stageTarget(options)).rejects.toThrow(
      /^the configuration in function quota-orchestrator-prod-orchestrator does not parse: QUOTAS: must be set/,
    );
  });
});

describe('localTarget', () => {
  it('says how to start a local stack when its file is missing', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ops-')), 'local-stack.json');

    expect(() => localTargets(file, 'default')).toThrow(
      `no local stack file at ${file}: start one with \`npm start -- --keep\` (it writes out/local-stack.json), or pass the file it wrote`,
    );
  });

  it('refuses a file `npm start -- --keep` did not write', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ops-')), 'other.json');
    writeFileSync(file, JSON.stringify({ version: 1, region: 'us-east-1' }));

    expect(() => localTargets(file, 'default')).toThrow(
      /is not one `npm start -- --keep` wrote: credentials is missing or invalid/,
    );
  });
});
