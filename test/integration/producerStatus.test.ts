import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoIdempotencyStore } from '../../lib/adapters/dynamodb/DynamoIdempotencyStore';
import { status } from '../../lib/producer';
import { createStateTable, deleteStateTable } from '../../tools/local/stateTable';
import { testDynamoClient, uniqueName } from '../helpers/awsClients';

describe("the producer client's status, on the emulated state table", () => {
  const client = testDynamoClient();
  const dynamodb = DynamoDBDocumentClient.from(client);
  const tableName = uniqueName('status');
  const now = Date.now();
  const later = now + 86_400_000;
  const store = (lane?: string) => new DynamoIdempotencyStore({ client: dynamodb, tableName }, lane);

  beforeAll(() => createStateTable(client, tableName));
  afterAll(async () => {
    await deleteStateTable(client, tableName);
    client.destroy();
  });

  it("reads what the workers recorded of a job, by its key, in its lane's own keys", async () => {
    await store().putIdempotency('job-1', {
      status: 'succeeded',
      dispatchId: 'd-1',
      at: now - 1_000,
      expiresAt: later,
    });
    await store('gpt-4o').putIdempotency(
      'job-1',
      { status: 'dead-lettered', dispatchId: 'd-2', at: now - 500, expiresAt: later, reason: 'permanent: 400' },
      { spentAttempt: true },
    );

    await expect(status('job-1', { dynamodb, tableName })).resolves.toEqual({
      state: 'succeeded',
      at: now - 1_000,
      dispatchId: 'd-1',
    });
    await expect(status('job-1', { dynamodb, tableName, lane: 'gpt-4o' })).resolves.toEqual({
      state: 'dead-lettered',
      at: now - 500,
      dispatchId: 'd-2',
      reason: 'permanent: 400',
      attemptsSpent: 1,
    });
    await expect(status('job-2', { dynamodb, tableName })).resolves.toEqual({ state: 'none' });
  });

  it("reads a claim whose worker's time is up by its batch's record", async () => {
    const claim = { status: 'in-progress' as const, expiresAt: later, batch: { id: 'b-1', busyUntil: now - 1 } };
    await store().putIdempotency('job-3', { ...claim, dispatchId: 'd-3' });
    await store().putIdempotency('job-4', { ...claim, dispatchId: 'd-4' });
    await store().recordBatchSuccesses('b-1', {
      at: now - 100,
      expiresAt: later,
      jobs: [{ dispatchId: 'd-3', usage: { input_tokens: 812, output_tokens: 96 } }],
      result: 'eventbridge jobs',
    });

    await expect(status('job-3', { dynamodb, tableName })).resolves.toEqual({
      state: 'succeeded',
      at: now - 100,
      dispatchId: 'd-3',
      usage: { input_tokens: 812, output_tokens: 96 },
      result: 'eventbridge jobs',
    });
    await expect(status('job-4', { dynamodb, tableName })).resolves.toMatchObject({ state: 'retrying' });
  });
});
