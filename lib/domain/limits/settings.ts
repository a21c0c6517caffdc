import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';
import { ownValue } from '../ownValue';
import { REQUESTS, unitNameProblem, type SlidingPeriod, type TierUnit } from '../quota/tiers';
import { LIMIT_HEADER_FORMATS, type LimitFamily, type LimitHeaderFormat } from './rateLimitHeaders';

/**
 * What the service does with the limits it learns from the API's answers (see `LimitLearner`):
 * - `enforce`: paces and counts each tier at its limit in force;
 * - `shadow`: learns them, keeps them with the lane's state, and reports them (logs, `ops status`), but paces at
 *   the configured limits;
 * - `off`: reads no limit header and learns nothing.
 */
export type LimitLearningMode = 'enforce' | 'shadow' | 'off';

/** Every accepted {@link LimitLearningMode}. */
export const LIMIT_LEARNING_MODES: readonly LimitLearningMode[] = ['enforce', 'shadow', 'off'];

/**
 * How a lane learns its limits from the API: which of its headers say them, which tier each speaks of, and what is
 * done with what is learnt. Its parsed form is its configured form.
 */
export interface LimitSettings {
  /**
   * What is done with what is learnt: `enforce` paces and counts each tier at its limit in force (the lower of the
   * configured limit and what the API says); `shadow` learns the same limits, keeps them with the lane's state and
   * reports them (logs, the `LearnedLimitRatio` metric, `ops status`), while the lane paces at the configured limits;
   * `off` reads no limit header. Either way, what is learnt is kept with the lane's state and reported. @default
   * 'enforce'
   */
  readonly learn: LimitLearningMode;
  /**
   * The format of the API's rate-limit headers: `openai` (`x-ratelimit-*-requests`, `-tokens`), `anthropic`
   * (`anthropic-ratelimit-*`), `ietf` (`RateLimit-*`, requests only) or `none`. @default the provider of
   * `usagePreset`, else 'none'
   */
  readonly headers: LimitHeaderFormat;
  /** The window of the tiers the headers speak of, when they do not say (only the IETF policy says). */
  readonly per: SlidingPeriod;
  /** The unit of the tiers each family of headers speaks of. */
  readonly units: Readonly<Record<LimitFamily, TierUnit>>;
}

/** Which tier each reading speaks of (see `tierOfReading`). */
export type ReadingTiers = Pick<LimitSettings, 'per' | 'units'>;

/** The unit each family of headers speaks of, unless `limits.units` says otherwise. */
export const DEFAULT_FAMILY_UNITS: Readonly<Record<LimitFamily, TierUnit>> = Object.freeze({
  requests: 'requests',
  tokens: 'tokens',
  'input-tokens': 'input_tokens',
  'output-tokens': 'output_tokens',
});

const PERIODS: readonly SlidingPeriod[] = ['second', 'minute', 'hour'];
const KEYS = ['learn', 'headers', 'per', 'units'] as const;

/** One of `allowed`, or the default when `value` is `undefined`. @throws ConfigError naming `field`. */
function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T, field: string): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly unknown[]).includes(value))
    throw new ConfigError(
      field,
      `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}; got ${describeValue(value)}`,
    );
  return value as T;
}

/** The `units` of `limits`: a family's tier unit, by family. @throws ConfigError naming the family. */
function familyUnits(value: unknown, field: string): Readonly<Record<LimitFamily, TierUnit>> {
  if (value === undefined) return DEFAULT_FAMILY_UNITS;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConfigError(field, `must be an object of header families to units; got ${describeValue(value)}`);
  const units: Record<string, TierUnit> = { ...DEFAULT_FAMILY_UNITS };
  for (const family of Object.keys(value)) {
    if (ownValue(DEFAULT_FAMILY_UNITS, family) === undefined)
      throw new ConfigError(
        `${field}.${family}`,
        `unknown key; allowed keys are the families of limit headers, ${Object.keys(DEFAULT_FAMILY_UNITS).join(', ')}`,
      );
    const unit = ownValue(value as Record<string, unknown>, family);
    const problem =
      typeof unit !== 'string'
        ? 'must be the name of a unit the tiers count'
        : unit === REQUESTS
          ? undefined
          : unitNameProblem(unit);
    if (problem !== undefined) throw new ConfigError(`${field}.${family}`, `${problem}; got ${describeValue(unit)}`);
    units[family] = unit as TierUnit;
  }
  return units as Record<LimitFamily, TierUnit>;
}

/**
 * Validates the `limits` section: `learn` (`enforce` by default, `shadow` or `off`), `headers` (the format, by default the one of
 * `usagePreset`'s provider, else `none`), `per` (the window of the tiers the headers speak of, `minute` by default:
 * OpenAI's and Anthropic's limits are per minute) and `units` (the tier unit of each family of headers).
 * @throws ConfigError naming the field and what it allows.
 */
export function parseLimitSettings(input: unknown, usagePreset: string | undefined, field = 'limits'): LimitSettings {
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input)))
    throw new ConfigError(
      field,
      `must be an object with optional keys ${KEYS.join(', ')}; got ${describeValue(input)}`,
    );
  const raw = (input ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(raw))
    if (!(KEYS as readonly string[]).includes(key))
      throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are ${KEYS.join(', ')}`);
  const presetFormat: LimitHeaderFormat =
    usagePreset === 'openai' || usagePreset === 'anthropic' ? usagePreset : 'none';
  return Object.freeze({
    learn: oneOf(ownValue(raw, 'learn'), LIMIT_LEARNING_MODES, 'enforce', `${field}.learn`),
    headers: oneOf(ownValue(raw, 'headers'), LIMIT_HEADER_FORMATS, presetFormat, `${field}.headers`),
    per: oneOf(ownValue(raw, 'per'), PERIODS, 'minute', `${field}.per`),
    units: familyUnits(ownValue(raw, 'units'), `${field}.units`),
  });
}
