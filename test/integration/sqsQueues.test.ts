import { ChangeMessageVisibilityCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { PACKED_ATTRIBUTES } from '../../lib/adapters/sqs/fitAttributes';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import type { MessageAttribute, QueueName, ReceivedMessage, ReceiveOptions } from '../../lib/ports/QueueReceiver';
import { deadLetter } from '../../lib/services/queueOutcomes';
import { testSqsClient, uniqueName } from '../helpers/awsClients';
import { createLaneQueues } from '../../tools/local/laneQueues';

const sqs = testSqsClient();
const NOW: ReceiveOptions = { max: 10, visibilityMs: 30_000, waitMs: 0 };

async function lane(maxReceiveCount?: number): Promise<{ queues: SqsQueues; urls: Record<QueueName, string> }> {
  const urls = await createLaneQueues(
    sqs,
    uniqueName('sqsq'),
    maxReceiveCount === undefined ? {} : { maxReceiveCount },
  );
  return { queues: new SqsQueues({ client: sqs, queueUrls: urls }), urls };
}

function only(messages: readonly ReceivedMessage[]): ReceivedMessage {
  expect(messages).toHaveLength(1);
  return messages[0] as ReceivedMessage;
}

/** Receives from `queue` with 1 s long polls until a message arrives or `timeoutMs` passes. */
async function receiveWithin(queues: SqsQueues, queue: QueueName, timeoutMs: number): Promise<ReceivedMessage[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const received = await queues.receive(queue, { ...NOW, waitMs: 1_000 });
    if (received.length > 0 || Date.now() >= deadline) return received;
  }
}

const str = (value: string): MessageAttribute => ({ dataType: 'String', value });

