import { createHash } from 'node:crypto';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient, SQSServiceException } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { EnqueueError } from '../../../lib/errors';
import { enqueue, enqueueMany, MAX_MESSAGE_BYTES, type ProducerJob } from '../../../lib/producer/enqueue';

const MAIN = 'https://sqs.test/1/main';
const FIFO = 'https://sqs.test/1/fifo.fifo';
const sqsMock = mockClient(SQSClient);
const sqs = new SQSClient({ region: 'us-east-1' });
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
  sqsMock.on(SendMessageBatchCommand).callsFake((input: { Entries: { Id: string }[] }) => ({
    Successful: input.Entries.map(({ Id }) => ({ Id, MessageId: `m-${Id}` })),
  }));
});

function sent() {
  const call = sqsMock.commandCalls(SendMessageCommand)[0];
  if (call === undefined) throw new Error('expected a SendMessage call');
  return call.args[0].input;
}

/** The error `enqueue` rejects with, or a failure of the test when it resolves. */
async function refusal(job: ProducerJob, queueUrl = MAIN): Promise<EnqueueError> {
  const error: unknown = await enqueue(job, { sqs, queueUrl }).then(
    () => new Error('expected enqueue to reject'),
    (e: unknown) => e,
  );
  if (!(error instanceof EnqueueError)) throw error;
  return error;
}

/** A body whose message is exactly `bytes` long with no attributes: a JSON string. */
const bodyOf = (bytes: number): string => 'x'.repeat(bytes - 2);

