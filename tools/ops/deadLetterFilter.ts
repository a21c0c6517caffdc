import { DEAD_LETTER_CLASSES, deadLetterClass } from '../../lib/adapters/metrics/serviceMetrics';
import type { DeadLetter } from './deadLetters';

/**
 * The classes of why a message is in a dead-letter queue, as `--reason` takes them: the classes of the service's own
 * reasons (the `reason` dimension of the `DeadLetters` metric: `malformed`, `permanent`, `attempts-exhausted`,
 * `too-large`, `over-quota`, `refused`, `other`), and `max-receives` for a message SQS moved there itself after
 * `maxReceiveCount` receives (it carries no reason: no worker settled it).
 */
export const REASON_CLASSES = [...DEAD_LETTER_CLASSES, 'max-receives'] as const;

/** A class of {@link REASON_CLASSES}. */
export type ReasonClass = (typeof REASON_CLASSES)[number];

/** The class of `letter`'s reason (see {@link REASON_CLASSES}). */
export function reasonClassOf(letter: Pick<DeadLetter, 'reason'>): ReasonClass {
  return letter.reason === undefined ? 'max-receives' : deadLetterClass(letter.reason);
}

/** Which dead letters a command works on; a letter must pass every field given. */
export interface DeadLetterFilter {
  /** Only letters whose reason is of one of these classes. @default any */
  readonly reasons?: readonly ReasonClass[];
  /** Only letters dead-lettered at least this many ms ago. @default any */
  readonly olderThanMs?: number;
  /** Only letters dead-lettered less than this many ms ago. @default any */
  readonly newerThanMs?: number;
}

/** Whether `filter` asks for anything: a filter with no field passes every letter. */
export function filters(filter: DeadLetterFilter): boolean {
  return filter.reasons !== undefined || filter.olderThanMs !== undefined || filter.newerThanMs !== undefined;
}

/** Whether `letter` passes `filter` at `now`: its age is `now` less when it reached the dead-letter queue. */
export function passes(letter: DeadLetter, filter: DeadLetterFilter, now: number): boolean {
  const age = now - letter.deadLetteredAt;
  if (filter.reasons !== undefined && !filter.reasons.includes(reasonClassOf(letter))) return false;
  if (filter.olderThanMs !== undefined && age < filter.olderThanMs) return false;
  return filter.newerThanMs === undefined || age < filter.newerThanMs;
}

const AGE_UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * An age as the CLI takes it, a whole number and a unit: `90s`, `15m`, `2h`, `7d`.
 * @returns the age in ms, or `undefined` when `text` is not one.
 */
export function parseAge(text: string): number | undefined {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (match === null) return undefined;
  const [, count, unit] = match;
  return Number(count) * (AGE_UNIT_MS[unit ?? ''] ?? Number.NaN);
}
