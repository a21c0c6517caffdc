import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';

/** Credentials the emulators accept; never real ones. */
const FAKE_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

function endpoint(name: 'QO_TEST_DYNAMODB_ENDPOINT' | 'QO_TEST_SQS_ENDPOINT'): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run the tests through jest, whose globalSetup starts the emulators`);
  return value;
}

/** A DynamoDB client on the dynalite emulator that jest's globalSetup started. */
export function testDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({ endpoint: endpoint('QO_TEST_DYNAMODB_ENDPOINT'), region: 'us-east-1', credentials: FAKE_CREDENTIALS });
}

/** An SQS client on the fauxqs emulator that jest's globalSetup started. */
export function testSqsClient(): SQSClient {
  return new SQSClient({ endpoint: endpoint('QO_TEST_SQS_ENDPOINT'), region: 'us-east-1', credentials: FAKE_CREDENTIALS });
}

/** A name no other test file uses, for tables and queues shared through one emulator. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
