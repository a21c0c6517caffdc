import { parseBreakerSettings, type BreakerSettings } from './domain/breaker/settings';
import { parseRetrySettings, type RetrySettings } from './domain/outcome/retryPolicy';
import { parsePacingSettings, type PacingSettings } from './domain/pacing/pacer';
import { assertTimeZone } from './domain/quota/calendar';
import { describe, parseTiers, type Tier } from './domain/quota/tiers';
import { parseNumberSettings, type NumberRange } from './domain/settings';
import { ConfigError } from './errors';

/** Timing of the orchestrator's loop. */
export interface OrchestratorSettings {
  /** Lease lifetime; renewed at every flush. @default 30000 */
  readonly leaseTtlMs: number;
  /** The ledger is saved, the lease renewed and settlements folded in at least this often. @default 2000 */
  readonly flushIntervalMs: number;
  /** How often an open circuit is re-read while waiting. @default 250 */
  readonly circuitPollMs: number;
  /** How long a received message stays invisible: waiting for its slot plus the worker's run. @default 120000 */
  readonly visibilityTimeoutMs: number;
  /** The worker Lambda's timeout; a message is only dispatched while its visibility covers it. @default 30000 */
  readonly workerTimeoutMs: number;
  /** Long-poll wait when every queue is empty. @default 1000 */
  readonly idleWaitMs: number;
  /** First back-off after a throttled or failed invoke; doubles up to 10 s. @default 250 */
  readonly invokeBackoffMs: number;
  /** How long a succeeded idempotency record is kept. @default 86400000 (one day) */
  readonly idempotencyTtlMs: number;
}

/** Defaults of {@link OrchestratorSettings}. */
export const DEFAULT_ORCHESTRATOR_SETTINGS: OrchestratorSettings = Object.freeze({
  leaseTtlMs: 30_000,
  flushIntervalMs: 2_000,
  circuitPollMs: 250,
  visibilityTimeoutMs: 120_000,
  workerTimeoutMs: 30_000,
  idleWaitMs: 1_000,
  invokeBackoffMs: 250,
  idempotencyTtlMs: 86_400_000,
});

const ORCHESTRATOR_RANGES: { readonly [K in keyof OrchestratorSettings]: NumberRange } = {
  leaseTtlMs: { min: 5_000, max: 900_000, integer: true },
  flushIntervalMs: { min: 100, max: 60_000, integer: true },
  circuitPollMs: { min: 10, max: 60_000, integer: true },
  visibilityTimeoutMs: { min: 1_000, max: 43_200_000, integer: true },
  workerTimeoutMs: { min: 1_000, max: 900_000, integer: true },
  idleWaitMs: { min: 0, max: 20_000, integer: true },
  invokeBackoffMs: { min: 1, max: 10_000, integer: true },
  idempotencyTtlMs: { min: 60_000, max: 31_536_000_000, integer: true },
};

/** Everything the orchestrator and the workers of one lane are configured with, validated and frozen. */
export interface ServiceConfig {
  /** Name of the protected API and its quota. @default 'default' */
  readonly lane: string;
  readonly quotas: readonly Tier[];
  /** IANA zone of day and month tiers. @default 'UTC' */
  readonly timeZone: string;
  readonly pacing: PacingSettings;
  readonly circuit: BreakerSettings;
  readonly retry: RetrySettings;
  readonly orchestrator: OrchestratorSettings;
}

const KEYS = ['lane', 'quotas', 'timeZone', 'pacing', 'circuit', 'retry', 'orchestrator'] as const;

/**
 * Validates a whole configuration object (keys as in {@link ServiceConfig}; all but `quotas` optional).
 * @param options.costsAvailable whether the job source gives messages a cost (see `parseTiers`). @default true
 * @throws ConfigError naming the offending field and its allowed values, including cross-field rules.
 */
export function parseServiceConfig(input: unknown, options: { readonly costsAvailable?: boolean } = {}): ServiceConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError('config', `must be an object with keys ${KEYS.join(', ')}; got ${describe(input)}`);
  }
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!(KEYS as readonly string[]).includes(key)) throw new ConfigError(key, `unknown key; allowed keys are ${KEYS.join(', ')}`);
  }
  const lane = raw.lane ?? 'default';
  if (typeof lane !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(lane)) {
    throw new ConfigError('lane', `must be 1 to 64 letters, digits, '-' or '_'; got ${describe(lane)}`);
  }
  const timeZone = raw.timeZone ?? 'UTC';
  if (typeof timeZone !== 'string') throw new ConfigError('timeZone', `must be an IANA time zone such as 'UTC'; got ${describe(timeZone)}`);
  assertTimeZone(timeZone, 'timeZone');
  const orchestrator = parseNumberSettings(raw.orchestrator, 'orchestrator', DEFAULT_ORCHESTRATOR_SETTINGS, ORCHESTRATOR_RANGES);
  if (orchestrator.flushIntervalMs * 3 > orchestrator.leaseTtlMs) {
    throw new ConfigError(
      'orchestrator.flushIntervalMs',
      `must be at most a third of orchestrator.leaseTtlMs (${orchestrator.leaseTtlMs}), so the lease is renewed well before it can expire; got ${orchestrator.flushIntervalMs}`,
    );
  }
  if (orchestrator.visibilityTimeoutMs <= orchestrator.workerTimeoutMs) {
    throw new ConfigError(
      'orchestrator.visibilityTimeoutMs',
      `must exceed orchestrator.workerTimeoutMs (${orchestrator.workerTimeoutMs}), or a message could reappear while its worker still runs; got ${orchestrator.visibilityTimeoutMs}`,
    );
  }
  return Object.freeze({
    lane,
    quotas: parseTiers(raw.quotas, { field: 'quotas', costsAvailable: options.costsAvailable ?? true }),
    timeZone,
    pacing: parsePacingSettings(raw.pacing),
    circuit: parseBreakerSettings(raw.circuit),
    retry: parseRetrySettings(raw.retry),
    orchestrator,
  });
}
