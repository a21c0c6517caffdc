import { ConfigError } from '../../errors';

/** A calendar window: a day or a month in some time zone. */
export interface CalendarWindow {
  /** `YYYY-MM-DD` for days, `YYYY-MM` for months, in the window's time zone. */
  readonly key: string;
  /** Epoch ms of the first instant after the window (the next window's start). */
  readonly end: number;
}

const SECOND = 1000;
const DAY = 86_400_000;
/**
 * Spacing of the offset probes that look for a zone transition inside a window. The zone database never puts two
 * transitions of one zone closer than about four days (the closest pair: Africa/Freetown, 1939, 95 h 40 min apart),
 * so a span of at most this length holds at most one: equal offsets at both ends mean none in between, and different
 * ones mean exactly one, which bisection finds.
 */
const PROBE_MS = 2 * DAY;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
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
    throw new ConfigError(
      field,
      `must be an IANA time zone such as 'UTC' or 'America/New_York'; got ${JSON.stringify(timeZone)}`,
      { cause },
    );
  }
}

/**
 * Milliseconds by which the wall clock of `timeZone` is ahead of UTC at instant `t`: a whole number of seconds, since
 * zone offsets and transitions are. `t + offset`, read with UTC getters, gives the local wall-clock fields.
 * @throws RangeError when `t`, or its wall clock, lies outside the ECMAScript time range.
 */
function offsetAt(t: number, timeZone: string): number {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(timeZone).formatToParts(t)) parts[part.type] = part.value;
  const year = Number(parts.year);
  const wall = new Date(0);
  // setUTCFullYear, not Date.UTC, which reads years 0..99 as 1900..1999; the formatter counts years before 1 AD as BC.
  wall.setUTCFullYear(parts.era === 'BC' ? 1 - year : year, Number(parts.month) - 1, Number(parts.day));
  wall.setUTCHours(Number(parts.hour), Number(parts.minute), Number(parts.second));
  return inTimeRange(wall.getTime()) - Math.floor(t / SECOND) * SECOND;
}

/**
 * `ms` itself, when a Date can hold it.
 * @throws RangeError otherwise (Date setters return NaN past ±8.64e15 ms).
 */
function inTimeRange(ms: number): number {
  if (Number.isNaN(ms)) throw new RangeError('a calendar window reaches outside the ECMAScript time range');
  return ms;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The key of the day or month that wall-clock time `wall` (local fields as UTC epoch ms) falls in. */
function keyOf(wall: number, per: 'day' | 'month'): string {
  const date = new Date(wall);
  const month = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}`;
  return per === 'month' ? month : `${month}-${pad(date.getUTCDate())}`;
}

/** The wall-clock time at which the day or month after the one containing wall-clock time `wall` begins. */
function nextWallBoundary(wall: number, per: 'day' | 'month'): number {
  if (per === 'day') return Math.floor(wall / DAY) * DAY + DAY;
  const date = new Date(wall);
  return inTimeRange(new Date(0).setUTCFullYear(date.getUTCFullYear(), date.getUTCMonth() + 1, 1));
}

interface Transition {
  /** The first instant with the new offset: a whole second. */
  readonly at: number;
  readonly offset: number;
}

/**
 * The first zone transition in `(from, to]`, given that the offset at `from` is `offset`; `undefined` if there is
 * none. Probes every {@link PROBE_MS} at most, then bisects to the second the first probe that differs: at most
 * `(to - from) / PROBE_MS + 1` probes and 18 bisection steps.
 */
function firstTransition(from: number, offset: number, to: number, timeZone: string): Transition | undefined {
  for (let lo = from; lo < to;) {
    const hi = Math.min(lo + PROBE_MS, to);
    const hiOffset = offsetAt(hi, timeZone);
    if (hiOffset !== offset) {
      // Invariant: the offset is `offset` at second `loSecond` and `found` at second `hiSecond`, with the one
      // transition of the probed span in between.
      let loSecond = Math.floor(lo / SECOND);
      let hiSecond = Math.floor(hi / SECOND);
      let found = hiOffset;
      while (hiSecond - loSecond > 1) {
        const mid = Math.floor((loSecond + hiSecond) / 2);
        const midOffset = offsetAt(mid * SECOND, timeZone);
        if (midOffset === offset) loSecond = mid;
        else [hiSecond, found] = [mid, midOffset];
      }
      return { at: hiSecond * SECOND, offset: found };
    }
    lo = hi;
  }
  return undefined;
}

/**
 * The calendar day or month that contains instant `t` in `timeZone` (e.g. 'UTC'): its key is `t`'s local date or
 * month, and it lasts from the first instant of the unbroken run of instants sharing that key to the first instant
 * after `t` with another key. Consecutive windows abut, and lengths follow the wall clock: a day is 24 hours, 23 or
 * 25 around a DST change. Where a transition skips a local date (Pacific/Apia went from the end of 2011-12-29 to the
 * start of 2011-12-31), that date has no window and the day before ends at the transition; where a transition sets
 * the clock back across midnight (America/Juneau in 1867), a key recurs, and each run of it is a window of its own
 * (the ledger, whose stored key never goes back, keeps counting such a run against the later key it holds).
 *
 * Terminates for every zone and instant: a few formatter calls for a day, about twenty for a month, plus eighteen for
 * each transition inside the window (the zone database puts at most one in a day and a handful in a month).
 * @throws RangeError when `t`, or the end of its window, lies outside the ECMAScript time range.
 */
export function calendarWindow(t: number, per: 'day' | 'month', timeZone: string): CalendarWindow {
  let at = t;
  let offset = offsetAt(t, timeZone);
  const key = keyOf(t + offset, per);
  // Each pass either returns or moves `at` forward to a transition inside the window, so there is one pass more than
  // there are transitions in the window: two at most for a day.
  for (;;) {
    // Where the wall clock reaches the next day or month if the offset stays as it is.
    const boundary = nextWallBoundary(at + offset, per) - offset;
    const transition = firstTransition(at, offset, boundary, timeZone);
    if (transition === undefined) return { key, end: boundary };
    if (keyOf(transition.at + transition.offset, per) !== key) return { key, end: transition.at };
    ({ at, offset } = transition);
  }
}
