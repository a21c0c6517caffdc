import { GetQueueUrlCommand, SendMessageBatchCommand, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import {
  MAX_RESULT_MESSAGE_BYTES,
  queueOfArn,
  SqsResultDestination,
} from '../../../../lib/adapters/results/SqsResultDestination';
import type { JobResult } from '../../../../lib/ports/ResultHandler';
import { jobResult } from '../../../helpers/jobResults';

const sqsMock = mockClient(SQSClient);
const client = new SQSClient({ region: 'us-east-1' });

const result = jobResult;

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  sqsMock.on(GetQueueUrlCommand).callsFake((input: { QueueName: string; QueueOwnerAWSAccountId: string }) => ({
    QueueUrl: `https://sqs.test/${input.QueueOwnerAWSAccountId}/${input.QueueName}`,
  }));
});

const requests = () => sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);

describe('queueOfArn', () => {
  it("is the queue's owner account and name", () => {
    expect(queueOfArn('arn:aws-cn:sqs:cn-north-1:123456789012:r.fifo')).toEqual({
      account: '123456789012',
      name: 'r.fifo',
    });
    expect(() => queueOfArn('arn:aws:sns:us-east-1:123456789012:topic')).toThrow('not the ARN of an SQS queue');
  });
});

describe('SqsResultDestination', () => {
  describe('deliver', () => {
    it('sends each result as a message whose body is its JSON, ten to a request', async () => {
      const destination = new SqsResultDestination({ client, queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' });
      const results = Array.from({ length: 12 }, (_, i) => result(i));
      await expect(destination.deliver(results)).resolves.toEqual([]);
      expect(requests().map((r) => [r.QueueUrl, r.Entries?.length])).toEqual([
        ['https://sqs.test/123456789012/results', 10],
        ['https://sqs.test/123456789012/results', 2],
      ]);
      expect(requests()[0]?.Entries?.[3]).toEqual({ Id: '3', MessageBody: JSON.stringify(result(3)) });
    });

    it("asks the queue's URL once, by name and owner, and again only after it failed", async () => {
      sqsMock
        .on(GetQueueUrlCommand)
        .rejectsOnce(
          new SQSServiceException({ name: 'QueueDoesNotExist', $fault: 'client', message: 'not yet', $metadata: {} }),
        )
        .resolves({ QueueUrl: 'https://sqs.test/123456789012/results' });
      const destination = new SqsResultDestination({ client, queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' });
      await expect(destination.deliver([result(0)])).resolves.toEqual([
        { result: result(0), reason: 'GetQueueUrl failed: QueueDoesNotExist: not yet' },
      ]);
      await destination.deliver([result(1)]);
      await destination.deliver([result(2)]);
      expect(sqsMock.commandCalls(GetQueueUrlCommand).map((call) => call.args[0].input)).toEqual([
        { QueueName: 'results', QueueOwnerAWSAccountId: '123456789012' },
        { QueueName: 'results', QueueOwnerAWSAccountId: '123456789012' },
      ]);
      expect(requests()).toHaveLength(2);
    });

    it('cuts a body too large for a message, and sends results that fill a request in requests of their own', async () => {
      const destination = new SqsResultDestination({ client, queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' });
      const big = 'x'.repeat(MAX_RESULT_MESSAGE_BYTES);
      await destination.deliver([result(0, { body: big }), result(1, { body: big })]);
      const sent = requests().map((r) => r.Entries?.map((e) => JSON.parse(e.MessageBody ?? '') as JobResult));
      expect(sent.map((entries) => entries?.length)).toEqual([1, 1]);
      expect(sent[0]?.[0]?.bodyTruncated).toBe(true);
      expect(Buffer.byteLength(requests()[0]?.Entries?.[0]?.MessageBody ?? '')).toBeLessThanOrEqual(
        MAX_RESULT_MESSAGE_BYTES,
      );
    });

    it("sets a FIFO queue's group (the job's, else its dispatch) and deduplication id (the dispatch)", async () => {
      const destination = new SqsResultDestination({
        client,
        queueArn: 'arn:aws:sqs:us-east-1:123456789012:results.fifo',
      });
      await destination.deliver([result(0, { queue: 'fifo', groupId: 'g' }), result(1)]);
      expect(requests()[0]?.Entries?.map((e) => [e.MessageGroupId, e.MessageDeduplicationId])).toEqual([
        ['g', 'd-0'],
        ['d-1', 'd-1'],
      ]);
    });

    it('returns the entries SQS refuses, and every result of a request that failed, with why', async () => {
      sqsMock
        .on(SendMessageBatchCommand)
        .resolvesOnce({
          Successful: [],
          Failed: [{ Id: '1', Code: 'AccessDenied', SenderFault: true, Message: 'not allowed' }],
        })
        .rejectsOnce(
          new SQSServiceException({ name: 'QueueDoesNotExist', $fault: 'client', message: 'gone', $metadata: {} }),
        );
      const destination = new SqsResultDestination({ client, queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' });
      const results = Array.from({ length: 11 }, (_, i) => result(i));
      await expect(destination.deliver(results)).resolves.toEqual([
        { result: results[1], reason: 'SQS refused the result: AccessDenied not allowed' },
        { result: results[10], reason: 'SendMessageBatch failed: QueueDoesNotExist: gone' },
      ]);
    });
  });
});
