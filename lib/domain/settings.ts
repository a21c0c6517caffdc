import { ConfigError } from '../errors';
import { describeValue } from './describeValue';
import { ownValue } from './ownValue';

/** The allowed values of one numeric setting. */
export interface NumberRange {
  readonly min: number;
  readonly max: number;
  /** Whole numbers only. */
  readonly integer?: boolean;
}

/** An on/off setting: `true` or `false`. */
export interface Flag {
  readonly flag: true;
}

/** The range of an on/off setting. */
export const FLAG: Flag = Object.freeze({ flag: true });

/** What each setting of `T` allows: a range for a number, {@link FLAG} for an on/off setting. */
export type SettingRanges<T> = { readonly [K in keyof T]: T[K] extends boolean ? Flag : NumberRange };

/** Why `value` is not allowed by `range`, or `undefined` when it is. */
function rejection(value: unknown, range: NumberRange | Flag): string | undefined {
  if ('flag' in range)
    return typeof value === 'boolean' ? undefined : `must be true or false; got ${describeValue(value)}`;
  const kind = range.integer === true ? 'an integer' : 'a number';
  const allowed =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= range.min &&
    value <= range.max &&
    (range.integer !== true || Number.isInteger(value));
  return allowed ? undefined : `must be ${kind} from ${range.min} to ${range.max}; got ${describeValue(value)}`;
}

/**
 * Validates an object of optional settings (numbers in ranges, and on/off flags) and fills in defaults; `undefined`
 * means all defaults.
 * @param field name of the object in error messages, e.g. `pacing`.
 * @throws ConfigError naming the offending field (e.g. `pacing.burstFraction`) and its allowed range, or an unknown key.
 */
export function parseSettings<T extends { readonly [K in keyof T]: number | boolean }>(
  input: unknown,
  field: string,
  defaults: T,
  ranges: SettingRanges<T>,
): T {
  const keys = Object.keys(ranges);
  if (input === undefined) return defaults;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError(
      field,
      `must be an object with optional keys ${keys.join(', ')}; got ${describeValue(input)}`,
    );
  }
  const settings: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const [key, value] of Object.entries(input)) {
    // An own key only: `toString`, `constructor` or `__proto__` would otherwise find the prototype's, and pass.
    const range = ownValue<NumberRange | Flag>(ranges, key);
    if (range === undefined)
      throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are ${keys.join(', ')}`);
    const why = rejection(value, range);
    if (why !== undefined) throw new ConfigError(`${field}.${key}`, why);
    settings[key] = value;
  }
  return Object.freeze(settings) as unknown as T;
}
