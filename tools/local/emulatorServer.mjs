// The DynamoDB (dynalite, in memory) and SQS (fauxqs 1.9.2) emulators, each on a free port of 127.0.0.1 only.
// Plain ESM JavaScript because fauxqs is ESM-only, and so that both the jest globalSetup and a child process of the
// local run can load it. fauxqs's own `startFauxqs` would bind every interface, so its app is built and bound here.
//
// Run as a script (`node tools/local/emulatorServer.mjs`), it prints one JSON line `{"dynamodbEndpoint","sqsEndpoint"}`
// and serves until its stdin closes or it gets SIGTERM: the local run keeps the emulators in their own process,
// on the other core, away from the functions' event loop.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/**
 * Starts both emulators; resolves to their endpoints and a `stop()`. With `{ dynalite: false }` only fauxqs starts
 * and `dynamodbEndpoint` is undefined: the tests' globalSetup does that when they run on DynamoDB Local instead.
 */
export async function startEmulatorServers({ dynalite: withDynalite = true } = {}) {
  const dynalite = withDynalite
    ? require('dynalite')({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
    : undefined;
  if (dynalite !== undefined)
    await new Promise((resolve, reject) =>
      dynalite.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve())),
    );
  const { buildApp } = await import('fauxqs');
  const sqs = buildApp({ logger: false });
  const sqsEndpoint = await sqs.listen({ host: '127.0.0.1', port: 0 });
  return {
    dynamodbEndpoint: dynalite === undefined ? undefined : `http://127.0.0.1:${dynalite.address().port}`,
    sqsEndpoint,
    async stop() {
      await sqs.close();
      if (dynalite !== undefined) await new Promise((resolve) => dynalite.close(resolve));
    },
  };
}

/** The script: serve until stdin closes or SIGTERM. (No top-level await: jest's globalSetup requires this module.) */
async function serve() {
  const servers = await startEmulatorServers();
  const stop = () => servers.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.stdout.write(
    `${JSON.stringify({ dynamodbEndpoint: servers.dynamodbEndpoint, sqsEndpoint: servers.sqsEndpoint })}\n`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  serve().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
