import { runLocal, type LocalRunResult } from '../../tools/local/localRun';
import type { Template } from '../../tools/local/template';
import { parseScenario } from '../../tools/simulation/scenario';
import { testEmulators, testSqsClient } from '../helpers/awsClients';
import { packagedTemplate } from '../../tools/local/packageService';
import { startApiServer } from '../../tools/local/apiServer';
import { VirtualApi } from '../../tools/simulation/virtualApi';
import { systemClock } from '../../lib/adapters/systemClock';
import { GetQueueUrlCommand, PurgeQueueCommand } from '@aws-sdk/client-sqs';

/** A small scenario with everything the default one has: FIFO groups, poison and malformed jobs, an outage. */
const SCENARIO = {
  name: 'local run check',
  seed: 3,
  quotas: [
    { limit: 20, per: 'second' },
    { limit: 600, per: 'minute' },
  ],
  jobs: { count: 60, fifo: 12, fifoGroups: 3, poison: 2, malformed: 1 },
  api: { latencyMs: 10, outages: [{ atSeconds: 1, forSeconds: 2 }] },
  circuit: { failureThreshold: 2, windowSeconds: 10, openSeconds: 1, healthCheckSeconds: 1 },
  pacing: { rampSeconds: 1 },
  maxSeconds: 60,
  // Worker starts and deliveries as on Lambda (the default): late starts, and a share of events delivered twice.
};

/** Empties every queue of `template` on the test emulator. */
async function purgeQueues(template: Template): Promise<void> {
  const sqs = testSqsClient();
  try {
    for (const resource of Object.values(template.Resources)) {
      if (resource.Type !== 'AWS::SQS::Queue') continue;
      const { QueueUrl } = await sqs.send(
        new GetQueueUrlCommand({ QueueName: String(resource.Properties?.QueueName) }),
      );
      await sqs.send(new PurgeQueueCommand({ QueueUrl }));
    }
  } finally {
    sqs.destroy();
  }
}

describe('runLocal on the packaged template', () => {
  let template: Template;
  let result: LocalRunResult;

  beforeAll(async () => {
    template = await packagedTemplate();
    const scenario = parseScenario(SCENARIO);
    result = await runLocal({
      scenario,
      overrides: ['quotas', 'circuit', 'pacing'],
      template,
      emulators: testEmulators(),
    });
  }, 120_000);

  it('ends every job exactly once: the 57 well-formed ones succeed, poison and malformed ones are dead-lettered', () => {
    const { report } = result;
    expect(report).toMatchObject({ jobs: 60, succeeded: 57, deadLettered: 3, lost: 0, duplicates: 0 });
  });

  it('reads the key from the local parameter store, and every request reaches the API as authorization: Bearer', () => {
    expect(result.provider).toMatchObject({
      headers: { calls: { authorization: 'Bearer local-api-key' }, probes: { authorization: 'Bearer local-api-key' } },
      refused: 0,
    });
    expect(result.provider?.keyReads).toBeGreaterThan(0);
  });

  it('never exceeds the quota and keeps FIFO order through the outage', () => {
    expect(result.report.rejectedByApi).toBe(0);
    expect(result.report.fifoOrderViolations).toBe(0);
  });

  it('opens the circuit on the outage and closes it after a health check', () => {
    expect(result.report.circuitOpened).toBeGreaterThanOrEqual(1);
    expect(result.report.circuitClosed).toBeGreaterThanOrEqual(1);
    const circuits = result.timeline.map((row) => row.circuit);
    expect(circuits.indexOf('open')).toBeGreaterThan(0);
    expect(circuits.lastIndexOf('closed')).toBeGreaterThan(circuits.indexOf('open'));
  });

  it('writes a per-second timeline whose calls add up to the report', () => {
    const { timeline, report } = result;
    expect(timeline.length).toBe(Math.ceil(report.durationSeconds));
    expect(timeline.reduce((sum, row) => sum + row.calls, 0)).toBe(report.apiCalls);
    expect(timeline.some((row) => row.failed > 0)).toBe(true);
  });

  it("meters each function's own AWS requests and billed time", () => {
    const { orchestrator, worker } = result;
    // Every worker start is one of the orchestrator's Event invokes (jobs and health checks), a second delivery of
    // one, or Lambda's retry of a failed attempt.
    expect(worker.duplicateDeliveries).toBeGreaterThan(0);
    expect(orchestrator.requests['lambda.InvokeCommand']?.count).toBe(
      worker.invocations - worker.duplicateDeliveries - worker.retries,
    );
    expect(orchestrator.requests['sqs.ReceiveMessageCommand']?.count).toBeGreaterThan(0);
    // Each success deletes its message, alone or in a batch's delete of up to ten; the worker never receives.
    const deletes = worker.requests['sqs.DeleteMessageCommand']?.count ?? 0;
    const batchDeletes = worker.requests['sqs.DeleteMessageBatchCommand']?.count ?? 0;
    expect(batchDeletes).toBeGreaterThan(0);
    expect(deletes + 10 * batchDeletes).toBeGreaterThanOrEqual(57);
    expect(worker.requests['sqs.ReceiveMessageCommand']).toBeUndefined();
    expect(orchestrator.billedMs).toBeGreaterThan(0);
    expect(worker.billedMs).toBeGreaterThan(0);
    expect(result.calls).toHaveLength(result.report.apiCalls);
  });
});

