import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { EnqueueError } from '../../../lib/errors';
import { enqueue, type ProducerJob } from '../../../lib/producer/enqueue';

const MAIN = 'https://sqs.test/1/main';
const sqsMock = mockClient(SQSClient);
const sqs = new SQSClient({ region: 'us-east-1' });

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
});

describe('the producer client with estimates of named units', () => {
  it('sends each estimate as the Number attribute of its unit: an Anthropic job reserves its prompt and max_tokens', async () => {
    const body = { model: 'claude-sonnet-4-5', max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] };
    await enqueue({ body, estimates: { input_tokens: 12, output_tokens: 1024 } }, { sqs, queueUrl: MAIN });
    expect(sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageAttributes).toEqual({
      input_tokens: { DataType: 'Number', StringValue: '12' },
      output_tokens: { DataType: 'Number', StringValue: '1024' },
    });
  });

  it.each([
    [
      { estimates: { 'AWS.tokens': 1 } },
      'estimates.AWS.tokens',
      "names no unit: its name must not start with 'AWS.' or 'Amazon.'",
    ],
    [
      { estimates: { idempotencyKey: 1 } },
      'estimates.idempotencyKey',
      'names no unit: its name is a message attribute of the service itself',
    ],
    [{ estimates: { tokens: -1 } }, 'estimates.tokens', 'must be an integer from 0 to 1000000000000; got -1'],
    [{ estimates: { tokens: 1.5 } }, 'estimates.tokens', 'must be an integer from 0 to 1000000000000; got 1.5'],
    [
      { estimates: { tokens: '5' as unknown as number } },
      'estimates.tokens',
      'must be an integer from 0 to 1000000000000; got 5',
    ],
    [{ cost: 2, estimates: { cost: 3 } }, 'estimates.cost', 'repeats cost: give one of the two'],
  ])('refuses %j, naming the field, and sends nothing', async (extra, field, problem) => {
    const job: ProducerJob = { body: {}, ...extra };
    const error = await enqueue(job, { sqs, queueUrl: MAIN }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EnqueueError);
    expect((error as EnqueueError).field).toBe(field);
    expect((error as EnqueueError).message).toContain(problem);
    expect(sqsMock.commandCalls(SendMessageCommand)).toHaveLength(0);
  });
});
