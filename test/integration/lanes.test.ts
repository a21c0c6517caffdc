/**
 * A deployment of three lanes on the emulators, through the production handlers and adapters: one orchestrator
 * invocation serves every lane, a lane whose API is down (its circuit open) never delays another, a lane whose queues
 * are empty takes no lease, and each lane's worker calls its own API within its own quota.
 */
import { FAST_SETTINGS, WORKER_FUNCTION } from '../../tools/local/stackOptions';
import { LocalHarness } from '../../tools/local/harness';
import { createLaneQueues } from '../../tools/local/laneQueues';
import { startApiServer, type ApiServer } from '../../tools/local/apiServer';
import { destroyClients } from '../../tools/local/clients';
import { VirtualApi } from '../../tools/simulation/virtualApi';
import { systemClock } from '../../lib/adapters/systemClock';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { handlerFromEnv as orchestratorHandlerFromEnv, type OrchestratorResult } from '../../functions/orchestrator';
import { handlerFromEnv as workerHandlerFromEnv } from '../../functions/worker';
import { localTelemetry } from '../../tools/local/harness';
import type { Env } from '../../lib/configFromEnv';
import { parseTiers, type Tier } from '../../lib/domain/quota/tiers';
import { testEmulators } from '../helpers/awsClients';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { StateFormatError } from '../../lib/errors';

jest.setTimeout(60_000);

const harnesses: LocalHarness[] = [];
const servers: ApiServer[] = [];

afterAll(async () => {
  for (const server of servers) await server.close();
  for (const harness of harnesses) await harness.close({ idleWithinMs: 5_000 });
});

/** A simulated API of `tiers`, down (503) for `downMs` from now, served over HTTP. */
async function serveApi(tiers: readonly Tier[], downMs = 0): Promise<{ api: VirtualApi; server: ApiServer }> {
  const now = systemClock.now();
  const api = new VirtualApi({
    clock: systemClock,
    tiers,
    latencyMs: 10,
    outages: downMs === 0 ? [] : [{ startMs: now - 1, endMs: now + downMs }],
  });
  const server = await startApiServer(api);
  servers.push(server);
  return { api, server };
}

/** A lane's variables of `LANES`: `limit` calls a second to `server`, with the fast test settings. */
function laneVariables(server: ApiServer, limit: number): Record<string, unknown> {
  return {
    QUOTAS: [{ limit, per: 'second' }],
    RETRY: FAST_SETTINGS.retry,
    CIRCUIT: FAST_SETTINGS.circuit,
    PACING: FAST_SETTINGS.pacing,
    API_URL: server.apiUrl,
    HEALTH_URL: server.healthUrl,
  };
}

/** The functions' environment of a deployment of `lanes` on `harness`'s table, its queues named after `urlPrefix`. */
function lanesEnv(harness: LocalHarness, urlPrefix: string, lanes: Record<string, unknown>): Env {
  return {
    TABLE_NAME: harness.resources.tableName,
    WORKER_FUNCTION_NAME: WORKER_FUNCTION,
    ORCHESTRATOR: JSON.stringify(FAST_SETTINGS.orchestrator),
    QUEUE_URL_PREFIX: urlPrefix,
    LANES: JSON.stringify(lanes),
  };
}

