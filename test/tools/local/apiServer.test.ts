import { parseTiers, type Tier } from '../../../lib/domain/quota/tiers';
import { SENT_AT_HEADER, stampSentAt, startApiServer, type ApiServer } from '../../../tools/local/apiServer';
import type { ApiCaller, ApiResult } from '../../../lib/ports/ApiCaller';
import type { Clock } from '../../../lib/ports/Clock';
import { VirtualApi } from '../../../tools/simulation/virtualApi';
import { awkwardBody } from '../../helpers/serviceFixtures';

/** Time stands still at instant 0 and sleeps end at once: the VirtualApi answers deterministically, with no latency. */
const frozenClock: Clock = { now: () => 0, sleep: async () => undefined };

const ONE_PER_SECOND: Tier = parseTiers([{ limit: 1, per: 'second' }])[0]!;

const servers: ApiServer[] = [];

async function serve(api: ApiCaller): Promise<ApiServer> {
  const server = await startApiServer(api);
  servers.push(server);
  return server;
}

/** The simulated API on the frozen clock, told of no request's wait for its body (the frozen clock would date it before 0). */
function virtualApi(
  options: { tiers?: readonly Tier[]; outages?: { startMs: number; endMs: number }[] } = {},
): ApiCaller {
  const api = new VirtualApi({
    clock: frozenClock,
    tiers: options.tiers ?? [ONE_PER_SECOND],
    latencyMs: 0,
    outages: options.outages,
  });
  return { call: (body, { idempotencyKey }) => api.call(body, { idempotencyKey }), probe: () => api.probe() };
}

/** An ApiCaller that answers `result` to everything and records the calls it got. */
function fakeApi(result: ApiResult) {
  const calls: { body: string; idempotencyKey: string; waitedMs?: number }[] = [];
  let resolveCalled!: () => void;
  const called = new Promise<void>((resolve) => (resolveCalled = resolve));
  const api: ApiCaller = {
    call: async (body, context) => {
      calls.push({ body, ...context });
      resolveCalled();
      return result;
    },
    probe: async () => result,
  };
  return { api, calls, called };
}

