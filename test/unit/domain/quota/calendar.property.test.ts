import fc from 'fast-check';
import { calendarWindow } from '../../../../lib/domain/quota/calendar';

/** Property runs per property. */
const RUNS = { anywhere: 300, nearTransitions: 300 };

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ZONES = Intl.supportedValuesOf('timeZone');
const FROM = Date.UTC(1800, 0, 1);
const TO = Date.UTC(2200, 0, 1);

/**
 * Zone transitions that skip or repeat a date or happen at midnight, each with its zone: the instants of the issue
 * and its neighbours. Property runs draw instants within three days of them.
 */
const TRANSITIONS: readonly [string, string][] = [
  ['Pacific/Apia', '2011-12-30T10:00:00Z'], // -10 to +14: 2011-12-30 skipped
  ['Pacific/Kiritimati', '1994-12-31T10:00:00Z'], // -10 to +14: 1994-12-31 skipped, at a month's end
  ['Pacific/Kwajalein', '1993-08-21T12:00:00Z'], // -12 to +12: 1993-08-21 skipped
  ['Asia/Manila', '1844-12-31T15:56:08Z'], // LMT -15:56 to +8:04: 1844-12-31 skipped
  ['America/Juneau', '1867-10-19T00:31:13Z'], // LMT +15:02 to -8:57: 1867-10-18 repeated
  ['America/Sitka', '1867-10-19T00:31:13Z'],
  ['America/Santiago', '2011-05-08T03:00:00Z'], // 24:00 back to 23:00
  ['America/Santiago', '2011-08-21T04:00:00Z'], // 00:00 forward to 01:00
  ['America/Havana', '2011-03-20T05:00:00Z'],
  ['America/Havana', '2011-11-13T05:00:00Z'],
  ['Asia/Gaza', '2014-03-27T22:00:00Z'],
  ['Asia/Gaza', '2014-10-23T21:00:00Z'],
  ['America/New_York', '2026-03-08T07:00:00Z'],
  ['Australia/Lord_Howe', '2026-04-04T15:00:00Z'], // a 30-minute change
  ['Africa/Casablanca', '2012-07-20T02:00:00Z'], // DST suspended for Ramadan, a month before it resumed
];

const referenceFormatters = new Map<string, Intl.DateTimeFormat>();

/** Local wall clock of `t` in `zone` as UTC epoch ms, at whole seconds, by the runtime's own formatter. */
function wallOf(t: number, zone: string): number {
  let formatter = referenceFormatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    referenceFormatters.set(zone, formatter);
  }
  const p = Object.fromEntries(formatter.formatToParts(t).map(({ type, value }) => [type, Number(value)]));
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

/** The local date (`YYYY-MM-DD`) or month (`YYYY-MM`) of `t` in `zone`. */
function keyOf(t: number, per: 'day' | 'month', zone: string): string {
  const iso = new Date(wallOf(t, zone)).toISOString();
  return per === 'day' ? iso.slice(0, 10) : iso.slice(0, 7);
}

const offsetOf = (t: number, zone: string) => wallOf(t, zone) - Math.floor(t / 1000) * 1000;

/** Whether the local wall clock at `t` reads the first second of a day (or, for months, of the month's first day). */
function atLocalMidnight(t: number, per: 'day' | 'month', zone: string): boolean {
  const iso = new Date(wallOf(t, zone)).toISOString();
  return iso.endsWith('T00:00:00.000Z') && (per === 'day' || iso.slice(8, 10) === '01');
}

/**
 * Checks the window of `t`: it holds `t` and only `t`'s key, it ends where the key changes and the window of its last
 * instant is itself, and the next window abuts it, starts at local midnight unless a transition swallowed midnight, and
 * has another key.
 */
function checkWindow(zone: string, t: number, per: 'day' | 'month'): void {
  const window = calendarWindow(t, per, zone);
  const key = keyOf(t, per, zone);
  expect(window.key).toBe(key);
  expect(window.end).toBeGreaterThan(t);
  expect(keyOf(window.end - 1, per, zone)).toBe(key);
  expect(keyOf(window.end, per, zone)).not.toBe(key);
  expect(calendarWindow(window.end - 1, per, zone)).toEqual(window);
  for (let s = t; s < window.end; s += per === 'day' ? HOUR : 6 * HOUR) expect(keyOf(s, per, zone)).toBe(key);

  const next = calendarWindow(window.end, per, zone);
  expect(next.key).toBe(keyOf(window.end, per, zone));
  expect(next.end).toBeGreaterThan(window.end);
  expect(next.end - window.end).toBeLessThanOrEqual(per === 'day' ? 2 * DAY : 32 * DAY);
  const transitionAtStart = offsetOf(window.end - 1000, zone) !== offsetOf(window.end, zone);
  expect(transitionAtStart || atLocalMidnight(window.end, per, zone)).toBe(true);
}

const perArb = fc.constantFrom<'day' | 'month'>('day', 'month');

describe('calendarWindow (properties)', () => {
  it('terminates with a correct window for any zone and any instant from 1800 to 2200', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), fc.integer({ min: FROM, max: TO }), perArb, (zone, t, per) =>
        checkWindow(zone, t, per),
      ),
      { numRuns: RUNS.anywhere },
    );
  });

  it('terminates with a correct window within three days of a transition that skips, repeats or lands on midnight', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...TRANSITIONS),
        fc.integer({ min: -3 * DAY, max: 3 * DAY }),
        perArb,
        ([zone, at], delta, per) => checkWindow(zone, Date.parse(at) + delta, per),
      ),
      { numRuns: RUNS.nearTransitions },
    );
  });

  it('terminates for every zone the runtime knows, by day and by month, with a window that ends where its key does', () => {
    const at = Date.UTC(2026, 10, 23, 13, 45, 10, 500);
    for (const zone of ZONES) {
      for (const per of ['day', 'month'] as const) {
        const { key, end } = calendarWindow(at, per, zone);
        expect([zone, key, keyOf(end - 1, per, zone)]).toEqual([zone, keyOf(at, per, zone), key]);
        expect([zone, keyOf(end, per, zone) === key]).toEqual([zone, false]);
      }
    }
  });
});
