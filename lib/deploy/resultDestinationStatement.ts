/** The worker role's grant of the send to its result destination, which packaging adds to `WorkerRole`. */
import type { ResultDestination } from '../resultDestination';

/** One statement of an IAM policy, as CloudFormation takes it. */
export interface IamStatement {
  readonly Sid: string;
  readonly Effect: 'Allow';
  readonly Action: string | readonly string[];
  readonly Resource: unknown;
}

/**
 * The statement that lets the worker send results to `destination`: `sqs:SendMessage` on the queue (which authorises
 * SendMessageBatch) and `sqs:GetQueueUrl` (asked once per container), or `events:PutEvents` on the bus (a bus named
 * rather than given by ARN is the stack's region's and account's).
 */
export function resultDestinationStatement(destination: ResultDestination): IamStatement {
  if (destination.type === 'sqs')
    return {
      Sid: 'ResultDestination',
      Effect: 'Allow',
      Action: ['sqs:GetQueueUrl', 'sqs:SendMessage'],
      Resource: destination.queueArn,
    };
  const bus = destination.busName.startsWith('arn:')
    ? destination.busName
    : {
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':events:',
            { Ref: 'AWS::Region' },
            ':',
            { Ref: 'AWS::AccountId' },
            ':event-bus/',
            destination.busName,
          ],
        ],
      };
  return { Sid: 'ResultDestination', Effect: 'Allow', Action: 'events:PutEvents', Resource: bus };
}
