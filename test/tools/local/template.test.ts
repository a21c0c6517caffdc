import { LocalStack, type Template } from '../../../tools/local/template';

const QUEUE_ARN = 'arn:aws:sqs:us-east-1:000000000000:qo-dev-main';
const DLQ_ARN = 'arn:aws:sqs:us-east-1:000000000000:qo-dev-main-dlq';
const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:000000000000:table/qo-dev-state';

const TEMPLATE: Template = {
  Resources: {
    StateTable: { Type: 'AWS::DynamoDB::Table', Properties: { TableName: 'qo-dev-state' } },
    MainQueue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'qo-dev-main' } },
    MainDlq: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'qo-dev-main-dlq' } },
    WorkerLambdaFunction: {
      Type: 'AWS::Lambda::Function',
      Properties: {
        FunctionName: 'qo-dev-worker',
        Code: { S3Bucket: { Ref: 'ServerlessDeploymentBucket' }, S3Key: 'worker.zip' },
        Role: { 'Fn::GetAtt': ['WorkerRole', 'Arn'] },
        Environment: { Variables: { TABLE_NAME: { Ref: 'StateTable' }, MAIN_QUEUE_URL: { Ref: 'MainQueue' } } },
        Timeout: 30,
      },
    },
  },
};

/** A stack with the template's table, queues and worker recorded as `provisionStack` would. */
function stack(): LocalStack {
  const s = new LocalStack(TEMPLATE);
  s.define('StateTable', { ref: 'qo-dev-state', attributes: { Arn: TABLE_ARN } });
  s.define('MainQueue', {
    ref: 'http://127.0.0.1:4566/000000000000/qo-dev-main',
    attributes: {
      Arn: QUEUE_ARN,
      QueueName: 'qo-dev-main',
      QueueUrl: 'http://127.0.0.1:4566/000000000000/qo-dev-main',
    },
  });
  s.define('MainDlq', {
    ref: 'http://127.0.0.1:4566/000000000000/qo-dev-main-dlq',
    attributes: {
      Arn: DLQ_ARN,
      QueueName: 'qo-dev-main-dlq',
      QueueUrl: 'http://127.0.0.1:4566/000000000000/qo-dev-main-dlq',
    },
  });
  s.define('WorkerLambdaFunction', {
    ref: 'qo-dev-worker',
    attributes: { Arn: 'arn:aws:lambda:us-east-1:000000000000:function:qo-dev-worker' },
  });
  return s;
}

