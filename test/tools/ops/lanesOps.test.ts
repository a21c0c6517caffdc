/**
 * The operator CLI on a stack of several lanes: the local stack's file names the orchestrator's environment, whose
 * `LANES` and `QUEUE_URL_PREFIX` name each lane's settings and queues, as on a deployed stage.
 */
import { createLaneQueues } from '../../../tools/local/laneQueues';
import { createStateTable } from '../../../tools/local/stateTable';
import { LaneQueuesView } from '../../../tools/local/laneQueuesView';
import { testDynamoClient, testSqsClient, uniqueName } from '../../helpers/awsClients';
import { jsonOf, localStackFile, ops } from './opsIo';

const sqs = testSqsClient();
const dynamodb = testDynamoClient();
let file: string;
let gptQueues: Awaited<ReturnType<typeof createLaneQueues>>;

beforeAll(async () => {
  const prefix = uniqueName('lanes-ops');
  const tableName = `${prefix}-state`;
  const [defaultQueues, gpt] = await Promise.all([
    createLaneQueues(sqs, prefix),
    createLaneQueues(sqs, `${prefix}-gpt`),
    createStateTable(dynamodb, tableName),
  ]);
  gptQueues = gpt;
  const environment = {
    QUEUE_URL_PREFIX: defaultQueues.main.slice(0, -'main'.length),
    LANES: JSON.stringify({
      default: { QUOTAS: [{ limit: 10, per: 'second' }] },
      gpt: { QUOTAS: [{ limit: 500, per: 'minute' }] },
    }),
  };
  file = localStackFile(defaultQueues, { lane: 'default', environment, tableName });
});

afterAll(() => {
  sqs.destroy();
  dynamodb.destroy();
});

it('shows every lane when --lane is left out, each against its own limits, as one JSON document', async () => {
  const run = await ops(['--local', file, 'status', '--json']);
  const status = jsonOf<{ lanes: Record<string, { lane: string; tiers: { limit: number }[] }> }>(run);
  expect(run.code).toBe(0);
  expect(Object.keys(status.lanes)).toEqual(['default', 'gpt']);
  expect(status.lanes.gpt).toMatchObject({ lane: 'gpt', tiers: [expect.objectContaining({ limit: 500 })] });

  const text = await ops(['--local', file, 'status']);
  expect(text.stdout).toMatch(/^lane default:\n[\s\S]*\nlane gpt:\n/);
});

it('sends jobs to the lane --lane names, and refuses to guess one among several', async () => {
  const guessed = await ops(['--local', file, 'enqueue'], '{"body":{"id":"a"}}\n');
  expect(guessed.code).toBe(2);
  expect(guessed.stderr).toBe(
    `ops: enqueue works on one lane: pass --lane (the local stack (${file}) has lanes 'default', 'gpt')\n`,
  );

  const sent = await ops(['--local', file, '--lane', 'gpt', 'enqueue'], '{"body":{"id":"a"}}\n{"body":{"id":"b"}}\n');
  expect(sent.code).toBe(0);
  expect((await new LaneQueuesView(sqs, gptQueues).depth('main')).visible).toBe(2);
});
