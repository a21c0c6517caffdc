import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_ACCOUNT } from './template';

/** A running {@link startParameterStore}. */
export interface ParameterStore {
  /** The endpoint an `SSMClient` is given, e.g. `http://127.0.0.1:41235`. */
  readonly endpoint: string;
  /** GetParameter requests answered so far, found or not. */
  reads(): number;
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Answers in the AWS JSON 1.1 protocol: a body, or an error whose `__type` the SDK makes its exception. */
function reply(response: ServerResponse, status: number, body: Readonly<Record<string, unknown>>): void {
  response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(body));
}

/** The answer to one request: GetParameter of a parameter held, or the error SSM gives. */
function answer(parameters: ReadonlyMap<string, string>, target: unknown, body: string) {
  if (target !== 'AmazonSSM.GetParameter')
    return {
      status: 400,
      body: { __type: 'UnknownOperationException', message: `not served here: ${String(target)}` },
    };
  let name: unknown;
  try {
    name = (JSON.parse(body) as { Name?: unknown }).Name;
  } catch {
    return { status: 400, body: { __type: 'SerializationException', message: 'body is not JSON' } };
  }
  const value = typeof name === 'string' ? parameters.get(name) : undefined;
  if (typeof name !== 'string' || value === undefined)
    return { status: 400, body: { __type: 'ParameterNotFound', message: `no parameter ${String(name)}` } };
  const { region, accountId } = LOCAL_ACCOUNT;
  return {
    status: 200,
    body: {
      Parameter: {
        Name: name,
        Type: 'SecureString',
        Value: value,
        Version: 1,
        DataType: 'text',
        LastModifiedDate: 0,
        ARN: `arn:aws:ssm:${region}:${accountId}:parameter${name}`,
      },
    },
  };
}

/**
 * Serves SSM Parameter Store's `GetParameter` on 127.0.0.1 for `parameters` (name to value, given decrypted as a
 * SecureString would be), so that the worker reads its API key through its real SSM client and the Powertools
 * provider, as on AWS. No emulator of SSM is published on the npm registry; this answers the one operation the
 * service uses, in the AWS JSON 1.1 protocol the SDK speaks, and `ParameterNotFound` for any other name.
 */
export function startParameterStore(parameters: Readonly<Record<string, string>>): Promise<ParameterStore> {
  const held = new Map(Object.entries(parameters));
  let reads = 0;
  const server = createServer((request, response) => {
    readBody(request).then(
      (body) => {
        reads += 1;
        const { status, body: answered } = answer(held, request.headers['x-amz-target'], body);
        reply(response, status, answered);
      },
      () => response.destroy(),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve({
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        reads: () => reads,
        close: () =>
          new Promise<void>((closed, failed) => {
            server.close((error) => (error === undefined ? closed() : failed(error)));
            server.closeAllConnections();
          }),
      });
    });
  });
}