describe('LocalStack', () => {
  describe('resolve', () => {
    it('returns plain values unchanged', () => {
      const s = stack();

      expect(s.resolve('text')).toBe('text');
      expect(s.resolve(42)).toBe(42);
      expect(s.resolve(true)).toBe(true);
      expect(s.resolve(null)).toBeNull();
      expect(s.resolve({ a: 1, b: ['x'] })).toEqual({ a: 1, b: ['x'] });
    });

    it('resolves Ref of a resource to its physical id', () => {
      const s = stack();

      expect(s.resolve({ Ref: 'StateTable' })).toBe('qo-dev-state');
      expect(s.resolve({ Ref: 'MainQueue' })).toBe('http://127.0.0.1:4566/000000000000/qo-dev-main');
      expect(s.resolve({ Ref: 'WorkerLambdaFunction' })).toBe('qo-dev-worker');
    });

    it.each([
      ['AWS::Region', 'us-east-1'],
      ['AWS::AccountId', '000000000000'],
      ['AWS::Partition', 'aws'],
    ])('resolves Ref of the pseudo parameter %s to the local account', (name, value) => {
      expect(stack().resolve({ Ref: name })).toBe(value);
    });

    it('resolves Fn::GetAtt in its array and its dotted form', () => {
      const s = stack();

      expect(s.resolve({ 'Fn::GetAtt': ['MainQueue', 'Arn'] })).toBe(QUEUE_ARN);
      expect(s.resolve({ 'Fn::GetAtt': 'MainQueue.QueueName' })).toBe('qo-dev-main');
      expect(s.resolve({ 'Fn::GetAtt': 'StateTable.Arn' })).toBe(TABLE_ARN);
    });

    it('resolves Fn::Join, resolving its parts first', () => {
      const joined = stack().resolve({
        'Fn::Join': [
          ':',
          [
            'arn',
            { Ref: 'AWS::Partition' },
            'sqs',
            { Ref: 'AWS::Region' },
            { 'Fn::GetAtt': ['MainQueue', 'QueueName'] },
          ],
        ],
      });

      expect(joined).toBe('arn:aws:sqs:us-east-1:qo-dev-main');
    });

    it('substitutes ${X} with a Ref and ${X.Attr} with a Fn::GetAtt in Fn::Sub', () => {
      const s = stack();

      expect(s.resolve({ 'Fn::Sub': 'table ${StateTable} in ${AWS::Region}, queue ${MainQueue.Arn}' })).toBe(
        `table qo-dev-state in us-east-1, queue ${QUEUE_ARN}`,
      );
      expect(s.resolve({ 'Fn::Sub': ['${MainDlq.Arn}/*', {}] })).toBe(`${DLQ_ARN}/*`);
    });

    it('resolves intrinsics nested in objects and arrays', () => {
      const resolved = stack().resolve({
        Statement: [
          { Effect: 'Allow', Resource: [{ 'Fn::GetAtt': ['MainQueue', 'Arn'] }, { 'Fn::GetAtt': ['MainDlq', 'Arn'] }] },
        ],
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['MainDlq', 'Arn'] }, maxReceiveCount: 5 },
        Tags: [{ Key: 'table', Value: { Ref: 'StateTable' } }],
      });

      expect(resolved).toEqual({
        Statement: [{ Effect: 'Allow', Resource: [QUEUE_ARN, DLQ_ARN] }],
        RedrivePolicy: { deadLetterTargetArn: DLQ_ARN, maxReceiveCount: 5 },
        Tags: [{ Key: 'table', Value: 'qo-dev-state' }],
      });
    });

    it('refuses an intrinsic it does not know, naming it', () => {
      expect(() => stack().resolve({ 'Fn::If': ['IsProd', 'a', 'b'] })).toThrow('the local run cannot resolve Fn::If');
      expect(() => stack().resolve({ Nested: { 'Fn::ImportValue': 'shared-vpc' } })).toThrow(
        'the local run cannot resolve Fn::ImportValue',
      );
    });

    it('refuses a Ref to a resource it has not created, naming the resource', () => {
      expect(() => stack().resolve({ Ref: 'ServerlessDeploymentBucket' })).toThrow(
        "the local run has no resource 'ServerlessDeploymentBucket' to resolve",
      );
      expect(() => stack().resolve({ 'Fn::Sub': '${Missing}-x' })).toThrow(
        "the local run has no resource 'Missing' to resolve",
      );
    });

    it('refuses a Fn::GetAtt of an unknown resource or attribute, naming both', () => {
      expect(() => stack().resolve({ 'Fn::GetAtt': ['WorkerRole', 'Arn'] })).toThrow(
        'the local run cannot resolve Fn::GetAtt WorkerRole.Arn',
      );
      expect(() => stack().resolve({ 'Fn::GetAtt': 'StateTable.StreamArn' })).toThrow(
        'the local run cannot resolve Fn::GetAtt StateTable.StreamArn',
      );
      expect(() => stack().resolve({ 'Fn::Sub': '${MainQueue.Missing}' })).toThrow(
        'the local run cannot resolve Fn::GetAtt MainQueue.Missing',
      );
    });
  });

  describe('properties', () => {
    it('resolves every property when no keys are given', () => {
      expect(stack().properties('StateTable')).toEqual({ TableName: 'qo-dev-state' });
    });

    it('resolves only the picked keys, so an unresolvable property left out does not throw', () => {
      const s = stack();

      expect(s.properties('WorkerLambdaFunction', ['FunctionName', 'Environment', 'Timeout'])).toEqual({
        FunctionName: 'qo-dev-worker',
        Environment: {
          Variables: { TABLE_NAME: 'qo-dev-state', MAIN_QUEUE_URL: 'http://127.0.0.1:4566/000000000000/qo-dev-main' },
        },
        Timeout: 30,
      });
      expect(() => s.properties('WorkerLambdaFunction')).toThrow(/ServerlessDeploymentBucket|WorkerRole/);
    });

    it('is empty for a resource the template does not have', () => {
      expect(stack().properties('Nothing')).toEqual({});
    });
  });

  describe('queueUrlOfArn', () => {
    it('finds the URL of a created queue from its ARN', () => {
      expect(stack().queueUrlOfArn(DLQ_ARN)).toBe('http://127.0.0.1:4566/000000000000/qo-dev-main-dlq');
    });

    it('refuses an ARN of no queue of the stack, including a resource that is not a queue', () => {
      expect(() => stack().queueUrlOfArn('arn:aws:sqs:us-east-1:000000000000:other')).toThrow(
        'the local run has no queue with ARN arn:aws:sqs:us-east-1:000000000000:other',
      );
      expect(() => stack().queueUrlOfArn(TABLE_ARN)).toThrow(`the local run has no queue with ARN ${TABLE_ARN}`);
    });
  });

  describe('idsOf', () => {
    it('lists the logical ids of one resource type in template order', () => {
      expect(stack().idsOf('AWS::SQS::Queue')).toEqual(['MainQueue', 'MainDlq']);
      expect(stack().idsOf('AWS::IAM::Role')).toEqual([]);
    });
  });
});
