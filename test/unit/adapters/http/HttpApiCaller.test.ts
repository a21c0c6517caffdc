import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  HttpApiCaller,
  type HttpApiCallerOptions,
  MAX_RESPONSE_BODY_BYTES,
} from '../../../../lib/adapters/http/HttpApiCaller';
import { awkwardBody } from '../../../helpers/serviceFixtures';

interface Recorded {
  readonly method: string | undefined;
  readonly url: string | undefined;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * A loopback HTTP server whose routes the tests set; every request is recorded with its body. Requests to a route
 * without a handler are left unanswered (the timeout tests rely on that).
 */
class TestServer {
  readonly requests: Recorded[] = [];
  readonly routes = new Map<string, Handler>();
  private readonly server: Server;

  private constructor(server: Server) {
    this.server = server;
  }

  static async start(): Promise<TestServer> {
    const server = createServer();
    const test = new TestServer(server);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        test.requests.push({
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        test.routes.get(request.url ?? '')?.(request, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return test;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A port on 127.0.0.1 that nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let server: TestServer;

beforeAll(async () => {
  server = await TestServer.start();
});

afterAll(async () => {
  await server.close();
});

beforeEach(() => {
  server.requests.length = 0;
  server.routes.clear();
});

function caller(timeoutMs = 2_000): HttpApiCaller {
  return new HttpApiCaller({ apiUrl: server.url('/api'), healthUrl: server.url('/health'), timeoutMs });
}

describe('HttpApiCaller', () => {
  describe('constructor', () => {
    it('refuses a timeout that is not a positive number', () => {
      for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(() => new HttpApiCaller({ apiUrl: 'http://x', healthUrl: 'http://x', timeoutMs })).toThrow(RangeError);
      }
    });
  });

  describe('call', () => {
    it('POSTs the body as JSON with the idempotency key, and reports status, lower-case headers (usage headers too) and the body', async () => {
      server.routes.set('/api', (_, response) => {
        response.writeHead(200, {
          'X-Actual-Cost': '42',
          'X-RateLimit-Remaining': '7',
          'Content-Type': 'application/json',
        });
        response.end('{"ok":true}');
      });
      const result = await caller().call('{"to":"+15550100","text":"hé"}', { idempotencyKey: 'job-1' });
      expect(result).toEqual({
        kind: 'response',
        status: 200,
        headers: expect.objectContaining({ 'x-actual-cost': '42', 'x-ratelimit-remaining': '7' }),
        body: '{"ok":true}',
        bodyTruncated: false,
      });
      expect(server.requests).toEqual([
        {
          method: 'POST',
          url: '/api',
          headers: expect.objectContaining({ 'content-type': 'application/json', 'idempotency-key': 'job-1' }),
          body: '{"to":"+15550100","text":"hé"}',
        },
      ]);
    });

    it('POSTs a body that a JSON round trip would change byte for byte, as application/json', async () => {
      server.routes.set('/api', (_, response) => response.writeHead(200).end());
      const body = awkwardBody('job-1');

      await expect(caller().call(body, { idempotencyKey: 'job-1' })).resolves.toMatchObject({
        kind: 'response',
        status: 200,
      });

      const [request, ...others] = server.requests;
      expect(others).toEqual([]);
      expect(request?.headers).toMatchObject({
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body, 'utf8')),
      });
      expect(Buffer.from(request?.body ?? '', 'utf8').equals(Buffer.from(body, 'utf8'))).toBe(true);
    });

    it('reports a 429 with its retry-after header', async () => {
      server.routes.set('/api', (_, response) => {
        response.writeHead(429, { 'Retry-After': '3', 'X-RateLimit-Reset': '1700000000' });
        response.end('slow down');
      });
      const result = await caller().call('null', { idempotencyKey: 'k' });
      expect(result).toMatchObject({
        kind: 'response',
        status: 429,
        headers: { 'retry-after': '3', 'x-ratelimit-reset': '1700000000' },
      });
    });

    it('reports a 503 as a response', async () => {
      server.routes.set('/api', (_, response) => {
        response.writeHead(503);
        response.end();
      });
      await expect(caller().call('[1,2]', { idempotencyKey: 'k' })).resolves.toMatchObject({
        kind: 'response',
        status: 503,
      });
    });

    it('reports a timeout when no response arrives within timeoutMs', async () => {
      await expect(caller(50).call('{}', { idempotencyKey: 'k' })).resolves.toEqual({ kind: 'timeout', afterMs: 50 });
      expect(server.requests).toHaveLength(1);
    });

    it('still reports the response when the body is cut short by the timeout after the headers arrived', async () => {
      server.routes.set('/api', (_, response) => {
        response.writeHead(200, { 'x-actual-cost': '5' });
        response.write('partial');
      });
      await expect(caller(50).call('{}', { idempotencyKey: 'k' })).resolves.toMatchObject({
        kind: 'response',
        status: 200,
        headers: { 'x-actual-cost': '5' },
        body: 'partial',
        bodyTruncated: true,
      });
    });

    it('keeps the first MAX_RESPONSE_BODY_BYTES of a longer body, reads it to the end, and says it was cut', async () => {
      const sent = 'a'.repeat(MAX_RESPONSE_BODY_BYTES + 10_000);
      server.routes.set('/api', (_, response) => response.writeHead(200).end(sent));
      const result = await caller().call('{}', { idempotencyKey: 'k' });
      expect(result).toMatchObject({ kind: 'response', status: 200, bodyTruncated: true });
      expect(result.kind === 'response' ? result.body : undefined).toBe(sent.slice(0, MAX_RESPONSE_BODY_BYTES));
    });

    it('keeps a body of exactly MAX_RESPONSE_BODY_BYTES whole', async () => {
      const sent = 'b'.repeat(MAX_RESPONSE_BODY_BYTES);
      server.routes.set('/api', (_, response) => response.writeHead(200).end(sent));
      await expect(caller().call('{}', { idempotencyKey: 'k' })).resolves.toMatchObject({
        body: sent,
        bodyTruncated: false,
      });
    });

    it('cuts a body on a whole UTF-8 character, never inside one', async () => {
      // 'é' is two bytes: one byte short of the bound ends inside a character, which is left out whole.
      const sent = `x${'é'.repeat(MAX_RESPONSE_BODY_BYTES / 2)}`;
      server.routes.set('/api', (_, response) => response.writeHead(200).end(sent));
      const result = await caller().call('{}', { idempotencyKey: 'k' });
      const body = result.kind === 'response' ? (result.body ?? '') : '';
      expect(body).toBe(sent.slice(0, 1 + (MAX_RESPONSE_BODY_BYTES - 2) / 2));
      expect(body).not.toContain('\ufffd');
      expect(result).toMatchObject({ bodyTruncated: true });
    });

    it("reports a refusal's body too (its dead letter quotes it)", async () => {
      server.routes.set('/api', (_, response) => response.writeHead(400).end('{"error":"bad phone number"}'));
      await expect(caller().call('{}', { idempotencyKey: 'k' })).resolves.toMatchObject({
        status: 400,
        body: '{"error":"bad phone number"}',
      });
    });

    it('reports a network error when nothing listens on the port', async () => {
      const port = await closedPort();
      const api = new HttpApiCaller({
        apiUrl: `http://127.0.0.1:${port}/api`,
        healthUrl: `http://127.0.0.1:${port}/health`,
        timeoutMs: 2_000,
      });
      const result = await api.call('{}', { idempotencyKey: 'k' });
      expect(result).toEqual({ kind: 'network-error', message: expect.stringContaining('ECONNREFUSED') });
      await expect(api.probe()).resolves.toMatchObject({ kind: 'network-error' });
    });

    it('reports a network error for a URL fetch cannot use', async () => {
      const api = new HttpApiCaller({ apiUrl: 'not a url', healthUrl: 'not a url', timeoutMs: 2_000 });
      await expect(api.call('{}', { idempotencyKey: 'k' })).resolves.toMatchObject({
        kind: 'network-error',
        message: expect.any(String),
      });
    });

    it('uses the fetch it is given', async () => {
      const fetchStub = jest.fn(async () => new Response(null, { status: 202, headers: { 'X-Actual-Cost': '1' } }));
      const api = new HttpApiCaller({
        apiUrl: 'https://api.example/v1',
        healthUrl: 'https://api.example/health',
        timeoutMs: 1_000,
        fetch: fetchStub,
      });
      await expect(api.call('"x"', { idempotencyKey: 'k' })).resolves.toEqual({
        kind: 'response',
        status: 202,
        headers: { 'x-actual-cost': '1' },
        body: '',
        bodyTruncated: false,
      });
      expect(fetchStub).toHaveBeenCalledWith(
        'https://api.example/v1',
        expect.objectContaining({ method: 'POST', body: '"x"' }),
      );
    });
  });

  describe('probe', () => {
    it('GETs the health URL and reports its status', async () => {
      server.routes.set('/health', (_, response) => {
        response.writeHead(204);
        response.end();
      });
      await expect(caller().probe()).resolves.toMatchObject({ kind: 'response', status: 204 });
      expect(server.requests.map((r) => [r.method, r.url])).toEqual([['GET', '/health']]);
    });

    it('reports a timeout when the health URL does not answer', async () => {
      await expect(caller(50).probe()).resolves.toEqual({ kind: 'timeout', afterMs: 50 });
    });
  });

  describe('the API key', () => {
    const ok = (_: IncomingMessage, response: ServerResponse) => {
      response.writeHead(200);
      response.end();
    };

    it('sends the key as authorization: Bearer on calls and probes, asking for it at each request (a rotated key is used at once)', async () => {
      server.routes.set('/api', ok);
      server.routes.set('/health', ok);
      let asked = 0;
      const api = new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        apiKey: async () => `key-${++asked}`,
      });
      await api.call('{"id":"a"}', { idempotencyKey: 'a' });
      await api.probe();
      await api.call('{"id":"b"}', { idempotencyKey: 'b' });
      expect(server.requests.map((r) => r.headers.authorization)).toEqual([
        'Bearer key-1',
        'Bearer key-2',
        'Bearer key-3',
      ]);
      expect(server.requests[0]?.headers['idempotency-key']).toBe('a');
      expect(asked).toBe(3);
    });

    it('sends no key header when there is no key', async () => {
      server.routes.set('/api', ok);
      const api = new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        apiKey: async () => undefined,
      });
      await api.call('{"id":"a"}', { idempotencyKey: 'a' });
      expect(server.requests[0]?.headers.authorization).toBeUndefined();
    });

    it('reports a failed credential lookup as a network error without calling, and asks again next time', async () => {
      server.routes.set('/api', ok);
      let asked = 0;
      const api = new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        apiKey: async () => {
          if (++asked === 1) throw new Error('ParameterStore throttled');
          return 'k';
        },
      });
      await expect(api.call('{"id":"a"}', { idempotencyKey: 'a' })).resolves.toEqual({
        kind: 'network-error',
        message: 'no API key: ParameterStore throttled',
      });
      expect(server.requests).toHaveLength(0);
      await expect(api.call('{"id":"a"}', { idempotencyKey: 'a' })).resolves.toMatchObject({
        kind: 'response',
        status: 200,
      });
      expect(server.requests[0]?.headers.authorization).toBe('Bearer k');
    });

