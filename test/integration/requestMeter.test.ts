import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { TABLE_KEY } from '../../lib/adapters/dynamodb/DynamoTable';
import { countRequests, dynamodbUnits, isLaneItem, itemLoad, RequestMeter } from '../../tools/local/requestMeter';
import { createStateTable, deleteStateTable } from '../../tools/local/stateTable';
import { testDynamoClient, testSqsClient, uniqueName } from '../helpers/awsClients';

describe('RequestMeter', () => {
  it('counts and times each command of the clients it is attached to, by service and command name', async () => {
    let now = 0;
    const meter = new RequestMeter(() => (now += 5));
    const sqs = meter.attach(testSqsClient(), 'sqs');
    const QueueName = uniqueName('metered');
    await sqs.send(new CreateQueueCommand({ QueueName }));
    await sqs.send(new GetQueueUrlCommand({ QueueName }));
    await sqs.send(new GetQueueUrlCommand({ QueueName }));

    expect(meter.snapshot()).toEqual({
      'sqs.CreateQueueCommand': { count: 1, ms: 5, units: 0 },
      'sqs.GetQueueUrlCommand': { count: 2, ms: 10, units: 0 },
    });
    expect(countRequests(meter.snapshot(), 'sqs')).toBe(3);
    expect(countRequests(meter.snapshot(), 'dynamodb')).toBe(0);
  });

  it('counts a command that fails', async () => {
    const meter = new RequestMeter();
    const sqs = meter.attach(testSqsClient(), 'sqs');
    await expect(sqs.send(new GetQueueUrlCommand({ QueueName: uniqueName('missing') }))).rejects.toThrow();
    expect(meter.snapshot()['sqs.GetQueueUrlCommand']?.count).toBe(1);
  });

  it('sums the capacity units DynamoDB reports, by item size, reads and writes apart; a refused write counts one', async () => {
    const client = testDynamoClient();
    const TableName = uniqueName('metered');
    await createStateTable(client, TableName);
    try {
      const meter = new RequestMeter();
      const metered = meter.attach(testDynamoClient(), 'dynamodb');
      const Key = { [TABLE_KEY]: { S: 'big' } };
      // About 2.5 KB: three write units; one strongly consistent read unit (up to 4 KB).
      await metered.send(new PutItemCommand({ TableName, Item: { ...Key, text: { S: 'x'.repeat(2_500) } } }));
      await metered.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));
      await expect(
        metered.send(
          new UpdateItemCommand({
            TableName,
            Key,
            UpdateExpression: 'SET n = :n',
            ConditionExpression: 'attribute_not_exists(#k)',
            ExpressionAttributeNames: { '#k': TABLE_KEY },
            ExpressionAttributeValues: { ':n': { N: '1' } },
          }),
        ),
      ).rejects.toThrow();

      expect(meter.snapshot()).toMatchObject({
        'dynamodb.PutItemCommand': { count: 1, units: 3 },
        'dynamodb.GetItemCommand': { count: 1, units: 1 },
        'dynamodb.UpdateItemCommand': { count: 1, units: 1 },
      });
      expect(dynamodbUnits(meter.snapshot())).toEqual({ read: 1, write: 4 });
    } finally {
      await deleteStateTable(client, TableName);
    }
  });

  it('keeps each write to an item with its key, units and when it was sent, and sums them by item and second', async () => {
    const client = testDynamoClient();
    const TableName = uniqueName('metered');
    await createStateTable(client, TableName);
    try {
      let now = 0;
      const meter = new RequestMeter(() => now);
      const metered = meter.attach(testDynamoClient(), 'dynamodb');
      const Key = { [TABLE_KEY]: { S: 'lane#a' } };
      await metered.send(new PutItemCommand({ TableName, Item: { ...Key, text: { S: 'x'.repeat(1_500) } } }));
      now = 400;
      await metered.send(
        new UpdateItemCommand({
          TableName,
          Key,
          UpdateExpression: 'SET n = :n',
          ExpressionAttributeValues: { ':n': { N: '1' } },
        }),
      );
      now = 1_200;
      await metered.send(
        new UpdateItemCommand({
          TableName,
          Key: { [TABLE_KEY]: { S: 'lane#a' } },
          UpdateExpression: 'REMOVE #t',
          ExpressionAttributeNames: { '#t': 'text' },
        }),
      );
      await metered.send(
        new PutItemCommand({ TableName, Item: { [TABLE_KEY]: { S: 'idem#k' }, text: { S: 'x'.repeat(3_000) } } }),
      );
      await metered.send(new GetItemCommand({ TableName, Key }));

      expect(meter.itemWrites).toEqual([
        { key: 'lane#a', at: 0, units: 2 },
        { key: 'lane#a', at: 400, units: 2 },
        { key: 'lane#a', at: 1_200, units: 2 },
        { key: 'idem#k', at: 1_200, units: 3 },
      ]);
      // The second 1 holds 5 units, but on two items: the busiest item's second is lane#a's first, 4 units.
      expect(itemLoad(meter.itemWrites)).toEqual({
        largestWriteKb: 3,
        largestItem: 'idem#k',
        peakWriteUnitsPerSecond: 4,
        peakItem: 'lane#a',
      });
      expect(itemLoad(meter.itemWrites.filter(isLaneItem))).toMatchObject({ largestWriteKb: 2, largestItem: 'lane#a' });
      expect(itemLoad([])).toEqual({ largestWriteKb: 0, largestItem: '', peakWriteUnitsPerSecond: 0, peakItem: '' });
    } finally {
      await deleteStateTable(client, TableName);
    }
  });
});
