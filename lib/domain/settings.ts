import { ConfigError } from '../errors';
import { describeValue } from './describeValue';

/** The allowed values of one numeric setting. */
export interface NumberRange {
  readonly min: number;
  readonly max: number;
  /** Whole numbers only. */
  readonly integer?: boolean;
}

/**
 * Validates an object of optional numeric settings against their ranges and fills in defaults; `undefined`
 * means all defaults.
 * @param field name of the object in error messages, e.g. `pacing`.
 * @throws ConfigError naming the offending field (e.g. `pacing.burstFraction`) and its allowed range, or an unknown key.
 */
export function parseNumberSettings<T extends { readonly [K in keyof T]: number }>(
  input: unknown,
  field: string,
  defaults: T,
  ranges: { readonly [K in keyof T]: NumberRange },
): T {
  const keys = Object.keys(ranges);
  if (input === undefined) return defaults;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError(field, `must be an object with optional keys ${keys.join(', ')}; got ${describeValue(input)}`);
  }
  const settings: Record<string, number> = { ...(defaults as Record<string, number>) };
  for (const [key, value] of Object.entries(input)) {
    // An own key only: `toString`, `constructor` or `__proto__` would otherwise find the prototype's, and pass.
    const range: NumberRange | undefined = Object.prototype.hasOwnProperty.call(ranges, key) ? ranges[key as keyof T] : undefined;
    if (range === undefined) throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are ${keys.join(', ')}`);
    const kind = range.integer === true ? 'an integer' : 'a number';
    if (typeof value !== 'number' || !Number.isFinite(value) || value < range.min || value > range.max || (range.integer === true && !Number.isInteger(value))) {
      throw new ConfigError(`${field}.${key}`, `must be ${kind} from ${range.min} to ${range.max}; got ${describeValue(value)}`);
    }
    settings[key] = value;
  }
  return Object.freeze(settings) as unknown as T;
}
