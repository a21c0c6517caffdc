/** Checks that several settings parsers share: packaging's, the cold start's and the worker's. */
import { describeValue } from './domain/describeValue';
import { ConfigError } from './errors';

/** Whether `value` is a plain object (not `null`, not an array), whose keys a parser can read. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How a whole-number setting is named, and its range worded, in its refusal. */
export interface WholeNumberWords {
  /** The setting's name where it is written, e.g. `functions.worker.timeout` or `API_TIMEOUT_MS`. */
  readonly field: string;
  /** What it counts, e.g. `seconds`. @default none: "a whole number" */
  readonly unit?: string;
  /** Said after the range, e.g. `, below functions.worker.timeout`. @default nothing */
  readonly note?: string;
  /** The value as written, for "got …". @default `describeValue(value)` */
  readonly shown?: string;
}

/**
 * `value`, when it is a whole number from `range.min` to `range.max`.
 * @throws ConfigError naming `words.field`: "must be a whole number of <unit> from <min> to <max><note>; got …".
 */
export function wholeNumber(
  value: unknown,
  range: { readonly min: number; readonly max: number },
  words: WholeNumberWords,
): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= range.min && value <= range.max) return value;
  const kind = words.unit === undefined ? 'a whole number' : `a whole number of ${words.unit}`;
  throw new ConfigError(
    words.field,
    `must be ${kind} from ${range.min} to ${range.max}${words.note ?? ''}; got ${words.shown ?? describeValue(value)}`,
  );
}