describe('the producer client', () => {
  describe('enqueue', () => {
    it('sends the body as JSON with the cost and idempotency key attributes, and returns the message id', async () => {
      await expect(
        enqueue({ body: { n: 1 }, cost: 7, idempotencyKey: 'k-1' }, { sqs, queueUrl: MAIN }),
      ).resolves.toEqual({ messageId: 'm-1' });
      expect(sent()).toEqual({
        QueueUrl: MAIN,
        MessageBody: '{"n":1}',
        MessageAttributes: {
          cost: { DataType: 'Number', StringValue: '7' },
          idempotencyKey: { DataType: 'String', StringValue: 'k-1' },
        },
      });
    });

    it('sends no attributes, group or deduplication id for a bare job on the main queue', async () => {
      await enqueue({ body: 'hi' }, { sqs, queueUrl: MAIN });
      expect(sent()).toEqual({ QueueUrl: MAIN, MessageBody: '"hi"' });
    });

    it('accepts the costs the service accepts: 0 and 1e12', async () => {
      await enqueue({ body: 1, cost: 0 }, { sqs, queueUrl: MAIN });
      await enqueue({ body: 1, cost: 1e12 }, { sqs, queueUrl: MAIN });
      expect(
        sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input.MessageAttributes?.cost?.StringValue),
      ).toEqual(['0', '1000000000000']);
    });

    it.each([
      ['a negative cost', { body: 1, cost: -1 }, 'cost'],
      ['a fractional cost', { body: 1, cost: 1.5 }, 'cost'],
      ['a cost over 1e12', { body: 1, cost: 1e12 + 1 }, 'cost'],
      ['an infinite cost', { body: 1, cost: Number.POSITIVE_INFINITY }, 'cost'],
      ['an empty idempotency key', { body: 1, idempotencyKey: '' }, 'idempotencyKey'],
      ['an idempotency key over 512 characters', { body: 1, idempotencyKey: 'k'.repeat(513) }, 'idempotencyKey'],
      ['a body JSON cannot hold', { body: undefined }, 'body'],
      ['a body JSON.stringify throws on', { body: 10n }, 'body'],
      [
        'a body nested deeper than the service allows',
        { body: JSON.parse('['.repeat(101) + ']'.repeat(101)) as unknown },
        'body',
      ],
      ['a group id with a space', { body: 1, groupId: 'a b' }, 'groupId'],
      ['a deduplication id on a standard queue', { body: 1, deduplicationId: 'd' }, 'deduplicationId'],
    ] as [string, ProducerJob, string][])('refuses %s, naming the field, and sends nothing', async (_, job, field) => {
      const error = await refusal(job);
      expect(error.field).toBe(field);
      expect(error.code).toBe('ENQUEUE_INVALID');
      expect(error.message).toMatch(new RegExp(`^job\\.${field}: `));
      expect(sqsMock.calls()).toHaveLength(0);
    });

    it('refuses a message over the queue limit with its attributes, and takes one exactly at the limit', async () => {
      const attributeBytes = 'cost'.length + 'Number'.length + '1'.length;
      await enqueue({ body: bodyOf(MAX_MESSAGE_BYTES - attributeBytes), cost: 1 }, { sqs, queueUrl: MAIN });
      const error = await refusal({ body: bodyOf(MAX_MESSAGE_BYTES - attributeBytes + 1), cost: 1 });
      expect(error.field).toBe('size');
      expect(error.message).toContain(`at most ${MAX_MESSAGE_BYTES} bytes`);
      expect(sqsMock.commandCalls(SendMessageCommand)).toHaveLength(1);
    });

    it('counts the body in UTF-8 bytes, not characters', async () => {
      expect((await refusal({ body: 'é'.repeat(MAX_MESSAGE_BYTES / 2) })).field).toBe('size');
    });

    describe('on a FIFO queue', () => {
      it('requires a group id', async () => {
        expect((await refusal({ body: 1 }, FIFO)).field).toBe('groupId');
      });

      it('deduplicates by the idempotency key when given', async () => {
        await enqueue({ body: 1, groupId: 'g', idempotencyKey: 'order-9' }, { sqs, queueUrl: FIFO });
        expect(sent()).toMatchObject({ MessageGroupId: 'g', MessageDeduplicationId: 'order-9' });
      });

      it("deduplicates by the key's SHA-256 when the key is no valid deduplication id", async () => {
        const key = 'k'.repeat(200);
        await enqueue({ body: 1, groupId: 'g', idempotencyKey: key }, { sqs, queueUrl: FIFO });
        expect(sent().MessageDeduplicationId).toBe(sha256(key));
      });

      it('deduplicates by a hash of the group and body without a key, so equal bodies of two groups stay two jobs', async () => {
        await enqueue({ body: { a: 1 }, groupId: 'g1' }, { sqs, queueUrl: FIFO });
        await enqueue({ body: { a: 1 }, groupId: 'g2' }, { sqs, queueUrl: FIFO });
        const ids = sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input.MessageDeduplicationId);
        expect(ids).toEqual([sha256('g1\n{"a":1}'), sha256('g2\n{"a":1}')]);
      });

      it('keeps an explicit deduplication id over the key', async () => {
        await enqueue({ body: 1, groupId: 'g', idempotencyKey: 'k', deduplicationId: 'd-1' }, { sqs, queueUrl: FIFO });
        expect(sent().MessageDeduplicationId).toBe('d-1');
      });

      it('refuses a deduplication id over 128 characters', async () => {
        expect((await refusal({ body: 1, groupId: 'g', deduplicationId: 'd'.repeat(129) }, FIFO)).field).toBe(
          'deduplicationId',
        );
      });
    });

    it("passes on the SDK's error when SQS refuses the request", async () => {
      sqsMock
        .on(SendMessageCommand)
        .rejects(
          new SQSServiceException({ name: 'QueueDoesNotExist', $fault: 'client', message: 'no queue', $metadata: {} }),
        );
      await expect(enqueue({ body: 1 }, { sqs, queueUrl: MAIN })).rejects.toThrow('no queue');
    });
  });

  describe('enqueueMany', () => {
    const batches = () =>
      sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries?.map((entry) => entry.Id));

    it('sends ten jobs to a request, in order, each entry named by its index', async () => {
      const jobs = Array.from({ length: 23 }, (_, i) => ({ body: { i } }));
      await expect(enqueueMany(jobs, { sqs, queueUrl: MAIN })).resolves.toEqual({ sent: 23, failed: [] });
      const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => String(from + i));
      expect(batches()).toEqual([ids(0, 10), ids(10, 20), ids(20, 23)]);
      expect(sqsMock.commandCalls(SendMessageBatchCommand)[0]?.args[0].input.Entries?.[3]).toEqual({
        Id: '3',
        MessageBody: '{"i":3}',
      });
    });

    it("starts a new request when the next job would take the request's total past the limit", async () => {
      const half = { body: bodyOf(MAX_MESSAGE_BYTES / 2) };
      await enqueueMany([half, half, { body: bodyOf(MAX_MESSAGE_BYTES / 2 + 1) }, { body: 1 }], {
        sqs,
        queueUrl: MAIN,
      });
      expect(batches()).toEqual([
        ['0', '1'],
        ['2', '3'],
      ]);
    });

    it('reports a job that fails its checks as a failure with its reason, and sends the others', async () => {
      const progress: { sent: number; failed: number }[] = [];
      const result = await enqueueMany([{ body: 1 }, { body: 2, cost: -1 }, { body: 3 }], {
        sqs,
        queueUrl: MAIN,
        onProgress: (p) => progress.push({ ...p }),
      });
      expect(result).toEqual({
        sent: 2,
        failed: [{ index: 1, reason: expect.stringMatching(/^job\.cost: must be an integer from 0/) as unknown }],
      });
      expect(batches()).toEqual([['0', '2']]);
      expect(progress).toEqual([
        { sent: 0, failed: 1 },
        { sent: 2, failed: 1 },
      ]);
    });

    it('reports the entries SQS refuses (a partial batch failure) with its code', async () => {
      sqsMock.on(SendMessageBatchCommand).resolves({
        Successful: [{ Id: '0', MessageId: 'a', MD5OfMessageBody: '', SequenceNumber: undefined }],
        Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false, Message: 'try again' }],
      });
      const result = await enqueueMany([{ body: 1 }, { body: 2 }], { sqs, queueUrl: MAIN });
      expect(result).toEqual({
        sent: 1,
        failed: [{ index: 1, reason: 'SQS refused the message: InternalError try again' }],
      });
    });

    it('fails every entry of a request that failed as a whole, and goes on with the next', async () => {
      sqsMock
        .on(SendMessageBatchCommand)
        .rejectsOnce(
          new SQSServiceException({ name: 'ServiceUnavailable', $fault: 'server', message: 'down', $metadata: {} }),
        )
        .resolves({ Successful: [], Failed: [] });
      const result = await enqueueMany(
        Array.from({ length: 11 }, (_, i) => ({ body: i })),
        { sqs, queueUrl: MAIN },
      );
      expect(result.failed.map((f) => f.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(result.failed[0]?.reason).toBe('SendMessageBatch failed: ServiceUnavailable: down');
      expect(result.sent).toBe(1);
    });

    it('reads an async iterable, and sets the FIFO group and deduplication ids of each entry', async () => {
      async function* jobs(): AsyncGenerator<ProducerJob> {
        yield { body: 'a', groupId: 'g', idempotencyKey: 'k-a' };
        yield { body: 'b', groupId: 'g' };
      }
      await expect(enqueueMany(jobs(), { sqs, queueUrl: FIFO })).resolves.toEqual({ sent: 2, failed: [] });
      const entries = sqsMock.commandCalls(SendMessageBatchCommand)[0]?.args[0].input.Entries;
      expect(entries?.map((e) => [e.MessageGroupId, e.MessageDeduplicationId])).toEqual([
        ['g', 'k-a'],
        ['g', sha256('g\n"b"')],
      ]);
    });
  });
});