describe('SqsQueues on fauxqs', () => {
  afterAll(() => sqs.destroy());

  describe('receive', () => {
    it('maps the body, attributes (binary as base64), group and receive count', async () => {
      const { queues } = await lane();
      const attributes = {
        cost: { dataType: 'Number', value: '3' },
        idempotencyKey: str('k-1'),
        blob: { dataType: 'Binary', value: Buffer.from([0, 1, 255]).toString('base64') },
      };
      await queues.send('fifo', { body: '{"n":1}', attributes, groupId: 'g' });
      const message = only(await queues.receive('fifo', NOW));
      expect(message).toEqual({
        queue: 'fifo',
        messageId: expect.any(String),
        receiptHandle: expect.any(String),
        body: '{"n":1}',
        attributes,
        groupId: 'g',
        receiveCount: 1,
      });
    });

    it('reads dead-letter queues too, and standard messages come without a group', async () => {
      const { queues } = await lane();
      await queues.send('main-dlq', { body: 'parked' });
      const message = only(await queues.receive('main-dlq', NOW));
      expect(message).toMatchObject({ queue: 'main-dlq', body: 'parked', attributes: {}, receiveCount: 1 });
      expect(message).not.toHaveProperty('groupId');
    });
  });

  describe('send', () => {
    it('hides a delayed message until its delay is over', async () => {
      const { queues } = await lane();
      const sentAt = Date.now();
      await queues.send('requeue', { body: 'later', delayMs: 1_000 });
      expect(await queues.receive('requeue', NOW)).toEqual([]);
      const message = only(await receiveWithin(queues, 'requeue', 10_000));
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1_000);
      expect(message.body).toBe('later');
    }, 15_000);

    it('round-trips a message with 12 attributes, one of them empty, sending at most 10 on the wire', async () => {
      const { queues, urls } = await lane();
      const attributes: Record<string, MessageAttribute> = Object.fromEntries(
        Array.from({ length: 11 }, (_, i) => [`user${String(i).padStart(2, '0')}`, str(`value ${i}`)]),
      );
      attributes.empty = str('');
      await queues.send('main', { body: 'many', attributes });

      const raw = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: urls.main, MessageAttributeNames: ['All'], VisibilityTimeout: 30 }),
      );
      const wire = raw.Messages?.[0];
      expect(Object.keys(wire?.MessageAttributes ?? {})).toHaveLength(10);
      expect(wire?.MessageAttributes).toHaveProperty(PACKED_ATTRIBUTES);
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: urls.main,
          ReceiptHandle: wire?.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );

      expect(only(await queues.receive('main', NOW)).attributes).toEqual(attributes);
    });

    it('keeps every attribute when dead-lettering adds the service attributes to 9 of the caller', async () => {
      const { queues } = await lane();
      const attributes: Record<string, MessageAttribute> = Object.fromEntries(
        Array.from({ length: 9 }, (_, i) => [`user${i}`, str(`value ${i}`)]),
      );
      await queues.send('main', {
        body: 'poison',
        attributes: { ...attributes, cost: { dataType: 'Number', value: '2' }, idempotencyKey: str('k') },
      });
      const message = only(await queues.receive('main', NOW));
      // An API error with characters SQS refuses in an attribute, and longer than a dead letter keeps.
      const apiError = `{"error":"bad\u0000input"}${'x'.repeat(2_000)}`;
      await deadLetter(queues, { ...message, queue: 'main' }, 'HTTP 400 Bad Request', 2, {
        dispatchId: 'd-1',
        apiError,
      });
      const parked = only(await queues.receive('main-dlq', NOW));
      expect(parked.attributes).toEqual({
        ...attributes,
        cost: { dataType: 'Number', value: '2' },
        idempotencyKey: str('k'),
        reason: str('HTTP 400 Bad Request'),
        attempt: { dataType: 'Number', value: '2' },
        sourceQueue: str('main'),
        originalMessageId: str(message.messageId),
        dispatchId: str('d-1'),
        apiError: str(expect.stringMatching(/^\{"error":"bad\\u0000input"\}x+…$/) as unknown as string),
      });
      expect(Buffer.byteLength(parked.attributes.apiError?.value ?? '')).toBe(1_024);
      expect(await queues.receive('main', { ...NOW, visibilityMs: 0 })).toEqual([]);
    });

    it('refuses a FIFO message without a group with a clear error', async () => {
      const { queues } = await lane();
      await expect(queues.send('fifo', { body: 'x' })).rejects.toThrow("send to FIFO queue 'fifo' needs a groupId");
    });

    it('deduplicates FIFO messages only by an explicit deduplication id', async () => {
      const { queues } = await lane();
      await queues.send('fifo', { body: 'same', groupId: 'a' });
      await queues.send('fifo', { body: 'same', groupId: 'b' });
      await queues.send('fifo', { body: 'dup', groupId: 'c', deduplicationId: 'd-1' });
      await queues.send('fifo', { body: 'dup', groupId: 'c', deduplicationId: 'd-1' });
      // fauxqs hands out one message per group per receive, so drain with a few receives.
      const bodies: string[] = [];
      for (let i = 0; i < 4; i++) bodies.push(...(await queues.receive('fifo', NOW)).map((m) => m.body));
      expect(bodies.sort()).toEqual(['dup', 'same', 'same']);
    });
  });

  describe('FIFO group lock', () => {
    it('holds back the next message of a group while one is in flight, but not other groups', async () => {
      const { queues } = await lane();
      await queues.send('fifo', { body: 'g1', groupId: 'g' });
      await queues.send('fifo', { body: 'g2', groupId: 'g' });
      const first = only(await queues.receive('fifo', NOW));
      expect(first.body).toBe('g1');
      await queues.send('fifo', { body: 'h1', groupId: 'h' });
      expect((await queues.receive('fifo', NOW)).map((m) => m.body)).toEqual(['h1']);
      expect(await queues.receive('fifo', NOW)).toEqual([]);
      await queues.delete('fifo', first.receiptHandle);
      expect(only(await queues.receive('fifo', NOW)).body).toBe('g2');
    });
  });

  describe('delete', () => {
    it('deletes a received message, and deleting it again does not throw', async () => {
      const { queues } = await lane();
      await queues.send('main', { body: 'x' });
      const message = only(await queues.receive('main', NOW));
      await queues.delete('main', message.receiptHandle);
      await expect(queues.delete('main', message.receiptHandle)).resolves.toBeUndefined();
      await queues.send('main', { body: 'y' });
      expect(only(await queues.receive('main', { ...NOW, visibilityMs: 0 })).body).toBe('y');
    });
  });

  describe('sendBatch', () => {
    it('sends ten messages to a request and up to 256 KiB, a larger message alone, with their attributes and delays', async () => {
      const client = testSqsClient();
      const commands: string[] = [];
      const urls = await createLaneQueues(client, uniqueName('sqsb'));
      client.middlewareStack.add((next, context) => (args) => {
        commands.push(String(context.commandName));
        return next(args);
      });
      const queues = new SqsQueues({ client, queueUrls: urls });
      const small = Array.from({ length: 12 }, (_, i) => ({
        body: `m${i}`,
        attributes: { attempt: { dataType: 'Number', value: String(i) } },
      }));
      const big = { body: 'b'.repeat(200_000) };
      // 10 small; 2 small and a big one; the other big one and the delayed one; the huge one alone.
      await expect(
        queues.sendBatch('requeue', [
          ...small,
          big,
          big,
          { body: 'later', delayMs: 60_000 },
          { body: 'h'.repeat(300_000) },
        ]),
      ).resolves.toEqual([]);
      expect(commands).toEqual([
        'SendMessageBatchCommand',
        'SendMessageBatchCommand',
        'SendMessageBatchCommand',
        'SendMessageCommand',
      ]);
      const received: ReceivedMessage[] = [];
      for (let tries = 0; received.length < 15 && tries < 10; tries++)
        received.push(...(await queues.receive('requeue', NOW)));
      expect(received.map((m) => m.body.length).sort((a, b) => a - b)).toEqual([
        ...Array.from({ length: 12 }, (_, i) => `m${i}`.length).sort((a, b) => a - b),
        200_000,
        200_000,
        300_000,
      ]);
      expect(received.find((m) => m.body === 'm7')?.attributes).toEqual({
        attempt: { dataType: 'Number', value: '7' },
      });
      expect(await queues.messageCount('requeue')).toBe(16); // the delayed one too
      client.destroy();
    });
  });

  describe('deleteBatch', () => {
    it('deletes twelve received messages in two requests, ignoring a handle already used', async () => {
      const { queues } = await lane();
      for (let i = 0; i < 12; i++) await queues.send('main', { body: `m${i}` });
      const received: ReceivedMessage[] = [];
      while (received.length < 12) received.push(...(await queues.receive('main', NOW)));
      const handles = received.map((m) => m.receiptHandle);
      await queues.delete('main', handles[0]!);
      await queues.deleteBatch('main', handles);
      expect(await queues.messageCount('main')).toBe(0);
    });
  });

  describe('messageCount', () => {
    it('counts the messages visible, in flight and delayed, and none once they are deleted', async () => {
      const { queues } = await lane();
      expect(await queues.messageCount('main')).toBe(0);
      await queues.send('main', { body: 'visible' });
      await queues.send('main', { body: 'in flight' });
      await queues.send('main', { body: 'delayed', delayMs: 60_000 });
      const taken = await queues.receive('main', { ...NOW, max: 1 });
      expect(taken).toHaveLength(1);
      expect(await queues.messageCount('main')).toBe(3);
      const rest = await queues.receive('main', NOW);
      for (const message of [...taken, ...rest]) await queues.delete('main', message.receiptHandle);
      expect(await queues.messageCount('main')).toBe(1);
    });
  });

  describe('changeVisibility', () => {
    it('makes an in-flight message visible again at once with 0, counting the next receive', async () => {
      const { queues } = await lane();
      await queues.send('fifo', { body: 'retry me', groupId: 'g' });
      const first = only(await queues.receive('fifo', NOW));
      expect(await queues.receive('fifo', NOW)).toEqual([]);
      await queues.changeVisibility('fifo', first.receiptHandle, 0);
      expect(only(await queues.receive('fifo', NOW))).toMatchObject({ messageId: first.messageId, receiveCount: 2 });
    });

    it('lets a message reappear once its visibility timeout is over', async () => {
      const { queues } = await lane();
      await queues.send('main', { body: 'slow' });
      const first = only(await queues.receive('main', { ...NOW, visibilityMs: 1_000 }));
      expect(await queues.receive('main', NOW)).toEqual([]);
      const again = only(await receiveWithin(queues, 'main', 10_000));
      expect(again).toMatchObject({ messageId: first.messageId, receiveCount: 2 });
    }, 15_000);
  });

  describe('createLaneQueues', () => {
    it('redrives source messages to their dead-letter queue after maxReceiveCount receives, FIFO ones to a FIFO DLQ', async () => {
      const { queues } = await lane(1);
      await queues.send('main', { body: 'm' });
      await queues.send('fifo', { body: 'f', groupId: 'g' });
      for (const queue of ['main', 'fifo'] as const) {
        only(await queues.receive(queue, { ...NOW, visibilityMs: 0 }));
        expect(await queues.receive(queue, NOW)).toEqual([]);
      }
      expect(only(await queues.receive('main-dlq', NOW)).body).toBe('m');
      expect(only(await queues.receive('fifo-dlq', NOW))).toMatchObject({ body: 'f', groupId: 'g' });
    });
  });
});
