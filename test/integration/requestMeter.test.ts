import { CreateQueueCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { countRequests, RequestMeter } from '../../tools/local/requestMeter';
import { testSqsClient, uniqueName } from '../helpers/awsClients';

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
      'sqs.CreateQueueCommand': { count: 1, ms: 5 },
      'sqs.GetQueueUrlCommand': { count: 2, ms: 10 },
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
});
