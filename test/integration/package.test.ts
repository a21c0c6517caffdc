/**
 * The package as another project gets it: `npm pack` builds and packs it, a fresh project installs the tarball, and
 * uses the producer client by the package's name (with its types) and the operator CLI as a bin.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { testEmulators, testSqsClient, uniqueName } from '../helpers/awsClients';

const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');

let consumer: string;

beforeAll(async () => {
  consumer = mkdtempSync(join(tmpdir(), 'qo-consumer-'));
  const packed = join(consumer, 'packed');
  mkdirSync(packed);
  await run('npm', ['pack', '--silent', '--pack-destination', packed], { cwd: ROOT });
  const [tarball] = readdirSync(packed);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, version: '1.0.0' }));
  await run(
    'npm',
    ['install', join(packed, String(tarball)), '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'],
    { cwd: consumer },
  );
}, 180_000);

afterAll(() => {
  rmSync(consumer, { recursive: true, force: true });
});

describe('the installed package', () => {
  it("sends a job with the producer client imported by the package's name, and refuses a bad one before sending", async () => {
    const sqs = testSqsClient();
    try {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('consumer') }));
      writeFileSync(
        join(consumer, 'produce.js'),
        `const { SQSClient } = require('@aws-sdk/client-sqs');
const { enqueue, EnqueueError } = require('quota-orchestrator');
const sqs = new SQSClient({ region: 'us-east-1', endpoint: process.env.SQS_ENDPOINT, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
const queueUrl = process.env.QUEUE_URL;
(async () => {
  const sent = await enqueue({ body: { prompt: 'hi' }, estimates: { output_tokens: 1024 }, idempotencyKey: 'job-1' }, { sqs, queueUrl });
  let refused = '';
  try { await enqueue({ body: {}, cost: -1 }, { sqs, queueUrl }); } catch (error) { refused = error instanceof EnqueueError ? error.field : 'other'; }
  console.log(JSON.stringify({ messageId: sent.messageId, refused }));
  sqs.destroy();
})();
`,
      );
      const { stdout } = await run('node', ['produce.js'], {
        cwd: consumer,
        env: { ...process.env, SQS_ENDPOINT: testEmulators().sqsEndpoint, QUEUE_URL: QueueUrl },
      });
      const printed = JSON.parse(stdout) as { messageId: string; refused: string };
      expect(printed.refused).toBe('cost');

      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ['All'], MaxNumberOfMessages: 10 }),
      );
      expect(Messages.map((m) => [m.MessageId, m.Body])).toEqual([[printed.messageId, '{"prompt":"hi"}']]);
      expect(Messages[0]?.MessageAttributes).toMatchObject({
        output_tokens: { DataType: 'Number', StringValue: '1024' },
        idempotencyKey: { DataType: 'String', StringValue: 'job-1' },
      });
    } finally {
      sqs.destroy();
    }
  }, 60_000);

  it("gives the client's types to a TypeScript project, which a wrong job fails to compile against", async () => {
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          moduleResolution: 'node16',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
        },
        files: ['typed.ts'],
      }),
    );
    const typed = (job: string) =>
      `import { enqueue, type ProducerJob } from 'quota-orchestrator';\nimport { SQSClient } from '@aws-sdk/client-sqs';\nconst job: ProducerJob = ${job};\nvoid enqueue(job, { sqs: new SQSClient({}), queueUrl: 'https://q' });\n`;
    const tsc = join(ROOT, 'node_modules/.bin/tsc');

    writeFileSync(join(consumer, 'typed.ts'), typed("{ body: { a: 1 }, estimates: { tokens: 10 }, groupId: 'g' }"));
    await expect(run(tsc, ['-p', '.'], { cwd: consumer })).resolves.toBeDefined();

    writeFileSync(join(consumer, 'typed.ts'), typed("{ body: 1, cost: 'ten' }"));
    await expect(run(tsc, ['-p', '.'], { cwd: consumer })).rejects.toMatchObject({
      stdout: expect.stringContaining("Type 'string' is not assignable to type 'number'"),
    });
  }, 60_000);

  it('gives the same names to an ES module', async () => {
    writeFileSync(
      join(consumer, 'esm.mjs'),
      "import { enqueue, enqueueMany, EnqueueError, MAX_MESSAGE_BYTES, status } from 'quota-orchestrator';\n" +
        'console.log(JSON.stringify([typeof enqueue, typeof enqueueMany, typeof EnqueueError, MAX_MESSAGE_BYTES, typeof status]));\n',
    );
    const { stdout } = await run('node', ['esm.mjs'], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual(['function', 'function', 'function', 262_144, 'function']);
  }, 30_000);

  it('runs the operator CLI as its bin, named as installed', async () => {
    const { stdout } = await run(join(consumer, 'node_modules/.bin/quota-orchestrator'), ['--help'], { cwd: consumer });
    expect(stdout).toContain('Usage: quota-orchestrator [options] [command]');
    expect(stdout).toContain('dlq');
  }, 30_000);
});