function post(server: ApiServer, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(server.apiUrl, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe('startApiServer', () => {
  it('listens on 127.0.0.1 and names the job and health URLs', async () => {
    const server = await serve(virtualApi());
    expect(server.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/jobs$/);
    expect(server.healthUrl).toBe(server.apiUrl.replace(/\/jobs$/, '/health'));
  });

  describe('POST /jobs', () => {
    it('answers an accepted job 200 with x-actual-cost and a JSON body', async () => {
      const server = await serve(virtualApi({ tiers: parseTiers([{ limit: 10, per: 'minute', unit: 'cost' }]) }));
      const response = await post(server, JSON.stringify({ id: 'a', cost: 3 }));
      expect(response.status).toBe(200);
      expect(response.headers.get('x-actual-cost')).toBe('3');
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(await response.json()).toEqual({ status: 200 });
    });

    it("sends an LLM's answer as its body, with its usage", async () => {
      const llm = new VirtualApi({
        clock: frozenClock,
        tiers: [],
        latencyMs: 0,
        llm: { outputShareMin: 0.5, outputShareMax: 0.5, msPerOutputToken: 0 },
      });
      const server = await serve({
        call: (body, { idempotencyKey }) => llm.call(body, { idempotencyKey }),
        probe: () => llm.probe(),
      });
      const response = await post(server, JSON.stringify({ id: 'a', prompt_tokens: 812, max_tokens: 100 }));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('x-actual-cost')).toBeNull();
      expect(await response.json()).toMatchObject({
        id: 'msg-a',
        type: 'message',
        usage: { input_tokens: 812, output_tokens: 50 },
      });
    });

    it('answers a tier overflow 429 with retry-after and no x-actual-cost', async () => {
      const server = await serve(virtualApi());
      expect((await post(server, JSON.stringify({ id: 'a' }))).status).toBe(200);
      const response = await post(server, JSON.stringify({ id: 'b' }));
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(response.headers.get('x-actual-cost')).toBeNull();
    });

    it('answers a poison job 400', async () => {
      const server = await serve(virtualApi());
      expect((await post(server, JSON.stringify({ id: 'x', poison: true }))).status).toBe(400);
    });

    it('answers 503 during an outage', async () => {
      const server = await serve(virtualApi({ outages: [{ startMs: 0, endMs: 1 }] }));
      expect((await post(server, JSON.stringify({ id: 'a' }))).status).toBe(503);
    });

    it('hands the body text unchanged, the idempotency-key header and how long the body took to the API', async () => {
      const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
      const server = await serve(api);
      await post(server, awkwardBody('a'), { 'idempotency-key': 'key-1' });
      await post(server, JSON.stringify('plain'));
      expect(calls).toEqual([
        { body: awkwardBody('a'), idempotencyKey: 'key-1', waitedMs: expect.any(Number) },
        { body: '"plain"', idempotencyKey: '', waitedMs: expect.any(Number) },
      ]);
      expect(calls.every(({ waitedMs }) => waitedMs !== undefined && waitedMs >= 0)).toBe(true);
    });

    it('tells the API how long ago a request stamped by stampSentAt was sent', async () => {
      const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
      const server = await serve(api);
      await post(server, JSON.stringify({ id: 'a' }), { [SENT_AT_HEADER]: String(Date.now() - 5_000) });
      await stampSentAt()(server.apiUrl, {
        method: 'POST',
        body: JSON.stringify({ id: 'b' }),
        headers: { 'idempotency-key': 'key-b' },
      });

      expect(calls[0]?.waitedMs).toBeGreaterThanOrEqual(5_000);
      expect(calls[1]).toMatchObject({ body: '{"id":"b"}', idempotencyKey: 'key-b' });
      expect(calls[1]?.waitedMs).toBeLessThan(5_000);
    });

    it('answers a body that is not JSON 400 with a JSON error, without calling the API', async () => {
      const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
      const server = await serve(api);
      const response = await post(server, '{"id": ');
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: expect.stringMatching(/^body is not JSON/) });
      expect(calls).toEqual([]);
    });

    it('drops the connection for a network-error result', async () => {
      const { api } = fakeApi({ kind: 'network-error', message: 'reset' });
      const server = await serve(api);
      await expect(post(server, '{}')).rejects.toThrow('fetch failed');
    });

    it('never answers a timeout result, and close() still ends the held request', async () => {
      const { api, called } = fakeApi({ kind: 'timeout', afterMs: 1 });
      const server = await startApiServer(api);
      let settled = false;
      const pending = post(server, '{}').finally(() => (settled = true));
      await called;
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).toBe(false);

      await server.close();
      await expect(pending).rejects.toThrow('fetch failed');
    });
  });

  describe('GET /health', () => {
    it('answers 200 while the API is up', async () => {
      const server = await serve(virtualApi());
      expect((await fetch(server.healthUrl)).status).toBe(200);
    });

    it('answers 503 during an outage', async () => {
      const server = await serve(virtualApi({ outages: [{ startMs: 0, endMs: 1 }] }));
      expect((await fetch(server.healthUrl)).status).toBe(503);
    });
  });

  describe('with required headers, as a provider requires its key and version', () => {
    const requiredHeaders = {
      calls: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      probes: { 'anthropic-version': '2023-06-01' },
    };

    it('refuses a call without one, or with another value, 401 naming it, before the API sees it', async () => {
      const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
      const server = await startApiServer(api, { requiredHeaders });
      servers.push(server);

      const missing = await post(server, '{}', { 'x-api-key': 'k' });
      const wrong = await post(server, '{}', { 'x-api-key': 'other', 'anthropic-version': '2023-06-01' });
      const carried = await post(server, '{}', { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' });

      expect([missing.status, wrong.status, carried.status]).toEqual([401, 401, 200]);
      expect(await missing.json()).toEqual({ error: 'missing or wrong header: anthropic-version' });
      expect(await wrong.json()).toEqual({ error: 'missing or wrong header: x-api-key' });
      expect(calls).toHaveLength(1);
      expect(server.refusals()).toBe(2);
    });

    it("checks a health check against the probes' headers", async () => {
      const server = await startApiServer(virtualApi(), { requiredHeaders });
      servers.push(server);
      expect((await fetch(server.healthUrl)).status).toBe(401);
      expect((await fetch(server.healthUrl, { headers: { 'anthropic-version': '2023-06-01' } })).status).toBe(200);
      expect(server.refusals()).toBe(1);
    });
  });

  it('takes job calls with the method given, and only that one', async () => {
    const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
    const server = await startApiServer(api, { callMethod: 'PUT' });
    servers.push(server);
    expect((await fetch(server.apiUrl, { method: 'PUT', body: '{}' })).status).toBe(200);
    expect((await post(server, '{}')).status).toBe(404);
    expect(calls).toHaveLength(1);
  });

  it.each([
    ['GET', '/jobs'],
    ['POST', '/health'],
    ['GET', '/'],
    ['PUT', '/jobs'],
  ])('answers %s %s 404', async (method, path) => {
    const { api, calls } = fakeApi({ kind: 'response', status: 200, headers: {} });
    const server = await serve(api);
    const response = await fetch(new URL(path, server.apiUrl), { method, ...(method === 'GET' ? {} : { body: '{}' }) });
    expect(response.status).toBe(404);
    expect(calls).toEqual([]);
  });
});
