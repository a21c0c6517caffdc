import defaultScenario from '../../../tools/simulation/scenarios/default.json';
import { ConfigError } from '../../../lib/errors';
import { parseScenario } from '../../../tools/simulation/scenario';
import { runSimulation, type SimulationResult } from '../../../tools/simulation/runSimulation';
import type { CircuitChange } from '../../../tools/simulation/report';

/** A backlog with FIFO groups, poison and malformed jobs, and a 12 s outage in the middle; realistic worker starts. */
const outageScenario = parseScenario(defaultScenario);
/** The same with every worker starting 20 ms after its invoke and every event delivered once. */
// Without the outage too: a batch that finds the circuit open before a slot gives that job back without a call.
const onTimeScenario = parseScenario({
  ...defaultScenario,
  api: { ...defaultScenario.api, outages: [] },
  startDelays: { kind: 'fixed', ms: 20 },
  duplicateDeliveries: { share: 0 },
});

function statusAt(changes: readonly CircuitChange[], at: number): CircuitChange['status'] {
  let status: CircuitChange['status'] = 'closed';
  for (const change of changes) if (change.at <= at) status = change.status;
  return status;
}

describe('runSimulation', () => {
  let result: SimulationResult;

  beforeAll(async () => {
    result = await runSimulation(outageScenario);
  });

  describe('with an outage', () => {
    it('ends every job exactly once, inside the quota and in FIFO order', () => {
      expect(result.report).toMatchObject({
        jobs: 400,
        lost: 0,
        duplicates: 0,
        rejectedByApi: 0,
        fifoOrderViolations: 0,
      });
      expect(result.report.succeeded + result.report.deadLettered).toBe(400);
      for (const tier of outageScenario.config.quotas)
        expect(result.api.maxWindowUsage(tier)).toBeLessThanOrEqual(tier.limit);
    });

    it('dead-letters poison jobs after one call and malformed ones without a call, each with its reason', () => {
      // A late-starting poison job is given back to the requeue queue first, so its dead letter is in requeue-dlq.
      const dead = (['main-dlq', 'fifo-dlq', 'requeue-dlq'] as const).flatMap((q) => result.queues.messages(q));
      const reasons = dead.map((m) => m.attributes.reason?.value ?? '');
      expect(reasons.filter((r) => r === 'permanent: HTTP 400 Bad Request')).toHaveLength(4);
      expect(reasons.filter((r) => r.startsWith('malformed: body is not JSON'))).toHaveLength(2);
      expect(result.report.deadLettered).toBe(6);
      const poisonCalls = result.api.callLog.filter((c) => c.status === 400);
      expect(poisonCalls).toHaveLength(4);
    });

    it('opens the circuit during the outage and closes it after a health check', () => {
      expect(result.report.circuitOpened).toBeGreaterThanOrEqual(1);
      expect(result.report.circuitClosed).toBeGreaterThanOrEqual(1);
      const statuses = result.circuitChanges.map((c) => c.status);
      expect(statuses.indexOf('open')).toBeLessThan(statuses.lastIndexOf('closed'));
      expect(statuses[statuses.length - 1]).toBe('closed');
    });

    it('dispatches no job while the circuit is not closed, once the orchestrator has read it (within circuitPollMs)', () => {
      const dispatches = result.orchestratorEvents.filter((e) => e.type === 'dispatched');
      const pollMs = outageScenario.config.orchestrator.circuitPollMs;
      // The orchestrator reads the circuit every circuitPollMs, not before each dispatch: a worker's change reaches
      // dispatch within that, and no later.
      const sinceLeftClosed = (at: number): number =>
        at - [...result.circuitChanges].reverse().find((c) => c.at <= at && c.status === 'open')!.at;
      const during = dispatches.filter((e) => statusAt(result.circuitChanges, e.at) !== 'closed');
      expect(during.filter((e) => sinceLeftClosed(e.at) > pollMs)).toEqual([]);
      const opened = result.circuitChanges.find((c) => c.status === 'open')!.at;
      const closed = result.circuitChanges.filter((c) => c.status === 'closed').pop()!.at;
      expect(dispatches.filter((e) => e.at > opened + pollMs && e.at < closed)).toEqual([]);
    });

    it('calls no job more than circuitPollMs after the circuit opened: a batch reads it again before each slot', () => {
      // A worker asks 50 ms before the slot, on a reading at most circuitPollMs old; the call starts by callBy.
      const boundMs = outageScenario.config.orchestrator.circuitPollMs + 100;
      const late = result.api.callLog.filter(
        (c) =>
          statusAt(result.circuitChanges, c.at - boundMs) === 'open' &&
          statusAt(result.circuitChanges, c.at) !== 'closed',
      );
      expect(late).toEqual([]);
      expect(result.orchestratorEvents.filter((e) => e.type === 'dispatched').length).toBeGreaterThan(
        result.api.callLog.length - result.api.report().probes,
      );
    });

    it('makes the first job call within healthCheckSeconds + 1 s of the API becoming healthy', () => {
      const outage = outageScenario.api.outages[0]!;
      const healthyAt = result.start + (outage.atSeconds + outage.forSeconds) * 1000;
      const firstSuccess = result.api.firstSuccessAfter(healthyAt);
      expect(firstSuccess).toBeDefined();
      expect(firstSuccess! - healthyAt).toBeLessThanOrEqual(
        (outageScenario.config.circuit.healthCheckSeconds + 1) * 1000,
      );
    });

    it('uses at least 85% of the tightest tier over the run, though a late-starting worker gives its slot back', () => {
      expect(result.report.utilization).toBeGreaterThanOrEqual(0.85);
      expect(result.report.durationSeconds).toBeGreaterThan(result.report.optimalSeconds);
    });

    it('spends the minute tier at the second tier’s pace, so it beats the minute tier’s long-run time', () => {
      // 400 jobs against 10 a second and 400 a minute: the long-run time is the minute tier's 60 s plus the outage;
      // spent at 10 a second, the minute's quota lasts the whole backlog.
      expect(result.report.optimalSeconds).toBeLessThan(result.report.idealSeconds);
      expect(result.report.durationSeconds).toBeLessThan(result.report.idealSeconds);
    });

    it('is deterministic: the same scenario gives the same report', async () => {
      const again = await runSimulation(outageScenario);
      expect(again.report).toEqual(result.report);
    });
  });

  describe('with every worker starting on time', () => {
    let onTime: SimulationResult;

    beforeAll(async () => {
      onTime = await runSimulation(onTimeScenario);
    });

    it('calls the API once per dispatch: no worker starts too late to call', () => {
      expect(onTime.report).toMatchObject({
        jobs: 400,
        lost: 0,
        duplicates: 0,
        rejectedByApi: 0,
        fifoOrderViolations: 0,
      });
      expect(onTime.orchestratorEvents.filter((e) => e.type === 'dispatched')).toHaveLength(onTime.report.apiCalls);
    });

    it('uses at least 90% of the tightest tier over the run', () => {
      expect(onTime.report.utilization).toBeGreaterThanOrEqual(0.9);
    });
  });

  describe('with cost tiers', () => {
    it('paces by cost and never exceeds the cost tier', async () => {
      const scenario = parseScenario({
        quotas: [
          { limit: 20, per: 'second' },
          { limit: 600, per: 'minute', unit: 'cost' },
        ],
        jobs: { count: 150, costMin: 1, costMax: 9 },
        api: { latencyMs: 40 },
        pacing: { rampSeconds: 0 },
        // Cost pacing alone: the late-starting workers' slots, given back, would cost the utilization asserted here.
        startDelays: { kind: 'fixed', ms: 20 },
      });
      const { report, api } = await runSimulation(scenario);
      expect(report).toMatchObject({ jobs: 150, succeeded: 150, lost: 0, rejectedByApi: 0, duplicates: 0 });
      expect(api.maxWindowUsage({ per: 'minute', unit: 'cost' })).toBeLessThanOrEqual(600);
      expect(report.utilization).toBeGreaterThanOrEqual(0.9);
    });
  });
  describe('while DynamoDB is slow', () => {
    it('ends every job when each request to the table takes 80 ms, longer than the circuit check’s 50 ms lead', async () => {
      const scenario = parseScenario({
        name: 'slow table',
        quotas: [{ limit: 20, per: 'second' }],
        jobs: { count: 60 },
        awsLatency: { lambdaMs: 10, dynamodbMs: 80, sqsMs: 7 },
        maxSeconds: 60,
      });

      const { report } = await runSimulation(scenario);

      // With the read sent a fixed 50 ms before each slot, no read answered by callBy: no job ever called.
      expect(report).toMatchObject({ jobs: 60, succeeded: 60, stillQueued: 0, lost: 0, rejectedByApi: 0 });
    });

    it('ends every job when each request takes 200 ms and the quota is free: the lead grown for late claims is used', async () => {
      const scenario = parseScenario({
        name: 'slower table, free quota',
        quotas: [{ limit: 50, per: 'second' }],
        jobs: { count: 20 },
        awsLatency: { lambdaMs: 20, dynamodbMs: 200, sqsMs: 10 },
        maxSeconds: 600,
      });

      const { report } = await runSimulation(scenario);

      // A run behind its schedule took slots the configured 250 ms ahead, whatever the lead had grown to: each worker
      // claimed its key too late for its slot, and every job was given back at every dispatch.
      expect(report).toMatchObject({ jobs: 20, succeeded: 20, stillQueued: 0, lost: 0, rejectedByApi: 0 });
    });
  });
  describe('when its time runs out', () => {
    it('reports the jobs an hour tier holds back as still queued, not lost', async () => {
      const scenario = parseScenario({
        name: 'hour tier',
        quotas: [
          { limit: 5, per: 'second' },
          { limit: 10, per: 'hour' },
        ],
        jobs: { count: 15 },
        startDelays: { kind: 'fixed', ms: 20 },
        maxSeconds: 30,
      });

      const { report } = await runSimulation(scenario);

      expect(report).toMatchObject({ jobs: 15, succeeded: 10, deadLettered: 0, stillQueued: 5, lost: 0 });
    });
  });
});

