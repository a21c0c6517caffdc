import { parseServiceConfig } from '../../../lib/config';
import { healthCheckDueAt } from '../../../lib/domain/breaker/circuit';
import { circuitPolicyFrom } from '../../../lib/domain/breaker/policy';
import type { ApiResult, ReadyCaller } from '../../../lib/ports/ApiCaller';
import { applyCircuitEvent, loadCircuit } from '../../../lib/services/circuitUpdates';
import { processHealthCheck } from '../../../lib/services/worker/processHealthCheck';
import { parseWorkerSettings } from '../../../lib/workerSettings';
import { VirtualApi } from '../../simulation/virtualApi';
import { SlowKeyApi, workerWorld, type WorkerWorld } from './slowKeyWorld';
import type { ConditionCheck, ConditionScenario } from './types';

/** A fixed Monday, 00:00 UTC: where the scenario's clock starts. */
const START = Date.UTC(2026, 0, 5);
/** The default circuit: a check is presumed lost 15 s after its probe started. */
const CONFIG = parseServiceConfig({ lane: 'api', quotas: [{ limit: 5, per: 'second' }] });
/** A slow first read of the key (SSM throttled, the SDK retrying), on the first check's new container. */
const KEY_READ_MS = 6_000;
/** The API's answer to the probe: just inside an API timeout of 9.9 s. */
const PROBE_MS = 9_900;
/** How long after its send a health check's worker starts. */
const START_DELAY_MS = 20;
/** How often the stand-in orchestrator looks whether a check is due. */
const STEP_MS = 250;

/** The API's probes, counted while they are in flight: the most at once is what the circuit's one-trial rule bounds. */
class ProbeCount implements ReadyCaller {
  private inFlight = 0;
  most = 0;

  constructor(private readonly api: ReadyCaller) {}

  call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    return this.api.call(body, context);
  }

  async probe(): Promise<ApiResult> {
    this.most = Math.max(this.most, ++this.inFlight);
    try {
      return await this.api.probe();
    } finally {
      this.inFlight--;
    }
  }
}

/**
 * Opens the circuit, then sends each health check as the orchestrator does (when `healthCheckDueAt` says so, by a
 * conditional write), each to a worker of its own that starts `START_DELAY_MS` later: the first on a new container
 * whose key read takes `KEY_READ_MS`, the later ones with the key cached. Runs until the circuit closes.
 * @returns the most probes in flight at once, and how many checks were sent.
 */
async function probeOutage(world: WorkerWorld): Promise<{ readonly most: number; readonly checks: number }> {
  const { clock, stores } = world;
  const policy = circuitPolicyFrom(CONFIG.circuit);
  const probes = new ProbeCount(new VirtualApi({ clock, tiers: CONFIG.quotas, latencyMs: PROBE_MS }));
  for (let i = 0; i < CONFIG.circuit.failureThreshold; i++)
    await applyCircuitEvent(stores.circuit, CONFIG.lane, { type: 'transient-failure' }, clock.now(), policy);
  const workers: Promise<unknown>[] = [];
  for (let step = 0; step * STEP_MS < 120_000; step++) {
    const circuit = await loadCircuit(stores.circuit, CONFIG.lane);
    if (circuit.state.status === 'closed') break;
    const due = healthCheckDueAt(circuit, policy.probe);
    if (due !== undefined && due <= clock.now()) {
      const checkId = `c-${workers.length + 1}`;
      const sentAt = clock.now();
      const { written } = await applyCircuitEvent(
        stores.circuit,
        CONFIG.lane,
        { type: 'health-check-sent', checkId },
        sentAt,
        policy,
      );
      const keyReadMs = workers.length === 0 ? KEY_READ_MS : 0;
      const deps = world.deps(new SlowKeyApi(probes, clock, keyReadMs));
      if (written)
        workers.push(
          clock
            .sleep(START_DELAY_MS)
            .then(() => processHealthCheck({ kind: 'health-check', lane: CONFIG.lane, checkId, sentAt }, deps)),
        );
    }
    await clock.advance(STEP_MS);
  }
  let ended = false;
  void Promise.all(workers).then(() => (ended = true));
  await clock.runUntil(() => ended);
  return { most: probes.most, checks: workers.length };
}

/** Whether packaging refuses a key read timeout of `KEY_READ_MS` beside an API timeout of `PROBE_MS`. */
function refusedAtPackaging(): boolean {
  const settings = {
    apiUrl: 'https://api.example.com/jobs',
    healthUrl: 'https://api.example.com/health',
    apiTimeoutMs: PROBE_MS,
    apiKeyParameter: '/quota-orchestrator/prod/api-key',
    apiKeyReadTimeoutMs: KEY_READ_MS,
  };
  try {
    parseWorkerSettings(settings, CONFIG, {
      field: (key) => `custom.quotaOrchestrator.${key}`,
      shown: (key) => JSON.stringify(settings[key as keyof typeof settings]),
      healthCheckTimeoutField: 'custom.quotaOrchestrator.circuit.healthCheckTimeoutSeconds',
      probeChecksKeyField: 'custom.quotaOrchestrator.circuit.probeChecksKey',
    });
    return false;
  } catch (error) {
    return error instanceof Error && error.message.includes('apiKeyReadTimeoutMs');
  }
}

/** Condition 4: a slow key read during a health probe. */
export const slowKeyProbe: ConditionScenario = {
  name: 'slow-key-read-during-probe',
  condition: 4,
  injects: `a health check whose worker takes ${KEY_READ_MS / 1000} s to read its key, then ${PROBE_MS / 1000} s for the probe's answer, under the default 15 s half-open timeout`,
  breaks:
    'the check is claimed before the key is read: key read and answer outlive the timeout, the check is presumed lost while its probe still runs, and a second probe starts beside it',
  async run(): Promise<ConditionCheck> {
    const { most, checks } = await probeOutage(workerWorld(CONFIG, START));
    const refused = refusedAtPackaging();
    const problems = [
      ...(most > 1 ? [`${most} probes were in flight at once (${checks} checks sent)`] : []),
      ...(refused ? [] : [`packaging accepts a ${KEY_READ_MS} ms key read beside a ${PROBE_MS} ms API timeout`]),
    ];
    return {
      held: problems.length === 0,
      detail:
        problems.length === 0
          ? `one probe at a time (${checks} check sent), and packaging refuses such settings`
          : problems.join('; '),
    };
  },
};
