// Starts the DynamoDB and SQS emulators once for the whole jest run, on 127.0.0.1 only, and hands their endpoints to
// the test files through process.env. This file is .mjs because fauxqs is ESM-only (ts-jest compiles test files to
// CommonJS, where `require('fauxqs')` fails).
import { startEmulatorServers } from '../../lib/local/emulatorServer.mjs';

export default async function startEmulators() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const servers = await startEmulatorServers();
  process.env.QO_TEST_DYNAMODB_ENDPOINT = servers.dynamodbEndpoint;
  process.env.QO_TEST_SQS_ENDPOINT = servers.sqsEndpoint;
  globalThis.__QO_EMULATORS__ = servers;
}
