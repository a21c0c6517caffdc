// Starts the DynamoDB (dynalite) and SQS (fauxqs) emulators once for the whole jest run, on 127.0.0.1 only, and
// hands their endpoints to the test files through process.env. fauxqs is ESM-only, which is why this file is .mjs
// (ts-jest compiles test files to CommonJS, where `require('fauxqs')` fails).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export default async function startEmulators() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dynalite = require('dynalite')({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise((resolve, reject) => dynalite.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve())));
  const { buildApp } = await import('fauxqs');
  const sqs = buildApp({ logger: false });
  const sqsEndpoint = await sqs.listen({ host: '127.0.0.1', port: 0 });
  process.env.QO_TEST_DYNAMODB_ENDPOINT = `http://127.0.0.1:${dynalite.address().port}`;
  process.env.QO_TEST_SQS_ENDPOINT = sqsEndpoint;
  globalThis.__QO_EMULATORS__ = { dynalite, sqs };
}
