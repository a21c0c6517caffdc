import type { AddressInfo } from 'node:net';

/** The DynamoDB and SQS emulators of a local run, listening on 127.0.0.1 only. */
export interface Emulators {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  stop(): Promise<void>;
}

interface Dynalite {
  listen(port: number, host: string, callback: (error?: Error) => void): void;
  address(): AddressInfo;
  close(callback: () => void): void;
}

interface FauxqsApp {
  listen(options: { host: string; port: number }): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts dynalite (in memory) and fauxqs 1.9.2 in this process, each on a free port of 127.0.0.1. fauxqs is
 * ESM-only, hence the dynamic import; its `startFauxqs` would bind every interface, so its app is built and bound here.
 */
export async function startEmulators(): Promise<Emulators> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- dynalite ships CommonJS without types
  const dynalite = (require('dynalite') as (options: object) => Dynalite)({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => dynalite.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve())));
  const { buildApp } = (await import('fauxqs')) as unknown as { buildApp(options: { logger: boolean }): FauxqsApp };
  const sqs = buildApp({ logger: false });
  const sqsEndpoint = await sqs.listen({ host: '127.0.0.1', port: 0 });
  return {
    dynamodbEndpoint: `http://127.0.0.1:${dynalite.address().port}`,
    sqsEndpoint,
    async stop() {
      await sqs.close();
      await new Promise<void>((resolve) => dynalite.close(resolve));
    },
  };
}
