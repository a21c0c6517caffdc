import { parseServiceConfig } from '../../../lib/config';
import { loadCircuit } from '../../../lib/services/circuitUpdates';
import { processJob } from '../../../lib/services/worker/processJob';
import type { JobOutcome } from '../../../lib/services/worker/types';
import { VirtualApi } from '../../simulation/virtualApi';
import { dispatchedJob, SlowKeyApi, workerWorld } from './slowKeyWorld';
import type { ConditionCheck, ConditionScenario } from './types';

/** A fixed Monday, 00:00 UTC: where the scenario's clock starts. */
const START = Date.UTC(2026, 0, 5);
/** The default `serverless.yml`'s timings on a 5/s tier: arrival margin 25 ms, call allowance 15 ms, lead 250 ms. */
const CONFIG = parseServiceConfig({ lane: 'api', quotas: [{ limit: 5, per: 'second' }] });
/** A new container's first key read: SSM's GetParameter with KMS decryption, plus the connection to SSM. */
const COLD_KEY_READ_MS = 400;
/** How long after its event is sent a warm worker starts. */
const WARM_START_MS = 20;
/** Six jobs paced at the tier's rate; the first one's worker is on a new container. */
const SLOTS = [0, 200, 400, 600, 800, 1_000].map((ms) => START + 1_000 + ms);

/**
 * Runs the six paced jobs, each on its own worker started `WARM_START_MS` after its event was sent (the lead ahead of
 * its slot), the first with a cold key read, against an API that enforces the tier.
 * @returns what the API saw, by arrival, against each job's slot.
 */
async function pacedJobs(): Promise<{ readonly late: string[]; readonly rejected: number }> {
  const world = workerWorld(CONFIG, START);
  const api = new VirtualApi({ clock: world.clock, tiers: CONFIG.quotas, latencyMs: 50 });
  const { arrivalMarginMs, callAllowanceMs, dispatchLeadMs } = CONFIG.pacing;
  const runs: Promise<JobOutcome>[] = [];
  for (const [i, slotAt] of SLOTS.entries()) {
    const sentAt = slotAt - dispatchLeadMs;
    const callBy = slotAt + arrivalMarginMs - callAllowanceMs;
    const event = await dispatchedJob(world, `j-${i}`, { sentAt, slotAt, callBy });
    const deps = world.deps(new SlowKeyApi(api, world.clock, i === 0 ? COLD_KEY_READ_MS : 0));
    runs.push(world.clock.sleep(sentAt + WARM_START_MS - world.clock.now()).then(() => processJob(event, deps)));
  }
  let ended = false;
  void Promise.all(runs).then(() => (ended = true));
  await world.clock.runUntil(() => ended);
  const late = api.callLog.flatMap((call) => {
    const slotAt = SLOTS[Number(call.id.slice(2))] ?? Number.NaN;
    return call.at - slotAt > arrivalMarginMs ? [`${call.id} arrived ${call.at - slotAt} ms after its slot`] : [];
  });
  return { late, rejected: api.report().rejectedByApi };
}

/**
 * A job whose worker cannot read its key (SSM throttled): how it ended, the attempt its message went back with, the
 * failures the circuit counted, and what its reservation gave back.
 */
async function unreadableKey(): Promise<{
  readonly outcome: JobOutcome | undefined;
  readonly attempt: string | undefined;
  readonly failures: number;
  readonly refunded: boolean;
}> {
  const world = workerWorld(CONFIG, START);
  const api = new VirtualApi({ clock: world.clock, tiers: CONFIG.quotas, latencyMs: 50 });
  const slotAt = START + 1_000;
  const event = await dispatchedJob(world, 'k', { sentAt: slotAt - 250, slotAt, callBy: slotAt + 10 });
  const deps = world.deps(new SlowKeyApi(api, world.clock, 30, 'ThrottlingException: Rate exceeded'));
  let outcome: JobOutcome | undefined;
  void processJob(event, deps).then((o) => (outcome = o));
  await world.clock.runUntil(() => outcome !== undefined);
  const [requeued] = world.queues.messages('requeue');
  const settlements = await world.stores.ledger.pendingSettlements(CONFIG.lane);
  const { state } = await loadCircuit(world.stores.circuit, CONFIG.lane);
  return {
    outcome,
    attempt: requeued?.attributes.attempt?.value,
    // An open circuit counts as failures enough.
    failures: state.status === 'closed' ? state.failures.length : CONFIG.circuit.failureThreshold,
    refunded: settlements.some((s) => s.actual === null && s.id === event.dispatchId),
  };
}

/** Condition 3: the key read (and a new container's connection) after the worker's on-time check. */
export const keyReadAfterCheck: ConditionScenario = {
  name: 'key-read-after-on-time-check',
  condition: 3,
  injects: `six jobs paced on a 5/s tier whose first worker, on a new container, takes ${COLD_KEY_READ_MS} ms to read its key from SSM; and a job whose key read is throttled`,
  breaks:
    'the worker checks callBy and then reads the key: the first call leaves hundreds of ms late and six calls land within one second; a failed key read counts as the API failing, spending an attempt and counting toward the circuit',
  async run(): Promise<ConditionCheck> {
    const paced = await pacedJobs();
    const unread = await unreadableKey();
    const problems = [
      ...paced.late,
      ...(paced.rejected > 0 ? [`the API refused ${paced.rejected} call(s) over its 5/s tier`] : []),
      ...(unread.outcome !== 'not-ready' ? [`the unreadable key ended the job ${unread.outcome ?? 'never'}`] : []),
      ...(unread.attempt !== '1' ? [`the job went back with attempt ${unread.attempt ?? 'none'}, not 1`] : []),
      ...(unread.failures > 0 ? [`the circuit counted ${unread.failures} failure(s) for the unreadable key`] : []),
      ...(unread.refunded ? [] : ['the reservation of the job that made no call was not given back']),
    ];
    return {
      held: problems.length === 0,
      detail:
        problems.length === 0
          ? 'every call arrived within the margin of its slot and none over the tier; the unreadable key gave the job back with its attempt, its reservation and the circuit untouched'
          : problems.join('; '),
    };
  },
};
