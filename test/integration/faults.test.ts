import { runFaultScenario, type FaultScenarioResult } from '../../tools/faults/runFaults';
import { faultScenarios, POOLED_SUFFIX } from '../../tools/faults/scenarios';
import { testEmulators } from '../helpers/awsClients';

/**
 * `npm run faults -- --quick` inside the test suite: every scenario at its small size, with seed 1 (kill points and
 * fault shares are seeded; the assertions are the suite's invariants, which hold whatever the timing), each fault
 * family on one lane and again on a lane that draws from a pool.
 */
// in-flight-leak has its own file (test/tools/faults/inFlightLeak.test.ts), which checks what it injects and its slots.
const SCENARIOS = faultScenarios('quick').filter((s) => s.name !== 'in-flight-leak');

/** The fault family of a scenario: its name without {@link POOLED_SUFFIX}. */
const family = (name: string): string => name.replace(POOLED_SUFFIX, '');

/** The fault kinds each family must really have injected, so that a scenario cannot pass by injecting nothing. */
const MUST_INJECT: Readonly<Record<string, readonly RegExp[]>> = {
  'orchestrator-killed': [/^orchestrator:killed$/],
  'dynamodb-unavailable': [/^dynamodb\.\w+:unavailable$/],
  'dynamodb-throttled': [/^dynamodb\.\w+:throttled$/],
  // Every write of the state table is an UpdateItem (the idempotency records too): no PutItem is left to lose.
  'dynamodb-answers-lost': [/^dynamodb\.UpdateItem:error-after-success$/],
  // Receives fail with a 500 or a timeout, as the seeded draw of each run has it: either is a failed receive.
  'sqs-errors': [/^sqs\.ReceiveMessage:(server-error|timeout)$/, /^sqs\.DeleteMessage:error-after-success$/],
  'lambda-invoke-faults': [/^lambda\.Invoke:throttled$/, /^lambda\.Invoke:server-error$/],
  'worker-crashes': [/^worker:crash-before-call$/, /^worker:crash-after-call$/, /^worker:delivered-twice$/],
  'two-orchestrators': [/^orchestrator:stale-lease-holder$/, /^orchestrator:manual-invoke$/],
  'clock-skew-ahead': [/^worker:clock-skew$/, /^api:outage$/],
  'clock-skew-behind': [/^worker:clock-skew$/, /^api:outage$/],
  'api-misbehaves': [/^api:hang$/, /^api:rate-limited-without-retry-after$/, /^api:server-error$/],
  'repeated-deliveries': [/^lambda:delivered-twice$/],
  'day-boundary': [/^clock:midnight$/, /^lambda:cold-start$/],
  'probe-overlap': [/^api:outage$/, /^lambda:cold-start$/, /^lambda:delivered-twice$/],
  'caller-rejected': [/^api:caller-rejected$/],
  'lying-headers': [/^api:lying-headers$/],
  'late-starts': [/^lambda:cold-start$/],
  'quota-exhausted': [/^api:rate-limited-for-hours$/, /^clock:leap$/, /^clock:midnight$/],
};

describe('the fault suite (quick sizes)', () => {
  it('has a check of what each scenario injects', () => {
    expect(Object.keys(MUST_INJECT).sort()).toEqual([...new Set(SCENARIOS.map((s) => family(s.name)))].sort());
    expect(SCENARIOS.filter((s) => s.pool !== undefined).map((s) => family(s.name))).toEqual(
      SCENARIOS.filter((s) => s.pool === undefined && s.name !== 'in-flight-leak').map((s) => s.name),
    );
  });

  describe.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', (name, scenario) => {
    let result: FaultScenarioResult;
    beforeAll(async () => {
      result = await runFaultScenario(scenario, testEmulators(), 1);
    }, 150_000);

    it('injected its faults', () => {
      for (const kind of MUST_INJECT[family(name)] ?? [])
        expect(Object.keys(result.faults)).toContainEqual(expect.stringMatching(kind));
    });

    it('lost nothing, ended no job twice, exceeded no quota, kept FIFO order, and no orchestrator crashed', () => {
      expect(result).toMatchObject({
        lost: 0,
        repeatedDeadLetters: 0,
        succeededAndDeadLettered: 0,
        quotaViolations: 0,
        fifoOrderViolations: 0,
        orchestratorCrashes: 0,
        crashErrors: [],
      });
    });

    it('dead-lettered the poison and malformed messages, each with its reason', () => {
      expect(result.deadLetteredWithoutReason).toBe(0);
      // Two poison jobs and three messages the orchestrator refuses; healthy jobs only if their retries ran out.
      expect(result.deadLetteredWithReason).toBe(5 + result.healthyDeadLettered);
    });

    it('called the API twice for a job only after a worker crashed between the call and its record', () => {
      expect(result.duplicateApiCalls).toBe(result.duplicatesAfterCrashBeforeRecord);
    });

    if (family(name) === 'orchestrator-killed') {
      it('killed as many runs as planned, before an invoke and mid-flush among them', () => {
        expect(Object.values(result.killPoints).reduce((sum, n) => sum + n, 0)).toBe(scenario.kills);
        expect(result.killPoints['before-invoke']).toBeGreaterThan(0);
        expect(result.killPoints['mid-flush']).toBeGreaterThan(0);
      });
    }
    if (family(name) === 'worker-crashes') {
      it('made exactly one extra call for each crash after a call: the job was dispatched again and called again', () => {
        // A worker Lambda stopped at its timeout after its call dies there too, but may have recorded its success.
        const crashed = result.faults['worker:crash-after-call'] ?? 0;
        expect(result.duplicatesAfterCrashBeforeRecord).toBeGreaterThanOrEqual(crashed);
        expect(result.duplicatesAfterCrashBeforeRecord).toBeLessThanOrEqual(
          crashed + (result.faults['lambda:timed-out-after-call'] ?? 0),
        );
      });
    }
    if (family(name) === 'quota-exhausted') {
      it('said which tier held the quota, and waiting cost no healthy job its attempts', () => {
        expect(Object.keys(result.quotaExhausted).sort()).toEqual(['25/day', '429']);
        expect(result.healthyDeadLettered).toBe(0);
      });
    }
    if (family(name) === 'two-orchestrators') {
      it("ended the stale holder's run as 'lost' when it woke after its lease was taken over", () => {
        expect(result.staleHolder).toBe('lost');
      });
    }
  });
});