describe('parseScenario', () => {
  it('ends when the last worker does, not at the next tick, when a run stopped with nothing left to receive', async () => {
    // Every event is delivered a second time 5 s after the first ended: the run has stopped by then (it found nothing
    // for idleStopMs), and the next tick is a minute away.
    const scenario = parseScenario({
      name: 'straggler',
      quotas: [{ limit: 10, per: 'second' }],
      jobs: { count: 5 },
      startDelays: { kind: 'fixed', ms: 20 },
      duplicateDeliveries: { share: 1, whileRunningShare: 0, afterEndMinMs: 5_000, afterEndMaxMs: 5_000 },
    });

    const { report } = await runSimulation(scenario);

    expect(report).toMatchObject({ jobs: 5, succeeded: 5, duplicates: 0 });
    expect(report.durationSeconds).toBeGreaterThan(5);
    expect(report.durationSeconds).toBeLessThan(10);
  });

  describe('against an LLM API', () => {
    /**
     * Requests, input and output tokens per minute, at most 4 calls in progress; prompts of 200 to 800 tokens and
     * max_tokens 512, answers using 20 to 100 % of it. Output binds: 20 000 / 512 = 39 calls a minute at max_tokens, 65
     * at the real output.
     */
    const llmScenario = parseScenario({
      name: 'llm',
      quotas: [
        { limit: 100, per: 'minute' },
        { limit: 100_000, per: 'minute', unit: 'input_tokens' },
        { limit: 20_000, per: 'minute', unit: 'output_tokens' },
      ],
      maxInFlight: 4,
      usagePreset: 'anthropic',
      jobs: { count: 60, llm: { promptTokensMin: 200, promptTokensMax: 800, maxTokens: 512 } },
      api: { latencyMs: 300, concurrency: 4, llm: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 4 } },
    });

    it('keeps to every tier and to maxInFlight, and hands the unused output back to go faster than max_tokens allow', async () => {
      const { report, api, orchestratorEvents } = await runSimulation(llmScenario);
      expect(report).toMatchObject({ jobs: 60, succeeded: 60, lost: 0, duplicates: 0, rejectedByApi: 0 });
      expect(api.peakCallsInFlight()).toBeLessThanOrEqual(4);
      // At max_tokens, 60 calls take over a minute and a half of the output tier: handed back, well under.
      expect(report.durationSeconds).toBeLessThan(75);
      const handedBack = orchestratorEvents.reduce(
        (sum, e) => sum + (e.type === 'flushed' ? (e.handedBack?.output_tokens ?? 0) : 0),
        0,
      );
      expect(handedBack).toBeGreaterThan(0.2 * 60 * 512);
    });
  });

  it('refuses an invalid tier set naming the field and the allowed values', () => {
    expect(() => parseScenario({ quotas: [{ limit: 0, per: 'second' }] })).toThrow(
      new ConfigError('quotas[0].limit', 'must be an integer from 1 to 1000000000000; got 0'),
    );
    expect(() => parseScenario({ quotas: [{ limit: 5, per: 'fortnight' }] })).toThrow(
      /quotas\[0\]\.per: must be one of second, minute, hour, day, month/,
    );
    expect(() => parseScenario({ quotas: [] })).toThrow(/quotas: must hold at least one tier/);
  });

  it('refuses a cost tier when every job costs 1', () => {
    expect(() => parseScenario({ quotas: [{ limit: 5, per: 'second', unit: 'cost' }] })).toThrow(
      /quotas\[0\]\.unit: 'cost' needs jobs that carry a cost/,
    );
  });

  it('refuses more special jobs than jobs, and unknown keys', () => {
    expect(() =>
      parseScenario({ quotas: [{ limit: 5, per: 'second' }], jobs: { count: 3, poison: 2, fifo: 2 } }),
    ).toThrow(/jobs: fifo \+ poison \+ malformed \+ bulk \(4\) must not exceed count \(3\)/);
    expect(() => parseScenario({ quotas: [{ limit: 5, per: 'second' }], colour: 'red' })).toThrow(
      /colour: unknown key/,
    );
  });
});
