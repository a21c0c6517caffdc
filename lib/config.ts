import { parseBreakerSettings, type BreakerSettings } from './domain/breaker/settings';
import { parseRetrySettings, type RetrySettings } from './domain/outcome/retryPolicy';
import { parsePacingSettings, type PacingSettings } from './domain/pacing/settings';
import { parsePrioritySettings, type PrioritySettings } from './domain/priorities/settings';
import { assertTimeZone } from './domain/quota/calendar';
import { describeValue } from './domain/describeValue';
import { parseTiers, type Tier } from './domain/quota/tiers';
import { parseUnitSettings, type UnitSettings } from './domain/usage/unitSettings';
import type { UsagePreset } from './domain/usage/usageSources';
import { parseSettings, type NumberRange } from './domain/settings';
import { parseLimitSettings, type LimitSettings } from './domain/limits/settings';
import { ConfigError } from './errors';
import { LONGEST_COPY_LIFE_MS } from './queueRetention';

/**
 * What a run does while the state table cannot be read or written (DynamoDB unavailable, or throttling past the
 * SDK's retries); see `StateLink` and `LedgerSync.mayDispatch` in the orchestrator for the exact rule.
 * - `pace-in-memory`: keep pacing on the in-memory ledger and the last circuit read, but only dispatch what the
 *   saved ledger already holds, or what falls in a sliding window that closes before the lease can expire (so no
 *   successor can miss it). Day, month and long sliding tiers never go past quota already reserved.
 * - `pause`: dispatch nothing from the first failed state call until the ledger is saved and the circuit read again.
 */
export type StateOutagePolicy = 'pace-in-memory' | 'pause';

/** Every accepted {@link StateOutagePolicy}. */
export const STATE_OUTAGE_POLICIES: readonly StateOutagePolicy[] = ['pace-in-memory', 'pause'];

/** The numeric timings of the orchestrator's loop (each validated against {@link ORCHESTRATOR_RANGES}). */
export interface OrchestratorTimings {
  /** Lease lifetime; the lease is renewed at the first save after half of it has gone. @default 30000 */
  readonly leaseTtlMs: number;
  /** The ledger is saved and settlements folded in at least this often; at most a third of `leaseTtlMs`. @default 2000 */
  readonly flushIntervalMs: number;
  /**
   * How often the circuit is read: before a dispatch when the last read answered longer ago than this, and this often
   * while an open circuit or an operator's hold is waited for. A worker's change (an opened circuit, a 429 pause) stops
   * dispatch within this. A run that waits for its quota or for a call slot reads nothing. @default 250
   */
  readonly circuitPollMs: number;
  /**
   * How long a received message stays invisible: waiting for its slot plus the worker's run. Must exceed
   * `workerTimeoutMs` and, in serverless.yml, the worker's `maximumEventAge` plus its timeout. @default 120000
   */
  readonly visibilityTimeoutMs: number;
  /**
   * The worker Lambda's timeout; a message is only dispatched while its visibility covers it. In serverless.yml it is
   * derived from `functions.worker.timeout` (leave it out, or give the same value). @default 30000
   */
  readonly workerTimeoutMs: number;
  /** Long-poll wait when every queue is empty. @default 1000 */
  readonly idleWaitMs: number;
  /**
   * A run that has found every queue empty for this long, with the circuit letting work through and the quota open,
   * ends early: the next tick starts the next run, so work that arrives meanwhile waits at most one schedule period.
   * An idle lane then costs about a second of a run a minute instead of a whole one (see the README's idle cost).
   * @default 1000: one empty round of receives, its `idleWaitMs` long poll included
   */
  readonly idleStopMs: number;
  /**
   * First back-off after a throttled or failed invoke, a failed state-store call or a failed queue call; each kind
   * doubles its own up to 10 s and starts over after a success. @default 250
   */
  readonly invokeBackoffMs: number;
  /**
   * How long a job's idempotency record (succeeded, dead-lettered or failed, with the marks of its dispatches) is
   * kept after its last write. At least the longest a copy of the job's message can come back (22 days: 4 in a source
   * queue, 14 in a dead-letter queue, 4 again after a redrive), so that no copy, however late, finds the record gone
   * and calls the API again; shorter is refused. @default 1900800000 (22 days)
   */
  readonly idempotencyTtlMs: number;
}

/** How the orchestrator's loop runs. */
export interface OrchestratorSettings extends OrchestratorTimings {
  /** What a run does while the state table is unavailable. @default 'pace-in-memory' */
  readonly stateOutage: StateOutagePolicy;
}

