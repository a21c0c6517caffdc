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
 * @param lane what follows `ResultDestination` in the statement's `Sid`: a lane's logical-id prefix in the lanes form,
 * where each lane may have its own destination. @default nothing
 */
export function resultDestinationStatement(destination: ResultDestination, lane = ''): IamStatement {
  const Sid = `ResultDestination${lane}`;
  if (destination.type === 'sqs')
    return {
      Sid,
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
  return { Sid, Effect: 'Allow', Action: 'events:PutEvents', Resource: bus };
}