    /** A caller on the test server's /api and /health, both answering 200, with `options` besides. */
    const callerWith = (options: Partial<HttpApiCallerOptions>) => {
      server.routes.set('/api', ok);
      server.routes.set('/health', ok);
      return new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        ...options,
      });
    };

    it("sends the key in the lane's own header and form, with its static headers on calls and probes (Anthropic's)", async () => {
      const api = callerWith({
        headers: { 'anthropic-version': '2023-06-01' },
        apiKey: async () => 'sk-ant',
        keyHeader: { name: 'x-api-key' },
      });
      await api.call('{"id":"a"}', { idempotencyKey: 'a' });
      await api.probe();
      expect(
        server.requests.map((r) => [
          r.method,
          r.headers['x-api-key'],
          r.headers['anthropic-version'],
          r.headers.authorization,
        ]),
      ).toEqual([
        ['POST', 'sk-ant', '2023-06-01', undefined],
        ['GET', 'sk-ant', '2023-06-01', undefined],
      ]);
      expect(server.requests[0]?.headers['content-type']).toBe('application/json');
    });

    it('keeps the key off probes when probes do not send it, and sends the call with the method and content type given', async () => {
      const api = callerWith({
        method: 'PUT',
        headers: { 'content-type': 'application/vnd.api+json', 'x-team': 'ops' },
        apiKey: async () => 'k',
        keyHeader: { name: 'authorization', scheme: 'token' },
        probeSendsKey: false,
      });
      await api.call('{"id":"a"}', { idempotencyKey: 'a' });
      await api.probe();
      expect(server.requests.map((r) => [r.method, r.headers.authorization, r.headers['x-team']])).toEqual([
        ['PUT', 'token k', 'ops'],
        ['GET', undefined, 'ops'],
      ]);
      expect(server.requests[0]?.headers['content-type']).toBe('application/vnd.api+json');
      expect(server.requests[0]?.headers['idempotency-key']).toBe('a');
      expect(server.requests[0]?.body).toBe('{"id":"a"}');
    });
  });

  describe('prepare', () => {
    it('reads no key for a probe that carries none: a key that cannot be read holds back calls, not health checks', async () => {
      server.routes.set('/health', (_, response) => {
        response.writeHead(200);
        response.end();
      });
      let asked = 0;
      const api = new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        probeSendsKey: false,
        apiKey: async () => {
          asked++;
          throw new Error('ParameterStore throttled');
        },
      });

      const forProbe = await api.prepare('probe');
      if (forProbe.kind !== 'ready') throw new Error(`not ready: ${forProbe.reason}`);
      await expect(forProbe.caller.probe()).resolves.toMatchObject({ kind: 'response', status: 200 });
      await expect(api.probe()).resolves.toMatchObject({ kind: 'response', status: 200 });
      expect(asked).toBe(0);
      await expect(api.prepare('call')).resolves.toEqual({
        kind: 'not-ready',
        reason: 'no API key: ParameterStore throttled',
      });
      expect(server.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([
        ['GET', '/health', undefined],
        ['GET', '/health', undefined],
      ]);
    });

    const ok = (_: IncomingMessage, response: ServerResponse) => {
      response.writeHead(200);
      response.end();
    };
    const keyed = (apiKey: () => Promise<string | undefined>, keyReadTimeoutMs?: number) =>
      new HttpApiCaller({
        apiUrl: server.url('/api'),
        healthUrl: server.url('/health'),
        timeoutMs: 2_000,
        apiKey,
        ...(keyReadTimeoutMs === undefined ? {} : { keyReadTimeoutMs }),
      });

    it('reads the key once; the ready caller sends its call and probe with it, reading nothing more', async () => {
      server.routes.set('/api', ok);
      server.routes.set('/health', ok);
      let asked = 0;
      const preparation = await keyed(async () => `key-${++asked}`).prepare();
      if (preparation.kind !== 'ready') throw new Error(`not ready: ${preparation.reason}`);
      expect(asked).toBe(1);

      await preparation.caller.call('{"id":"a"}', { idempotencyKey: 'a' });
      await preparation.caller.probe();

      expect(asked).toBe(1);
      expect(server.requests.map((r) => [r.method, r.url, r.headers.authorization])).toEqual([
        ['POST', '/api', 'Bearer key-1'],
        ['GET', '/health', 'Bearer key-1'],
      ]);
      expect(server.requests[0]?.headers['idempotency-key']).toBe('a');
      expect(server.requests[0]?.body).toBe('{"id":"a"}');
    });

    it('is not ready, with the reason, when the key cannot be read: nothing is sent', async () => {
      const api = keyed(async () => {
        throw new Error('ParameterStore throttled');
      });

      await expect(api.prepare()).resolves.toEqual({
        kind: 'not-ready',
        reason: 'no API key: ParameterStore throttled',
      });
      expect(server.requests).toHaveLength(0);
    });

    it('gives up on a key read that takes longer than keyReadTimeoutMs, and asks again next time', async () => {
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
      try {
        let asked = 0;
        const api = keyed(() => (++asked === 1 ? new Promise<never>(() => undefined) : Promise.resolve('k')), 100);
        const preparing = api.prepare();
        await jest.advanceTimersByTimeAsync(99);
        let settled = false;
        void preparing.then(() => (settled = true));
        await jest.advanceTimersByTimeAsync(0);
        expect(settled).toBe(false);
        await jest.advanceTimersByTimeAsync(1);

        await expect(preparing).resolves.toEqual({
          kind: 'not-ready',
          reason: 'no API key: not read within 100 ms',
        });
        await expect(api.prepare()).resolves.toMatchObject({ kind: 'ready' });
        expect(asked).toBe(2);
      } finally {
        jest.useRealTimers();
      }
    });

    it('refuses a key read timeout that is not a positive number', () => {
      for (const keyReadTimeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(
          () => new HttpApiCaller({ apiUrl: 'http://x', healthUrl: 'http://x', timeoutMs: 1, keyReadTimeoutMs }),
        ).toThrow(RangeError);
      }
    });
  });
});
