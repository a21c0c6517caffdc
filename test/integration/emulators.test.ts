import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { testDynamoClient, testSqsClient, uniqueName } from '../helpers/awsClients';

describe('the emulators started by globalSetup', () => {
  it('serve DynamoDB on 127.0.0.1', async () => {
    expect(process.env.QO_TEST_DYNAMODB_ENDPOINT).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const tables = await testDynamoClient().send(new ListTablesCommand({}));
    expect(Array.isArray(tables.TableNames)).toBe(true);
  });

  it('serve SQS on 127.0.0.1, round-tripping a message', async () => {
    expect(process.env.QO_TEST_SQS_ENDPOINT).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const sqs = testSqsClient();
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('emulator-check') }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'ping' }));
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    expect(received.Messages?.map((m) => m.Body)).toEqual(['ping']);
  });
});
