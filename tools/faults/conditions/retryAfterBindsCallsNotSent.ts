import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import type { Clock } from '../../../lib/ports/Clock';
import { READ_ORDER } from '../../../lib/ports/QueueReceiver';
import { CIRCUIT_CHECK_AHEAD_MS } from '../../../lib/services/worker/circuitReadTimes';
import { WORLD_START } from './harness';
import { ConditionService, serviceConfig } from './serviceHarness';
import type { ConditionCheck, ConditionScenario } from './types';

const JOBS = 100;
/** The call the API answers first with a 429. */
const LIMITED_CALL = 20;
const RETRY_AFTER_S = 2;

/**
 * An API that refuses call number {@link LIMITED_CALL} with a 429 asking to wait {@link RETRY_AFTER_S} seconds, and
 * refuses every call that arrives before then alike; it takes every other call. Each answer takes 100 ms.
 */
class RetryAfterApi implements ApiCaller {
  readonly calls: number[] = [];
  /** Until when the API refuses calls, once it has refused one. */
  refusingUntil: number | undefined;

  constructor(private readonly clock: Clock) {}

  async call(): Promise<ApiResult> {
    const now = this.clock.now();
    this.calls.push(now);
    if (this.calls.length === LIMITED_CALL) this.refusingUntil = now + RETRY_AFTER_S * 1000;
    const limited = this.refusingUntil !== undefined && now < this.refusingUntil;
    await this.clock.sleep(100);
    return limited
      ? { kind: 'response', status: 429, headers: { 'retry-after': String(RETRY_AFTER_S) } }
      : { kind: 'response', status: 200, headers: {} };
  }

  async probe(): Promise<ApiResult> {
    return { kind: 'response', status: 200, headers: {} };
  }
}

/** Condition 13: a 429's `Retry-After` binds every call not yet sent, across workers. */
export const retryAfterBindsCallsNotSent: ConditionScenario = {
  name: 'retry-after-binds-calls-not-sent',
  condition: 13,
  injects: `${JOBS} jobs at 50 a second, each in a worker of its own, the ${LIMITED_CALL}th call answered 429 with Retry-After ${RETRY_AFTER_S} s, and every call until then refused alike`,
  breaks:
    'the jobs already dispatched with later slots, in other workers, keep calling until their next read of the circuit, up to circuitPollMs later, and are refused again',
  async run(): Promise<ConditionCheck> {
    const service = new ConditionService(
      serviceConfig([{ limit: 50, per: 'second' }], { pacing: { batchWindowMs: 0 } }),
      (clock) => new RetryAfterApi(clock),
    );
    const { api, clock, stores } = service;
    // When the 429's worker wrote the pause: from then on, the service knows it.
    let pauseWrittenAt: number | undefined;
    const save = stores.circuit.saveCircuit.bind(stores.circuit);
    stores.circuit.saveCircuit = async (lane, next) => {
      const written = await save(lane, next);
      if (written && next.pausedUntil > 0) pauseWrittenAt ??= clock.now();
      return written;
    };
    for (let i = 1; i <= JOBS; i++) await service.send('main', JSON.stringify({ id: i }));
    const allDone = () => READ_ORDER.every((q) => service.queues.depth(q) === 0) && service.invoker.idle();
    await service.runUntil(WORLD_START + 3 * 60_000, allDone);

    const { refusingUntil } = api;
    if (pauseWrittenAt === undefined || refusingUntil === undefined)
      return { held: false, detail: 'the API never refused a call, or no pause was written' };
    // A call whose check read the circuit before the write may still leave, up to the read's lead before its slot.
    const knownAt = pauseWrittenAt + CIRCUIT_CHECK_AHEAD_MS;
    const late = api.calls.filter((at) => at > knownAt && at < refusingUntil).length;
    const done = allDone();
    return {
      held: late === 0 && done,
      detail: `${late} calls arrived within the Retry-After more than ${CIRCUIT_CHECK_AHEAD_MS} ms after the pause was written; ${api.calls.length} calls in all, ${done ? 'every job ended' : 'jobs left over'}`,
    };
  },
};
