// Starts the DynamoDB and SQS emulators once for the whole jest run, on 127.0.0.1 only, and hands their endpoints to
// the test files through process.env. This file is .mjs because fauxqs is ESM-only (ts-jest compiles test files to
// CommonJS, where `require('fauxqs')` fails).
//
// QO_TEST_DYNAMODB_ENGINE picks the DynamoDB: `dynalite` (the default, in process) or `dynamodb-local` (AWS's jar,
// which only starts inside a private network namespace: run it through `npm run test:dynamodb-local`).
import { startEmulatorServers } from '../../tools/local/emulatorServer.mjs';
import { startDynamoDbLocal } from '../helpers/dynamodbLocal.mjs';

const ENGINES = ['dynalite', 'dynamodb-local'];

export default async function startEmulators() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const engine = process.env.QO_TEST_DYNAMODB_ENGINE ?? 'dynalite';
  if (!ENGINES.includes(engine))
    throw new Error(`QO_TEST_DYNAMODB_ENGINE must be one of ${ENGINES.join(', ')}; got '${engine}'`);
  process.env.QO_TEST_DYNAMODB_ENGINE = engine;
  const dynamodbLocal = engine === 'dynamodb-local' ? await startDynamoDbLocal() : undefined;
  if (dynamodbLocal !== undefined)
    console.log(`\nDynamoDB Local answered on ${dynamodbLocal.endpoint} after ${dynamodbLocal.startupMs} ms`);
  let servers;
  try {
    servers = await startEmulatorServers({ dynalite: dynamodbLocal === undefined });
  } catch (error) {
    await dynamodbLocal?.stop();
    throw error;
  }
  process.env.QO_TEST_DYNAMODB_ENDPOINT = dynamodbLocal?.endpoint ?? servers.dynamodbEndpoint;
  process.env.QO_TEST_SQS_ENDPOINT = servers.sqsEndpoint;
  globalThis.__QO_EMULATORS__ = {
    async stop() {
      await Promise.all([servers.stop(), dynamodbLocal?.stop()]);
    },
  };
}