/** Defaults of {@link OrchestratorSettings}. */
export const DEFAULT_ORCHESTRATOR_SETTINGS: OrchestratorSettings = Object.freeze({
  leaseTtlMs: 30_000,
  flushIntervalMs: 2_000,
  circuitPollMs: 250,
  visibilityTimeoutMs: 120_000,
  workerTimeoutMs: 30_000,
  idleWaitMs: 1_000,
  idleStopMs: 1_000,
  invokeBackoffMs: 250,
  idempotencyTtlMs: LONGEST_COPY_LIFE_MS,
  stateOutage: 'pace-in-memory',
});

/** Allowed values of the numeric {@link OrchestratorTimings}; `stateOutage` is one of {@link STATE_OUTAGE_POLICIES}. */
export const ORCHESTRATOR_RANGES: { readonly [K in keyof OrchestratorTimings]: NumberRange } = Object.freeze({
  leaseTtlMs: { min: 5_000, max: 900_000, integer: true },
  flushIntervalMs: { min: 100, max: 60_000, integer: true },
  circuitPollMs: { min: 10, max: 60_000, integer: true },
  visibilityTimeoutMs: { min: 1_000, max: 43_200_000, integer: true },
  workerTimeoutMs: { min: 1_000, max: 900_000, integer: true },
  idleWaitMs: { min: 0, max: 20_000, integer: true },
  idleStopMs: { min: 0, max: 900_000, integer: true },
  invokeBackoffMs: { min: 1, max: 10_000, integer: true },
  idempotencyTtlMs: { min: LONGEST_COPY_LIFE_MS, max: 31_536_000_000, integer: true },
});

/**
 * Validates the `orchestrator` section: the numbers against {@link ORCHESTRATOR_RANGES}, `stateOutage` against
 * {@link STATE_OUTAGE_POLICIES}.
 * @throws ConfigError naming the field (e.g. `orchestrator.stateOutage`) and its allowed values, or an unknown key.
 */