describe('a deployment of three lanes', () => {
  it('runs every lane in one invocation, each at its own pace, one held by its outage without delaying another', async () => {
    const harness = await LocalHarness.fresh({ emulators: testEmulators(), maxReceiveCount: 10 });
    harnesses.push(harness);
    const mainUrl = harness.resources.queueUrls.main;
    const urlPrefix = mainUrl.slice(0, -'main'.length);
    const namePrefix = urlPrefix.slice(urlPrefix.lastIndexOf('/') + 1);
    const [downUrls] = await Promise.all([
      createLaneQueues(harness.clients.sqs, `${namePrefix}down`, { maxReceiveCount: 10 }),
      createLaneQueues(harness.clients.sqs, `${namePrefix}idle`, { maxReceiveCount: 10 }),
    ]);
    const fast = await serveApi(parseTiers([{ limit: 10, per: 'second' }]));
    const down = await serveApi(parseTiers([{ limit: 5, per: 'second' }]), 3_000);
    const idle = await serveApi(parseTiers([{ limit: 5, per: 'second' }]));
    const env = lanesEnv(harness, urlPrefix, {
      default: laneVariables(fast.server, 10),
      down: laneVariables(down.server, 5),
      idle: laneVariables(idle.server, 5),
    });
    await harness.host(
      [
        {
          kind: 'worker',
          name: WORKER_FUNCTION,
          env,
          timeoutMs: FAST_SETTINGS.orchestrator.workerTimeoutMs,
          maximumRetryAttempts: 0,
        },
      ],
      {},
      { retryDelayMs: 100 },
    );
    const downQueues = new SqsQueues({ client: harness.clients.sqs, queueUrls: downUrls });
    for (let i = 0; i < 20; i++) await harness.queues.send('main', { body: JSON.stringify({ id: `fast-${i}` }) });
    for (let i = 0; i < 4; i++) await downQueues.send('main', { body: JSON.stringify({ id: `down-${i}` }) });

    const clients = harness.runClients();
    const startedAt = systemClock.now();
    const done = () => fast.api.succeededIds().length === 20 && down.api.succeededIds().length === 4;
    let result: OrchestratorResult;
    try {
      const handler = orchestratorHandlerFromEnv(env, clients, localTelemetry(), done);
      const end = startedAt + 30_000;
      result = await handler({}, { awsRequestId: 'lanes', getRemainingTimeInMillis: () => end - systemClock.now() });
    } finally {
      destroyClients(clients);
    }

    expect(result).toEqual({
      default: expect.objectContaining({ lease: 'acquired', dispatched: 20 }),
      down: expect.objectContaining({ lease: 'acquired', dispatched: expect.any(Number) }),
      idle: { lease: 'idle', dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 },
    });
    expect(fast.api.succeededIds()).toHaveLength(20);
    expect(down.api.succeededIds()).toHaveLength(4);
    // Each API saw only its own lane's jobs, and none beyond its quota.
    expect(fast.api.callLog.every((call) => call.id.startsWith('fast-'))).toBe(true);
    expect(down.api.callLog.every((call) => call.id.startsWith('down-'))).toBe(true);
    expect(fast.api.maxWindowUsage({ per: 'second', unit: 'requests' })).toBeLessThanOrEqual(10);
    expect(down.api.maxWindowUsage({ per: 'second', unit: 'requests' })).toBeLessThanOrEqual(5);
    // The down lane's circuit opened and held its jobs until the outage ended; the other lane finished meanwhile.
    const circuit = await harness.circuit('down');
    expect(circuit?.state.status).toBe('closed');
    expect(circuit?.transitions?.map(({ to }) => to)).toContain('open');
    expect((await harness.circuit('default'))?.transitions ?? []).toEqual([]);
    const lastFast = Math.max(...fast.api.callLog.map((call) => call.at));
    const firstDownSuccess = Math.min(...down.api.callLog.filter((call) => call.status === 200).map((call) => call.at));
    expect(lastFast).toBeLessThan(startedAt + 3_000);
    expect(firstDownSuccess).toBeGreaterThanOrEqual(startedAt + 3_000);
    // The idle lane read and wrote no state: no lease, ledger or circuit item of its own.
    expect(await harness.stores.ledger.loadLedger('idle')).toBeUndefined();
    expect(await harness.stores.ledger.loadLedger('down')).toBeDefined();
    expect(idle.api.callLog).toHaveLength(0);
  });

  it("ends every other lane's run cleanly when one lane's stored ledger is corrupt, then fails the invocation", async () => {
    const harness = await LocalHarness.fresh({ emulators: testEmulators(), maxReceiveCount: 10 });
    harnesses.push(harness);
    const urlPrefix = harness.resources.queueUrls.main.slice(0, -'main'.length);
    const namePrefix = urlPrefix.slice(urlPrefix.lastIndexOf('/') + 1);
    const badUrls = await createLaneQueues(harness.clients.sqs, `${namePrefix}bad`, { maxReceiveCount: 10 });
    // A lane item whose ledger is not a ledger: reading it fails with StateFormatError, which no retry mends.
    await harness.clients.dynamodb.send(
      new PutItemCommand({
        TableName: harness.resources.tableName,
        Item: { pk: { S: 'lane#bad' }, ledger: { S: '{"tiers": "garbled"' } },
      }),
    );
    const good = await serveApi(parseTiers([{ limit: 10, per: 'second' }]));
    const bad = await serveApi(parseTiers([{ limit: 10, per: 'second' }]));
    const env = lanesEnv(harness, urlPrefix, {
      default: laneVariables(good.server, 10),
      bad: laneVariables(bad.server, 10),
    });
    const workerTimeoutMs = FAST_SETTINGS.orchestrator.workerTimeoutMs;
    await harness.host([
      { kind: 'worker', name: WORKER_FUNCTION, env, timeoutMs: workerTimeoutMs, maximumRetryAttempts: 0 },
    ]);
    for (let i = 0; i < 5; i++) await harness.queues.send('main', { body: JSON.stringify({ id: `good-${i}` }) });
    await new SqsQueues({ client: harness.clients.sqs, queueUrls: badUrls }).send('main', {
      body: JSON.stringify({ id: 'bad-0' }),
    });

    const clients = harness.runClients();
    const end = systemClock.now() + 20_000;
    try {
      const handler = orchestratorHandlerFromEnv(
        env,
        clients,
        localTelemetry(),
        () => good.api.succeededIds().length === 5,
      );
      await expect(
        handler({}, { awsRequestId: 'corrupt', getRemainingTimeInMillis: () => end - systemClock.now() }),
      ).rejects.toBeInstanceOf(StateFormatError);
    } finally {
      destroyClients(clients);
    }
    expect(good.api.succeededIds()).toHaveLength(5);
    expect(bad.api.callLog).toHaveLength(0);
    // The good lane's run ended as runs end, its lease released, before the invocation failed.
    expect(await harness.stores.lease.acquireLease('default', 'next-run', systemClock.now(), 1_000)).not.toBeNull();
  });

  it("refuses a worker event of a lane the deployment does not have, so it lands in the worker's failure queue", async () => {
    const handler = workerHandlerFromEnv(
      {
        TABLE_NAME: 'unused',
        QUEUE_URL_PREFIX: 'http://127.0.0.1:1/000000000000/qo-',
        LANES: JSON.stringify({
          a: {
            QUOTAS: [{ limit: 1, per: 'second' }],
            API_URL: 'http://127.0.0.1:1/jobs',
            HEALTH_URL: 'http://127.0.0.1:1/h',
          },
        }),
      },
      { dynamodb: harnesses[0]!.clients.dynamodb, sqs: harnesses[0]!.clients.sqs },
      localTelemetry(),
    );
    await expect(handler({ kind: 'health-check', lane: 'b', checkId: 'c' })).rejects.toThrow(
      'worker event\'s lane must be one of this deployment\'s lanes (a); got "b"',
    );
  });
});
