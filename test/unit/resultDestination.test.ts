import { EVENTBRIDGE_RESULT_DEFAULTS, parseResultDestination } from '../../lib/resultDestination';
import { ConfigError } from '../../lib/errors';
import { thrown } from '../helpers/thrown';

describe('parseResultDestination', () => {
  it('takes an SQS queue by ARN, standard or FIFO', () => {
    expect(
      parseResultDestination({ type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' }, 'f'),
    ).toEqual({ type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' });
    expect(
      parseResultDestination({ type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results.fifo' }, 'f'),
    ).toMatchObject({ type: 'sqs' });
  });

  it("takes an EventBridge bus by name or ARN, with the source's and detail type's defaults", () => {
    expect(parseResultDestination({ type: 'eventbridge', busName: 'default' }, 'f')).toEqual({
      type: 'eventbridge',
      busName: 'default',
      ...EVENTBRIDGE_RESULT_DEFAULTS,
    });
    expect(
      parseResultDestination(
        {
          type: 'eventbridge',
          busName: 'arn:aws:events:eu-west-1:123456789012:event-bus/jobs',
          source: 'my.app',
          detailType: 'Completion',
        },
        'f',
      ),
    ).toEqual({
      type: 'eventbridge',
      busName: 'arn:aws:events:eu-west-1:123456789012:event-bus/jobs',
      source: 'my.app',
      detailType: 'Completion',
    });
  });

  it.each<[string, unknown, string, string]>([
    ['a string', 'sqs', 'R', 'must be an object such as'],
    ['an unknown type', { type: 'sns', topicArn: 'x' }, 'R.type', 'must be one of sqs, eventbridge; got "sns"'],
    ['an SQS destination without its ARN', { type: 'sqs' }, 'R.queueArn', 'must be the ARN of an SQS queue'],
    [
      'an SNS ARN for a queue',
      { type: 'sqs', queueArn: 'arn:aws:sns:us-east-1:123456789012:results' },
      'R.queueArn',
      'must be the ARN of an SQS queue',
    ],
    [
      'a queue name over 80 characters',
      { type: 'sqs', queueArn: `arn:aws:sqs:us-east-1:123456789012:${'q'.repeat(81)}` },
      'R.queueArn',
      'must be the ARN',
    ],
    [
      'a key of the other type',
      { type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:r', busName: 'b' },
      'R.busName',
      'unknown key; a sqs destination takes type, queueArn',
    ],
    ['a bus name with a slash', { type: 'eventbridge', busName: 'a/b' }, 'R.busName', "must be an event bus's name"],
    [
      'a source of AWS',
      { type: 'eventbridge', busName: 'b', source: 'aws.sqs' },
      'R.source',
      "not starting with 'aws.'",
    ],
    [
      'an empty detail type',
      { type: 'eventbridge', busName: 'b', detailType: '' },
      'R.detailType',
      'must be 1 to 128 characters',
    ],
  ])('refuses %s, naming the field', (_case, value, field, problem) => {
    const error = thrown(ConfigError, () => parseResultDestination(value, 'R'));
    expect(error.field).toBe(field);
    expect(error.message).toContain(problem);
  });
});