function parseOrchestratorSettings(input: unknown): OrchestratorSettings {
  const field = 'orchestrator';
  if (input === undefined) return DEFAULT_ORCHESTRATOR_SETTINGS;
  const keys = [...Object.keys(ORCHESTRATOR_RANGES), 'stateOutage'];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError(
      field,
      `must be an object with optional keys ${keys.join(', ')}; got ${describeValue(input)}`,
    );
  }
  const { stateOutage = DEFAULT_ORCHESTRATOR_SETTINGS.stateOutage, ...numbers } = input as Record<string, unknown>;
  for (const key of Object.keys(numbers)) {
    if (!keys.includes(key))
      throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are ${keys.join(', ')}`);
  }
  if (!(STATE_OUTAGE_POLICIES as readonly unknown[]).includes(stateOutage)) {
    throw new ConfigError(
      `${field}.stateOutage`,
      `must be one of ${STATE_OUTAGE_POLICIES.map((p) => `'${p}'`).join(', ')}; got ${describeValue(stateOutage)}`,
    );
  }
  const timings = parseSettings(
    numbers,
    field,
    DEFAULT_ORCHESTRATOR_SETTINGS as OrchestratorTimings,
    ORCHESTRATOR_RANGES,
  );
  return Object.freeze({ ...timings, stateOutage: stateOutage as StateOutagePolicy });
}

/** A pool of tiers that several lanes share (an organisation's limit across two models), as a lane draws from it. */
export interface PoolConfig {
  /** Its name: it names the pool's state items (see `poolStateName`). */
  readonly name: string;
  /** Its tiers, as a lane's `quotas` (see `parseTiers`). */
  readonly quotas: readonly Tier[];
  /**
   * The lane's weight in the pool, {@link POOL_WEIGHT_RANGE}: lanes that compete for the pool share it in proportion to
   * their weights (a lane of weight 3 gets three times the share of a lane of weight 1). @default 1
   */
  readonly weight?: number;
  /**
   * Whom a 429 of the APIs of the pool's lanes pauses: `lane`, the lane whose call got it; or `pool`, every lane of
   * the pool until its Retry-After, for a limit the provider counts across them (an account's, an organisation's).
   * @default 'lane'
   */
  readonly rateLimitScope?: RateLimitScope;
}

/** Whom a 429 pauses (see `PoolConfig.rateLimitScope`). */
export type RateLimitScope = 'lane' | 'pool';

/** Allowed values of a lane's weight in a pool. */
export const POOL_WEIGHT_RANGE: NumberRange = Object.freeze({ min: 1, max: 100, integer: true });

/** Everything the orchestrator and the workers of one lane are configured with, validated and frozen. */
export interface ServiceConfig {
  /** Name of the protected API and its quota. @default 'default' */
  readonly lane: string;
  /**
   * The API's quota: one or more tiers, each at most `limit` units `per` second, minute or hour (sliding windows) or
   * day or month (calendar windows in `timeZone`), counted in requests or in a named unit (`cost`, `input_tokens`, …) of which each message carries an estimate. Required.
   */
  readonly quotas: readonly Tier[];
  /** IANA zone of day and month tiers. @default 'UTC' */
  readonly timeZone: string;
  /**
   * The most calls of this lane the API may have in progress at any instant, 1 to 1000: a dispatch takes a slot, and
   * its worker frees it when the call has ended (a worker that never reports frees it once its call can no longer be
   * running). Health checks take none. @default none: only the rate tiers bound the calls
   */
  readonly maxInFlight?: number;
  /**
   * Per named unit the tiers count (`cost`, `input_tokens`, …): the estimate reserved for a message without the
   * attribute of that name (`default`), and where the API's answer says what a call used (`usage`). Every unit the
   * tiers count has an entry here once parsed. @default `cost` reserves 1 and reads `x-actual-cost`; the other units
   * have no default and read what `usagePreset` gives
   */
  readonly units: UnitSettings;
  /**
   * A known response shape that gives the units `input_tokens`, `output_tokens` and `tokens` their usage source:
   * `anthropic` (the Messages API) or `openai` (Chat Completions). A unit's own `usage` wins. @default none
   */
  readonly usagePreset?: UsagePreset;
  /**
   * The pools the lane draws from besides its own `quotas`: each dispatch reserves in the lane and in every pool it
   * names, and no window of either is ever exceeded. Every unit a pool's tiers count needs an estimate in `units`. In
   * serverless.yml only the lanes form has pools: their tiers at the top, their names in each lane (see "Several
   * lanes"); the functions read them as a list of `{ name, quotas }`. @default none
   */
  readonly pools?: readonly PoolConfig[];
  /**
   * How the lane learns the API's real limits from its answers: which rate-limit headers it sends (`headers`:
   * `openai`, `anthropic`, `ietf` or `none`, by default the usage preset's provider), the window of the tiers they
   * speak of (`per`, `minute`), the unit of the tiers each family of headers speaks of (`units`), and what is done
   * with what is learnt (`learn`: `enforce` paces at it, `shadow` only reports it, `off` reads nothing). @default
   * learn and enforce
   */
  readonly limits: LimitSettings;
  /**
   * How the lane shares its quota between its main class (the requeue, FIFO and main queues) and its bulk class (the
   * bulk queue): `bulkShare`, the least share of the dispatches that goes to bulk jobs while any wait. The main class
   * goes first with the rest. @default bulkShare 0.1
   */
  readonly priorities: PrioritySettings;
  readonly pacing: PacingSettings;
  readonly circuit: BreakerSettings;
  readonly retry: RetrySettings;
  readonly orchestrator: OrchestratorSettings;
}

const KEYS = [
  'lane',
  'quotas',
  'timeZone',
  'maxInFlight',
  'units',
  'usagePreset',
  'pools',
  'limits',
  'priorities',
  'pacing',
  'circuit',
  'retry',
  'orchestrator',
] as const;

/** A pool's name, as a lane's: letters, digits, '-' and '_'. */
const POOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The `pools` of a lane: a list of `{ name, quotas }`, each name once.
 * @throws ConfigError naming `pools`, a pool's `name` or a field of its `quotas`.
 */
function parsePools(input: unknown, costsAvailable: boolean): readonly PoolConfig[] | undefined {
  if (input === undefined) return undefined;
  if (!Array.isArray(input) || input.length === 0)
    throw new ConfigError('pools', `must be a list of pools, each { name, quotas }; got ${describeValue(input)}`);
  const seen = new Set<string>();
  return Object.freeze(
    input.map((pool: unknown, i) => {
      const { name, quotas, weight, rateLimitScope, ...rest } = (
        typeof pool === 'object' && pool !== null ? pool : {}
      ) as Record<string, unknown>;
      const unknownKey = Object.keys(rest)[0];
      if (unknownKey !== undefined)
        throw new ConfigError(
          `pools[${i}].${unknownKey}`,
          'unknown key; a pool has name, quotas, weight and rateLimitScope',
        );
      if (rateLimitScope !== undefined && rateLimitScope !== 'lane' && rateLimitScope !== 'pool')
        throw new ConfigError(
          `pools[${i}].rateLimitScope`,
          `must be one of 'lane', 'pool'; got ${describeValue(rateLimitScope)}`,
        );
      const { min, max } = POOL_WEIGHT_RANGE;
      if (
        weight !== undefined &&
        (typeof weight !== 'number' || !Number.isInteger(weight) || weight < min || weight > max)
      )
        throw new ConfigError(
          `pools[${i}].weight`,
          `must be an integer from ${min} to ${max}; got ${describeValue(weight)}`,
        );
      if (typeof name !== 'string' || !POOL_NAME.test(name) || seen.has(name))
        throw new ConfigError(
          `pools[${i}].name`,
          `must be 1 to 64 letters, digits, '-' or '_', each pool once; got ${describeValue(name)}`,
        );
      seen.add(name);
      const tiers = parseTiers(quotas, { field: `pools[${i}].quotas`, costsAvailable });
      return Object.freeze({
        name,
        quotas: tiers,
        ...(weight === undefined ? {} : { weight: weight as number }),
        ...(rateLimitScope === undefined ? {} : { rateLimitScope: rateLimitScope as RateLimitScope }),
      });
    }),
  );
}

/** Allowed values of `maxInFlight`: the ids of the calls in progress are saved with the ledger, which must stay small. */
export const MAX_IN_FLIGHT_RANGE: NumberRange = Object.freeze({ min: 1, max: 1000, integer: true });

/**
 * Validates a whole configuration object (keys as in {@link ServiceConfig}; all but `quotas` optional).
 * @param options.costsAvailable whether the job source gives messages a cost (see `parseTiers`). @default true
 * @throws ConfigError naming the offending field and its allowed values, including cross-field rules.
 */
export function parseServiceConfig(input: unknown, options: { readonly costsAvailable?: boolean } = {}): ServiceConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError('config', `must be an object with keys ${KEYS.join(', ')}; got ${describeValue(input)}`);
  }
  const raw = input as Record<string, unknown>;
  for (const key of Object.keys(raw)) {
    if (!(KEYS as readonly string[]).includes(key))
      throw new ConfigError(key, `unknown key; allowed keys are ${KEYS.join(', ')}`);
  }
  const lane = raw.lane ?? 'default';
  if (typeof lane !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(lane)) {
    throw new ConfigError('lane', `must be 1 to 64 letters, digits, '-' or '_'; got ${describeValue(lane)}`);
  }
  const timeZone = raw.timeZone ?? 'UTC';
  if (typeof timeZone !== 'string')
    throw new ConfigError('timeZone', `must be an IANA time zone such as 'UTC'; got ${describeValue(timeZone)}`);
  assertTimeZone(timeZone, 'timeZone');
  const orchestrator = parseOrchestratorSettings(raw.orchestrator);
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
  const quotas = parseTiers(raw.quotas, { field: 'quotas', costsAvailable: options.costsAvailable ?? true });
  const pools = parsePools(raw.pools, options.costsAvailable ?? true);
  const { maxInFlight } = raw;
  const { min, max } = MAX_IN_FLIGHT_RANGE;
  if (
    maxInFlight !== undefined &&
    (typeof maxInFlight !== 'number' || !Number.isInteger(maxInFlight) || maxInFlight < min || maxInFlight > max)
  ) {
    throw new ConfigError('maxInFlight', `must be an integer from ${min} to ${max}; got ${describeValue(maxInFlight)}`);
  }
  return Object.freeze({
    lane,
    quotas,
    timeZone,
    ...(maxInFlight === undefined ? {} : { maxInFlight: maxInFlight as number }),
    units: parseUnitSettings(raw.units, raw.usagePreset, [...quotas, ...(pools ?? []).flatMap((p) => p.quotas)]),
    ...(raw.usagePreset === undefined ? {} : { usagePreset: raw.usagePreset as UsagePreset }),
    ...(pools === undefined ? {} : { pools }),
    limits: parseLimitSettings(raw.limits, typeof raw.usagePreset === 'string' ? raw.usagePreset : undefined),
    priorities: parsePrioritySettings(raw.priorities),
    pacing: parsePacingSettings(raw.pacing),
    circuit: parseBreakerSettings(raw.circuit),
    retry: parseRetrySettings(raw.retry),
    orchestrator,
  });
}
