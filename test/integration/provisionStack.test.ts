import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { provisionStack, type Template } from '../../tools/local/template';
import { testDynamoClient, testDynamoEngine, testSqsClient, uniqueName } from '../helpers/awsClients';

const dynamodb = testDynamoClient();
const sqs = testSqsClient();

describe(`provisionStack on ${testDynamoEngine()} and fauxqs`, () => {
  afterAll(() => {
    dynamodb.destroy();
    sqs.destroy();
  });

  it('creates the table, and the dead-letter queue before the queue whose RedrivePolicy points at its ARN', async () => {
    const name = uniqueName('provision');
    // The queue comes first in the template: its RedrivePolicy only resolves once the DLQ exists.
    const template: Template = {
      Resources: {
        WorkerLambdaFunction: { Type: 'AWS::Lambda::Function', Properties: { FunctionName: `${name}-worker` } },
        MainQueue: {
          Type: 'AWS::SQS::Queue',
          Properties: {
            QueueName: `${name}-main`,
            VisibilityTimeout: 45,
            RedrivePolicy: {
              deadLetterTargetArn: { 'Fn::GetAtt': ['MainDeadLetterQueue', 'Arn'] },
              maxReceiveCount: 5,
            },
          },
        },
        MainDeadLetterQueue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: `${name}-main-dlq` } },
        StateTable: {
          Type: 'AWS::DynamoDB::Table',
          Properties: {
            TableName: `${name}-state`,
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
            KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          },
        },
      },
    };

    const stack = await provisionStack(template, { dynamodb, sqs });

    expect(stack.ref('StateTable')).toBe(`${name}-state`);
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: `${name}-state` }));
    expect(Table?.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);

    const dlq = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: stack.ref('MainDeadLetterQueue'), AttributeNames: ['QueueArn'] }),
    );
    const dlqArn = dlq.Attributes?.QueueArn;
    expect(dlqArn).toMatch(new RegExp(`:${name}-main-dlq$`));
    const main = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stack.ref('MainQueue'),
        AttributeNames: ['RedrivePolicy', 'VisibilityTimeout'],
      }),
    );
    expect(JSON.parse(main.Attributes?.RedrivePolicy ?? 'null')).toEqual({
      deadLetterTargetArn: dlqArn,
      maxReceiveCount: 5,
    });
    expect(main.Attributes?.VisibilityTimeout).toBe('45');

    expect(stack.queueUrlOfArn(dlqArn ?? '')).toBe(stack.ref('MainDeadLetterQueue'));
    expect(stack.ref('WorkerLambdaFunction')).toBe(`${name}-worker`);
  });
});
