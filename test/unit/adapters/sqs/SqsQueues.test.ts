import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiptHandleIsInvalid,
  ReceiveMessageCommand,
  SQSClient,
  SQSServiceException,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { PACKED_ATTRIBUTES } from '../../../../lib/adapters/sqs/fitAttributes';
import { SqsQueues } from '../../../../lib/adapters/sqs/SqsQueues';
import { ConfigError } from '../../../../lib/errors';
import type { QueueName } from '../../../../lib/ports/QueueReceiver';
import { thrown } from '../../../helpers/thrown';

const URLS: Record<QueueName, string> = {
  main: 'https://sqs.test/1/main',
  fifo: 'https://sqs.test/1/fifo.fifo',
  requeue: 'https://sqs.test/1/requeue',
  bulk: 'https://sqs.test/1/bulk',
  'main-dlq': 'https://sqs.test/1/main-dlq',
  'fifo-dlq': 'https://sqs.test/1/fifo-dlq.fifo',
  'requeue-dlq': 'https://sqs.test/1/requeue-dlq',
  'bulk-dlq': 'https://sqs.test/1/bulk-dlq',
};

const sqsMock = mockClient(SQSClient);

function queues(): SqsQueues {
  return new SqsQueues({ client: new SQSClient({ region: 'us-east-1' }), queueUrls: URLS });
}

/** An SQS error as the SDK deserialises it: a named exception with a fault and metadata. */
function sqsError(name: string, message: string): SQSServiceException {
  return new SQSServiceException({ name, $fault: 'client', message, $metadata: { httpStatusCode: 400 } });
}

function sentInput(n = 0) {
  const call = sqsMock.commandCalls(SendMessageCommand)[n];
  if (call === undefined) throw new Error(`expected SendMessage call #${n}`);
  return call.args[0].input;
}

beforeEach(() => {
  sqsMock.reset();
});

