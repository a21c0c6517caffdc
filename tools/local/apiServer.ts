import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsonValue } from '../../lib/domain/json';
import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';

/** A running {@link startApiServer}. */
export interface ApiServer {
  /** Where jobs are POSTed, e.g. `http://127.0.0.1:41234/jobs` (the worker's `API_URL`). */
  readonly apiUrl: string;
  /** Where health checks GET, e.g. `http://127.0.0.1:41234/health` (the worker's `HEALTH_URL`). */
  readonly healthUrl: string;
  /** Requests refused with a 401 for lacking a header of {@link ApiServerOptions.requiredHeaders}. */
  refusals(): number;
  /** Stops listening and drops every connection, including requests held for a `timeout` result. */
  close(): Promise<void>;
}

/** Headers (lower-case names) and the values a provider requires: of job calls, and of health checks. */
export interface RequiredHeaders {
  readonly calls: Readonly<Record<string, string>>;
  readonly probes: Readonly<Record<string, string>>;
}

/** Options of {@link startApiServer}. */
export interface ApiServerOptions {
  /** Interface to listen on. @default '127.0.0.1' */
  readonly host?: string;
  /** Port to listen on; 0 picks a free one. @default 0 */
  readonly port?: number;
  /**
   * Refuse a request without each of these headers, with exactly its value, as a provider refuses a missing key
   * or version: 401 with the header named, before the API sees it. @default none required
   */
  readonly requiredHeaders?: RequiredHeaders;
  /** The method of job calls, as the workers' `apiMethod` says. @default 'POST' */
  readonly callMethod?: string;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: JsonValue,
  headers: Readonly<Record<string, string>> = {},
): void {
  response.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Answers as `result` says: a response, a dropped connection (`network-error`), or no answer at all (`timeout`). */
function answer(response: ServerResponse, result: ApiResult): void {
  switch (result.kind) {
    case 'response':
      if (result.body === undefined) sendJson(response, result.status, { status: result.status }, result.headers);
      else
        response.writeHead(result.status, { 'content-type': 'application/json', ...result.headers }).end(result.body);
      return;
    case 'network-error':
      response.socket?.destroy();
      return;
    case 'timeout':
      // Held until the client gives up or the server closes.
      return;
  }
}

/**
 * A request header the local harness's workers set to when they sent the call (`Date.now()`): see
 * {@link stampSentAt}.
 */
export const SENT_AT_HEADER = 'x-local-sent-at';

/**
 * `fetch` that stamps each request with {@link SENT_AT_HEADER}. The local stack runs the orchestrator, every worker
 * and the simulated API in one Node process on a few cores, where a request can wait tens of ms in the event loop
 * between a worker's send and the server's handler: a wait no deployed worker's request sees on its way to the API.
 * The server dates a stamped call when it was sent, as if the network took no time.
 */
export function stampSentAt(inner: typeof fetch = globalThis.fetch): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set(SENT_AT_HEADER, String(Date.now()));
    return inner(input, { ...init, headers });
  };
}

/**
 * What a served call's API is told beside the idempotency key: how long ago the call arrived, when its request was
 * sent (see {@link SENT_AT_HEADER}) or else when its headers arrived, so that an API that counts arrivals can date it.
 */
export interface ServedCallContext {
  readonly idempotencyKey: string;
  readonly waitedMs: number;
}

/** The first header of `required` that `request` lacks or sends with another value. */
function missingHeader(request: IncomingMessage, required: Readonly<Record<string, string>>): string | undefined {
  return Object.entries(required).find(([name, value]) => request.headers[name] !== value)?.[0];
}

async function route(
  api: ApiCaller,
  request: IncomingMessage,
  response: ServerResponse,
  options: ApiServerOptions,
  refuse: () => void,
): Promise<void> {
  const { pathname } = new URL(request.url ?? '/', 'http://localhost');
  const required = options.requiredHeaders;
  const headers = pathname === '/health' ? required?.probes : required?.calls;
  const missing = headers === undefined ? undefined : missingHeader(request, headers);
  if (missing !== undefined) {
    request.resume();
    refuse();
    sendJson(response, 401, { error: `missing or wrong header: ${missing}` });
    return;
  }
  const sentAt = Number(request.headers[SENT_AT_HEADER]);
  const arrivedAt = Number.isFinite(sentAt) && sentAt > 0 ? Math.min(sentAt, Date.now()) : Date.now();
  const callMethod = options.callMethod ?? 'POST';
  if (request.method === callMethod && pathname === '/jobs') {
    const body = await readBody(request);
    try {
      JSON.parse(body);
    } catch (error) {
      sendJson(response, 400, { error: `body is not JSON: ${error instanceof Error ? error.message : String(error)}` });
      return;
    }
    const key = request.headers['idempotency-key'];
    const context: ServedCallContext = {
      idempotencyKey: typeof key === 'string' ? key : '',
      waitedMs: Date.now() - arrivedAt,
    };
    answer(response, await api.call(body, context));
    return;
  }
  request.resume();
  if (request.method === 'GET' && pathname === '/health') {
    answer(response, await api.probe());
    return;
  }
  sendJson(response, 404, { error: `no route ${request.method} ${pathname}; use ${callMethod} /jobs or GET /health` });
}

/**
 * Serves an {@link ApiCaller} (usually the simulated `VirtualApi`) over HTTP, so the worker's real HTTP caller can
 * reach it:
 * - `POST /jobs` (or the `callMethod` given): the body's text, unchanged, and the `idempotency-key` header (default `''`) go to `api.call`, with
 *   how long ago the call arrived (see {@link ServedCallContext}); a body that is not JSON is answered 400 without
 *   calling the API.
 * - `GET /health`: `api.probe()`.
 * - anything else: 404.
 *
 * With `requiredHeaders`, a call or health check without one of its headers is answered 401, naming the header,
 * before any of that, and counted (`refusals`).
 *
 * A `response` result is answered with its status, its headers (the simulated API's `x-actual-cost`, say) and its
 * body (an LLM's answer, with its usage), or `{"status": N}` when it has none. A `network-error` result destroys the connection; a `timeout` result is never answered. An
 * `ApiCaller` that rejects, which the port forbids, is answered 500 with the reason.
 */
export function startApiServer(api: ApiCaller, options: ApiServerOptions = {}): Promise<ApiServer> {
  const { host = '127.0.0.1', port = 0 } = options;
  let refusals = 0;
  const server = createServer((request, response) => {
    route(api, request, response, options, () => (refusals += 1)).catch((error: unknown) => {
      if (response.headersSent) response.destroy();
      else
        sendJson(response, 500, {
          error: `the API caller failed: ${error instanceof Error ? error.message : String(error)}`,
        });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const base = `http://${host}:${(server.address() as AddressInfo).port}`;
      resolve({
        apiUrl: `${base}/jobs`,
        healthUrl: `${base}/health`,
        refusals: () => refusals,
        close: () =>
          new Promise<void>((closed, failed) => {
            server.close((error) => (error === undefined ? closed() : failed(error)));
            server.closeAllConnections();
          }),
      });
    });
  });
}
