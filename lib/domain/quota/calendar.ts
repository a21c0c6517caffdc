import { ConfigError } from '../../errors';

/** A calendar window: a day or a month in some time zone. */
export interface CalendarWindow {
  /** `YYYY-MM-DD` for days, `YYYY-MM` for months, in the window's time zone. */
  readonly key: string;
  /** Epoch ms of the first instant after the window (the next window's start). */
  readonly end: number;
}

interface LocalDate {
  readonly year: number;
  readonly month: number; // 1..12
  readonly day: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/**
 * Checks that `timeZone` is an IANA zone this runtime knows.
 * @throws ConfigError naming `field` otherwise.
 */
export function assertTimeZone(timeZone: string, field = 'timeZone'): void {
  try {
    formatterFor(timeZone);
  } catch (cause) {
    throw new ConfigError(field, `must be an IANA time zone such as 'UTC' or 'America/New_York'; got ${JSON.stringify(timeZone)}`, { cause });
  }
}

/** Wall-clock fields of instant `t` in `timeZone`, as if they were UTC (used to measure the zone's offset). */
function wallClockAsUtc(t: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(t)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return Date.UTC(parts.year ?? 0, (parts.month ?? 1) - 1, parts.day ?? 1, parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0);
}

function localDate(t: number, timeZone: string): LocalDate {
  const wall = new Date(wallClockAsUtc(t, timeZone));
  return { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() };
}

/**
 * The instant at which the local date `date` begins (local midnight) in `timeZone`. Converges in a few steps
 * because a zone's offset changes at most a couple of times a year; where midnight does not exist (a DST gap at
 * 00:00), this returns the first instant of that local date.
 */
function startOfLocalDate(date: LocalDate, timeZone: string): number {
  const wallMidnight = Date.UTC(date.year, date.month - 1, date.day);
  let guess = wallMidnight;
  for (let i = 0; i < 4; i++) {
    const offset = wallClockAsUtc(guess, timeZone) - guess;
    const next = wallMidnight - offset;
    if (next === guess) break;
    guess = next;
  }
  // Step back while the previous second is still the same local date (offset shifts near midnight).
  const same = (t: number) => {
    const d = localDate(t, timeZone);
    return d.year === date.year && d.month === date.month && d.day === date.day;
  };
  while (same(guess - 1000)) guess -= 1000;
  while (!same(guess)) guess += 1000;
  return guess;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The calendar day or month that contains instant `t` in `timeZone` (e.g. 'UTC'). */
export function calendarWindow(t: number, per: 'day' | 'month', timeZone: string): CalendarWindow {
  const { year, month, day } = localDate(t, timeZone);
  if (per === 'day') {
    const next = new Date(Date.UTC(year, month - 1, day + 1));
    const end = startOfLocalDate({ year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: next.getUTCDate() }, timeZone);
    return { key: `${pad(year, 4)}-${pad(month)}-${pad(day)}`, end };
  }
  const next = new Date(Date.UTC(year, month, 1));
  const end = startOfLocalDate({ year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: 1 }, timeZone);
  return { key: `${pad(year, 4)}-${pad(month)}`, end };
}