describe('SqsQueues', () => {
  describe('constructor', () => {
    it('refuses a FIFO queue name whose URL is not a FIFO queue, and the reverse', () => {
      const error = thrown(
        ConfigError,
        () =>
          new SqsQueues({ client: new SQSClient({}), queueUrls: { ...URLS, 'fifo-dlq': 'https://sqs.test/1/dlq' } }),
      );
      expect(error.field).toBe('queueUrls.fifo-dlq');
      expect(error.message).toMatch(/FIFO/);
      expect(
        thrown(
          ConfigError,
          () => new SqsQueues({ client: new SQSClient({}), queueUrls: { ...URLS, main: 'https://sqs.test/1/x.fifo' } }),
        ).field,
      ).toBe('queueUrls.main');
    });

    it('refuses a missing queue URL', () => {
      const queueUrls = Object.fromEntries(Object.entries(URLS).filter(([queue]) => queue !== 'requeue')) as Record<
        QueueName,
        string
      >;
      expect(thrown(ConfigError, () => new SqsQueues({ client: new SQSClient({}), queueUrls })).field).toBe(
        'queueUrls.requeue',
      );
    });
  });

  describe('receive', () => {
    it('asks for every attribute, the receive count and the group, converting ms to SQS seconds', async () => {
      sqsMock.on(ReceiveMessageCommand).resolves({});
      await expect(queues().receive('requeue', { max: 4, visibilityMs: 30_001, waitMs: 1_499 })).resolves.toEqual([]);
      expect(sqsMock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input).toEqual({
        QueueUrl: URLS.requeue,
        MaxNumberOfMessages: 4,
        VisibilityTimeout: 31,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'],
      });
    });

    it('clamps options to the SQS ranges and refuses NaN', async () => {
      sqsMock.on(ReceiveMessageCommand).resolves({ Messages: [] });
      const q = queues();
      await q.receive('main', { max: 50, visibilityMs: 1e12, waitMs: 60_000 });
      await q.receive('main', { max: 0, visibilityMs: -5, waitMs: -1 });
      const inputs = sqsMock.commandCalls(ReceiveMessageCommand).map((c) => c.args[0].input);
      expect(inputs.map((i) => [i.MaxNumberOfMessages, i.VisibilityTimeout, i.WaitTimeSeconds])).toEqual([
        [10, 43_200, 20],
        [1, 0, 0],
      ]);
      await expect(q.receive('main', { max: 1, visibilityMs: Number.NaN, waitMs: 0 })).rejects.toThrow(RangeError);
    });

    it('maps messages: attributes as text (binary as base64), group, receive count, and unpacks packed attributes', async () => {
      sqsMock.on(ReceiveMessageCommand).resolves({
        Messages: [
          {
            MessageId: 'm1',
            ReceiptHandle: 'r1',
            Body: '{"n":1}',
            Attributes: { ApproximateReceiveCount: '3', MessageGroupId: 'g' },
            MessageAttributes: {
              cost: { DataType: 'Number', StringValue: '2' },
              blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 1, 255]) },
              [PACKED_ATTRIBUTES]: {
                DataType: 'String',
                StringValue: JSON.stringify({ note: { dataType: 'String', value: '' } }),
              },
            },
          },
        ],
      });
      await expect(queues().receive('fifo', { max: 10, visibilityMs: 1000, waitMs: 0 })).resolves.toEqual([
        {
          queue: 'fifo',
          messageId: 'm1',
          receiptHandle: 'r1',
          body: '{"n":1}',
          attributes: {
            cost: { dataType: 'Number', value: '2' },
            blob: { dataType: 'Binary', value: 'AAH/' },
            note: { dataType: 'String', value: '' },
          },
          groupId: 'g',
          receiveCount: 3,
        },
      ]);
    });

    it('throws a clear error when SQS leaves out an id, the body or the receive count', async () => {
      const complete = {
        MessageId: 'm1',
        ReceiptHandle: 'r1',
        Body: 'x',
        Attributes: { ApproximateReceiveCount: '1' },
      };
      const cases: Array<[object, RegExp]> = [
        [{ ...complete, MessageId: undefined }, /without MessageId/],
        [{ ...complete, ReceiptHandle: undefined, Body: undefined }, /without ReceiptHandle, Body/],
        [{ ...complete, Attributes: {} }, /ApproximateReceiveCount/],
        [{ ...complete, MessageAttributes: { a: { DataType: 'String' } } }, /attribute 'a'.*StringValue/],
        [{ ...complete, MessageAttributes: { b: { DataType: 'Binary' } } }, /attribute 'b'.*BinaryValue/],
      ];
      for (const [message, error] of cases) {
        sqsMock.on(ReceiveMessageCommand).resolves({ Messages: [message] });
        await expect(queues().receive('main', { max: 1, visibilityMs: 0, waitMs: 0 })).rejects.toThrow(error);
      }
    });
  });

  describe('send', () => {
    it('sends a standard message with its delay rounded up to whole seconds', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      await queues().send('requeue', {
        body: 'b',
        delayMs: 1_001,
        attributes: { attempt: { dataType: 'Number', value: '2' } },
      });
      expect(sentInput()).toEqual({
        QueueUrl: URLS.requeue,
        MessageBody: 'b',
        DelaySeconds: 2,
        MessageAttributes: { attempt: { DataType: 'Number', StringValue: '2' } },
      });
    });

    it('clamps the delay to 0..900 s and sends no attributes when there are none', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      const q = queues();
      await q.send('main', { body: 'a', delayMs: 2_000_000 });
      await q.send('main', { body: 'b' });
      expect([sentInput(0).DelaySeconds, sentInput(1).DelaySeconds]).toEqual([900, 0]);
      expect(sentInput(1).MessageAttributes).toBeUndefined();
    });

    it('sends binary attributes as bytes decoded from base64', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      await queues().send('main', { body: 'a', attributes: { blob: { dataType: 'Binary.gz', value: 'AAH/' } } });
      const blob = sentInput().MessageAttributes?.blob;
      expect(blob?.DataType).toBe('Binary.gz');
      expect([...(blob?.BinaryValue ?? [])]).toEqual([0, 1, 255]);
    });

    it('packs attributes beyond the SQS limit of 10', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      const attributes = Object.fromEntries(
        Array.from({ length: 12 }, (_, i) => [
          `a${String(i).padStart(2, '0')}`,
          { dataType: 'String', value: `v${i}` },
        ]),
      );
      await queues().send('main', { body: 'a', attributes });
      expect(Object.keys(sentInput().MessageAttributes ?? {})).toHaveLength(10);
      expect(sentInput().MessageAttributes?.[PACKED_ATTRIBUTES]?.StringValue).toBe(
        JSON.stringify({ a09: attributes.a09, a10: attributes.a10, a11: attributes.a11 }),
      );
    });

    it('sends a FIFO message with its group and deduplication id, without a delay', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      await queues().send('fifo-dlq', { body: 'x', groupId: 'g', deduplicationId: 'd-1', delayMs: 0 });
      expect(sentInput()).toEqual({
        QueueUrl: URLS['fifo-dlq'],
        MessageBody: 'x',
        MessageGroupId: 'g',
        MessageDeduplicationId: 'd-1',
      });
    });

    it('gives a FIFO message without a deduplication id a fresh one each time', async () => {
      sqsMock.on(SendMessageCommand).resolves({});
      const q = queues();
      await q.send('fifo', { body: 'x', groupId: 'g' });
      await q.send('fifo', { body: 'x', groupId: 'g' });
      const ids = [sentInput(0).MessageDeduplicationId, sentInput(1).MessageDeduplicationId];
      expect(ids[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(ids[1]).not.toBe(ids[0]);
    });

    it('refuses, before calling SQS, a FIFO message without a group or with a delay, and a standard one with a deduplication id', async () => {
      const q = queues();
      await expect(q.send('fifo', { body: 'x' })).rejects.toThrow(/FIFO queue 'fifo' needs a groupId/);
      await expect(q.send('fifo', { body: 'x', groupId: 'g', delayMs: 1 })).rejects.toThrow(/per-message delays/);
      await expect(q.send('main', { body: 'x', deduplicationId: 'd' })).rejects.toThrow(/deduplicationId/);
      await expect(q.send('main', { body: 'x', delayMs: Number.NaN })).rejects.toThrow(RangeError);
      expect(sqsMock.commandCalls(SendMessageCommand)).toHaveLength(0);
    });
  });

  describe('sendBatch', () => {
    it('returns the entries SQS refused and every entry of a request that failed as a whole, after making every request', async () => {
      sqsMock
        .on(SendMessageBatchCommand)
        .resolvesOnce({
          Successful: [],
          Failed: [{ Id: '3', Code: 'InvalidMessageContents', Message: 'bad character', SenderFault: true }],
        })
        .rejectsOnce(sqsError('InternalError', 'We encountered an internal error'));
      const messages = Array.from({ length: 12 }, (_, i) => ({ body: `m${i}` }));
      await expect(queues().sendBatch('requeue', messages)).resolves.toEqual([
        { index: 3, reason: 'InvalidMessageContents bad character' },
        { index: 10, reason: 'We encountered an internal error' },
        { index: 11, reason: 'We encountered an internal error' },
      ]);
      expect(
        sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries?.map((e) => e.Id)),
      ).toEqual([
        ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'],
        ['10', '11'],
      ]);
    });

    it('refuses a message send would refuse before making any request', async () => {
      await expect(queues().sendBatch('fifo', [{ body: 'x', groupId: 'g' }, { body: 'y' }])).rejects.toThrow(
        "send to FIFO queue 'fifo' needs a groupId",
      );
      expect(sqsMock.calls()).toHaveLength(0);
    });
  });

  describe('delete', () => {
    it('deletes by receipt handle', async () => {
      sqsMock.on(DeleteMessageCommand).resolves({});
      await queues().delete('main-dlq', 'r1');
      expect(sqsMock.commandCalls(DeleteMessageCommand)[0]?.args[0].input).toEqual({
        QueueUrl: URLS['main-dlq'],
        ReceiptHandle: 'r1',
      });
    });

    it('ignores an invalid receipt handle', async () => {
      sqsMock
        .on(DeleteMessageCommand)
        .rejects(new ReceiptHandleIsInvalid({ message: 'The input receipt handle is invalid.', $metadata: {} }));
      await expect(queues().delete('main', 'gone')).resolves.toBeUndefined();
    });

    it('ignores the error FIFO queues return for an expired receipt handle, however the code is prefixed', async () => {
      const message = 'Value r1 for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.';
      for (const name of ['InvalidParameterValue', 'AWS.SimpleQueueService.InvalidParameterValue']) {
        sqsMock.on(DeleteMessageCommand).rejects(sqsError(name, message));
        await expect(queues().delete('fifo', 'r1')).resolves.toBeUndefined();
      }
    });

    it('rethrows any other error', async () => {
      sqsMock
        .on(DeleteMessageCommand)
        .rejects(sqsError('InvalidParameterValue', 'Value x for parameter QueueUrl is invalid.'));
      await expect(queues().delete('main', 'r1')).rejects.toThrow(/QueueUrl/);
      sqsMock
        .on(DeleteMessageCommand)
        .rejects(sqsError('AWS.SimpleQueueService.NonExistentQueue', 'The specified queue does not exist.'));
      await expect(queues().delete('main', 'r1')).rejects.toThrow(/does not exist/);
      sqsMock.on(DeleteMessageCommand).rejects(new Error('socket hang up'));
      await expect(queues().delete('main', 'r1')).rejects.toThrow(/socket hang up/);
    });
  });

  describe('changeVisibility', () => {
    it('sets the visibility in whole seconds, rounded up and clamped to 0..43 200', async () => {
      sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
      const q = queues();
      await q.changeVisibility('fifo', 'r1', 1);
      await q.changeVisibility('fifo', 'r1', 0);
      await q.changeVisibility('fifo', 'r1', 1e12);
      const inputs = sqsMock.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input);
      expect(inputs[0]).toEqual({ QueueUrl: URLS.fifo, ReceiptHandle: 'r1', VisibilityTimeout: 1 });
      expect(inputs.map((i) => i.VisibilityTimeout)).toEqual([1, 0, 43_200]);
    });

    it('lets SQS errors through', async () => {
      sqsMock
        .on(ChangeMessageVisibilityCommand)
        .rejects(
          sqsError('MessageNotInflight', 'Message does not exist or is not available for visibility timeout change.'),
        );
      await expect(queues().changeVisibility('main', 'r1', 0)).rejects.toThrow(/not available/);
    });
  });
});