describe("runLocal with a provider's own headers", () => {
  it("sends Anthropic's x-api-key and anthropic-version to calls and health checks, as the scenario's request says", async () => {
    const scenario = parseScenario({
      name: 'anthropic headers',
      seed: 9,
      quotas: [{ limit: 5, per: 'second' }],
      jobs: { count: 20 },
      api: { latencyMs: 10, outages: [{ atSeconds: 0, forSeconds: 4 }] },
      circuit: { failureThreshold: 2, windowSeconds: 10, openSeconds: 1, healthCheckSeconds: 1 },
      request: { apiKeyHeader: 'x-api-key', requestHeaders: { 'anthropic-version': '2023-06-01' }, apiMethod: 'PUT' },
      maxSeconds: 60,
    });

    const result = await runLocal({
      scenario,
      overrides: ['quotas', 'circuit'],
      template: await packagedTemplate(),
      emulators: testEmulators(),
    });

    expect(result.report).toMatchObject({ jobs: 20, succeeded: 20, lost: 0, duplicates: 0 });
    const headers = { 'x-api-key': 'local-api-key', 'anthropic-version': '2023-06-01' };
    expect(result.provider).toMatchObject({ headers: { calls: headers, probes: headers }, refused: 0 });
    // The outage opened the circuit, and a health check carrying the headers closed it.
    expect(result.circuitChanges.map((change) => change.status)).toContain('open');
  }, 120_000);
});

describe('runLocal against an external API (--api-url)', () => {
  it('has the workers call that API themselves and counts, from their calls, what the API saw', async () => {
    const scenario = parseScenario({
      name: 'external',
      seed: 5,
      quotas: [{ limit: 20, per: 'second' }],
      jobs: { count: 30, fifo: 6, fifoGroups: 2, poison: 1 },
      maxSeconds: 60,
    });
    const external = new VirtualApi({ clock: systemClock, tiers: scenario.config.quotas, latencyMs: 10 });
    const server = await startApiServer(external);
    try {
      const result = await runLocal({
        scenario,
        overrides: ['quotas'],
        template: await packagedTemplate(),
        emulators: testEmulators(),
        externalApi: server,
      });

      expect(result.report).toMatchObject({
        jobs: 30,
        succeeded: 29,
        deadLettered: 1,
        lost: 0,
        duplicates: 0,
        rejectedByApi: 0,
        fifoOrderViolations: 0,
      });
      expect(result.report.apiCalls).toBe(external.report().apiCalls);
      expect(result.calls.map((call) => call.id).sort()).toEqual(external.callLog.map((call) => call.id).sort());
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe('runLocal when its time runs out', () => {
  it('reports the jobs an hour tier holds back as still queued, apart from lost ones', async () => {
    const scenario = parseScenario({
      name: 'hour tier',
      seed: 7,
      quotas: [
        { limit: 20, per: 'second' },
        { limit: 10, per: 'hour' },
      ],
      jobs: { count: 15 },
      maxSeconds: 8,
    });

    const template = await packagedTemplate();
    try {
      const { report } = await runLocal({ scenario, overrides: ['quotas'], template, emulators: testEmulators() });

      expect(report).toMatchObject({ jobs: 15, succeeded: 10, deadLettered: 0, stillQueued: 5, lost: 0 });
    } finally {
      // The template's queues keep their names from run to run on the shared emulator: empty them for the next.
      await purgeQueues(template);
    }
  }, 120_000);
});
