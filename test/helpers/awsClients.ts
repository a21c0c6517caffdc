import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { dynamodbClient, sqsClient, type EmulatorEndpoints } from '../../tools/local/clients';

function endpoint(name: 'QO_TEST_DYNAMODB_ENDPOINT' | 'QO_TEST_SQS_ENDPOINT'): string {
  const value = process.env[name];
  if (value === undefined)
    throw new Error(`${name} is not set: run the tests through jest, whose globalSetup starts the emulators`);
  return value;
}

/** Where the emulators that jest's globalSetup started listen, as the service stack and the local run take them. */
export function testEmulators(): EmulatorEndpoints {
  return { dynamodbEndpoint: endpoint('QO_TEST_DYNAMODB_ENDPOINT'), sqsEndpoint: endpoint('QO_TEST_SQS_ENDPOINT') };
}

/**
 * Which DynamoDB jest's globalSetup started, for test names: `dynalite` by default, `DynamoDB Local` when
 * `QO_TEST_DYNAMODB_ENGINE=dynamodb-local` (`npm run test:dynamodb-local`).
 */
export function testDynamoEngine(): 'dynalite' | 'DynamoDB Local' {
  return process.env.QO_TEST_DYNAMODB_ENGINE === 'dynamodb-local' ? 'DynamoDB Local' : 'dynalite';
}

/** A DynamoDB client on the emulator that jest's globalSetup started (see {@link testDynamoEngine}). */
export function testDynamoClient(): DynamoDBClient {
  return dynamodbClient(endpoint('QO_TEST_DYNAMODB_ENDPOINT'));
}

/** An SQS client on the fauxqs emulator that jest's globalSetup started. */
export function testSqsClient(): SQSClient {
  return sqsClient(endpoint('QO_TEST_SQS_ENDPOINT'));
}

export { uniqueName } from '../../tools/local/harness';
