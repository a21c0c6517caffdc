import { createServiceStack as createStack, type ServiceStack, type ServiceStackOptions } from '../../lib/local/serviceStack';

export * from '../../lib/local/serviceStack';

/** A {@link ServiceStack} on the emulators that jest's globalSetup started. */
export function createServiceStack(options: Omit<ServiceStackOptions, 'emulators'>): Promise<ServiceStack> {
  const dynamodbEndpoint = process.env.QO_TEST_DYNAMODB_ENDPOINT;
  const sqsEndpoint = process.env.QO_TEST_SQS_ENDPOINT;
  if (dynamodbEndpoint === undefined || sqsEndpoint === undefined) throw new Error('run the tests through jest, whose globalSetup starts the emulators');
  return createStack({ ...options, emulators: { dynamodbEndpoint, sqsEndpoint } });
}
