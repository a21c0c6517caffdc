import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import type { Clock } from '../../../lib/ports/Clock';
import { READ_ORDER, deadLetterQueueOf } from '../../../lib/ports/QueueReceiver';
import { WORLD_START } from './harness';
import { ConditionService, serviceConfig } from './serviceHarness';
import type { ConditionCheck, ConditionScenario } from './types';

/** How long the key stays revoked: half an hour (the issue saw two; the loop shows in the first minutes). */
const REVOKED_MS = 30 * 60_000;
const GROUPS = 6;
const PER_GROUP = 10;

/** One call the API answered: when, the job's body, and its status. */
interface AnsweredCall {
  readonly at: number;
  readonly body: string;
  readonly status: number;
}

/**
 * An API whose key is revoked until `keyBackAt`: it refuses every job's call with 401 until then, and takes them
 * after. Its health URL needs no key: every probe answers 200.
 */
class RevokedKeyApi implements ApiCaller {
  readonly calls: AnsweredCall[] = [];
  probes = 0;

  constructor(
    private readonly clock: Clock,
    private readonly keyBackAt: number,
  ) {}

  async call(body: string): Promise<ApiResult> {
    const status = this.clock.now() < this.keyBackAt ? 401 : 200;
    this.calls.push({ at: this.clock.now(), body, status });
    await this.clock.sleep(50);
    return { kind: 'response', status, headers: {} };
  }

  async probe(): Promise<ApiResult> {
    this.probes++;
    await this.clock.sleep(50);
    return { kind: 'response', status: 200, headers: {} };
  }
}

/** The body of the `k`-th job of FIFO group `g`. */
const bodyOf = (g: number, k: number): string => JSON.stringify({ group: `g${g}`, k });

/** What the run shows against the promise: a line for each thing that went wrong, none when it held. */
function breaches(service: ConditionService<RevokedKeyApi>, keyBackAt: number): string[] {
  const { api } = service;
  const closedEarly = service.reports.filter(
    (r) => r.type === 'circuit-transition' && r.to === 'closed' && r.at < keyBackAt,
  );
  const trials = service.workerEvents.filter((e) => e.kind === 'job' && e.trial !== undefined).length;
  const refused = api.calls.filter((c) => c.status === 401).length;
  const succeeded = api.calls.filter((c) => c.status === 200).map((c) => c.body);
  const dead = READ_ORDER.reduce((n, q) => n + service.queues.depth(deadLetterQueueOf(q)), 0);
  const inOrder = Array.from({ length: GROUPS }, (_, g) =>
    succeeded.filter((b) => b.includes(`"g${g}"`)).every((b, k) => b === bodyOf(g, k)),
  ).every(Boolean);
  return [
    ...(closedEarly.length > 0 ? [`the circuit closed ${closedEarly.length} times while the key was revoked`] : []),
    // The call that opened the circuit, then one call for each trial job at most.
    ...(refused > 1 + trials ? [`${refused} calls refused with 401, for ${trials} trial jobs`] : []),
    ...(dead > 0 ? [`${dead} jobs dead-lettered`] : []),
    ...(succeeded.length !== GROUPS * PER_GROUP || !inOrder
      ? [`${succeeded.length} of ${GROUPS * PER_GROUP} jobs succeeded${inOrder ? '' : ', out of group order'}`]
      : []),
  ];
}

/** Condition 8: a revoked key behind a health URL that needs none. */
export const revokedKeyPublicHealth: ConditionScenario = {
  name: 'revoked-key-public-health-url',
  condition: 8,
  injects: `a key revoked for ${REVOKED_MS / 60_000} minutes under ${GROUPS * PER_GROUP} FIFO jobs: every job call refused with 401, the health URL (no key) answering 200`,
  breaks:
    'the 401 opens the circuit, the probe closes it, the slow start’s first jobs are refused and open it again, round and round, each refused job kept and received again',
  async run(): Promise<ConditionCheck> {
    const keyBackAt = WORLD_START + REVOKED_MS;
    const service = new ConditionService(
      serviceConfig([{ limit: 5, per: 'second' }]),
      (clock) => new RevokedKeyApi(clock, keyBackAt),
    );
    for (let k = 0; k < PER_GROUP; k++)
      for (let g = 0; g < GROUPS; g++) await service.send('fifo', bodyOf(g, k), `g${g}`);
    const allDone = () => READ_ORDER.every((q) => service.queues.depth(q) === 0) && service.invoker.idle();
    await service.runUntil(keyBackAt + 10 * 60_000, allDone);
    const found = breaches(service, keyBackAt);
    const { calls, probes } = service.api;
    const seen = `${calls.filter((c) => c.status === 401).length} calls refused while revoked, ${probes} probes`;
    return {
      held: found.length === 0,
      detail:
        found.length === 0
          ? `${seen}; every job succeeded once, in order, after the key came back, and the circuit closed only then`
          : `${found.join('; ')} (${seen})`,
    };
  },
};
