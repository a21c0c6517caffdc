import { assertTimeZone, calendarWindow } from '../../../../lib/domain/quota/calendar';
import { ConfigError } from '../../../../lib/errors';

const HOUR = 3_600_000;
const utc = (iso: string) => Date.parse(iso);

describe('calendarWindow', () => {
  describe('UTC', () => {
    it('keys a day by its date and ends it at the next midnight', () => {
      expect(calendarWindow(utc('2026-11-23T13:45:10.500Z'), 'day', 'UTC')).toEqual({
        key: '2026-11-23',
        end: utc('2026-11-24T00:00:00.000Z'),
      });
    });

    it('puts midnight in the day it starts and the last ms before it in the day before', () => {
      expect(calendarWindow(utc('2026-11-24T00:00:00.000Z'), 'day', 'UTC')).toEqual({
        key: '2026-11-24',
        end: utc('2026-11-25T00:00:00.000Z'),
      });
      expect(calendarWindow(utc('2026-11-23T23:59:59.999Z'), 'day', 'UTC')).toEqual({
        key: '2026-11-23',
        end: utc('2026-11-24T00:00:00.000Z'),
      });
    });

    it('keys a month by year and month and ends it at the first of the next month', () => {
      expect(calendarWindow(utc('2026-11-23T13:45:10.500Z'), 'month', 'UTC')).toEqual({
        key: '2026-11',
        end: utc('2026-12-01T00:00:00.000Z'),
      });
    });

    it('ends February on 1 March, in leap and common years', () => {
      expect(calendarWindow(utc('2028-02-29T12:00:00.000Z'), 'month', 'UTC')).toEqual({
        key: '2028-02',
        end: utc('2028-03-01T00:00:00.000Z'),
      });
      expect(calendarWindow(utc('2028-02-29T12:00:00.000Z'), 'day', 'UTC')).toEqual({
        key: '2028-02-29',
        end: utc('2028-03-01T00:00:00.000Z'),
      });
      expect(calendarWindow(utc('2027-02-28T12:00:00.000Z'), 'day', 'UTC')).toEqual({
        key: '2027-02-28',
        end: utc('2027-03-01T00:00:00.000Z'),
      });
    });

    it('ends December on 1 January of the next year', () => {
      expect(calendarWindow(utc('2026-12-31T23:59:59.999Z'), 'month', 'UTC')).toEqual({
        key: '2026-12',
        end: utc('2027-01-01T00:00:00.000Z'),
      });
      expect(calendarWindow(utc('2026-12-31T23:59:59.999Z'), 'day', 'UTC')).toEqual({
        key: '2026-12-31',
        end: utc('2027-01-01T00:00:00.000Z'),
      });
      expect(calendarWindow(utc('2027-01-01T00:00:00.000Z'), 'month', 'UTC')).toEqual({
        key: '2027-01',
        end: utc('2027-02-01T00:00:00.000Z'),
      });
    });

    it('pads years, months and days in keys', () => {
      expect(calendarWindow(utc('0999-03-04T05:06:07.000Z'), 'day', 'UTC').key).toBe('0999-03-04');
      expect(calendarWindow(utc('0999-03-04T05:06:07.000Z'), 'month', 'UTC').key).toBe('0999-03');
    });
  });

  describe('America/New_York', () => {
    const zone = 'America/New_York';

    it('ends a winter day at 05:00Z (EST, UTC-5)', () => {
      expect(calendarWindow(utc('2026-01-15T12:00:00.000Z'), 'day', zone)).toEqual({
        key: '2026-01-15',
        end: utc('2026-01-16T05:00:00.000Z'),
      });
    });

    it('ends a summer day at 04:00Z (EDT, UTC-4)', () => {
      expect(calendarWindow(utc('2026-07-15T12:00:00.000Z'), 'day', zone)).toEqual({
        key: '2026-07-15',
        end: utc('2026-07-16T04:00:00.000Z'),
      });
    });

    it('keys an instant after UTC midnight but before local midnight by the local date', () => {
      expect(calendarWindow(utc('2026-01-16T04:59:59.999Z'), 'day', zone)).toEqual({
        key: '2026-01-15',
        end: utc('2026-01-16T05:00:00.000Z'),
      });
      expect(calendarWindow(utc('2026-01-16T05:00:00.000Z'), 'day', zone)).toEqual({
        key: '2026-01-16',
        end: utc('2026-01-17T05:00:00.000Z'),
      });
    });

    it('makes the spring-forward day 23 hours long', () => {
      // 2026-03-08: clocks go from 02:00 EST to 03:00 EDT.
      const previous = calendarWindow(utc('2026-03-07T12:00:00.000Z'), 'day', zone);
      const day = calendarWindow(utc('2026-03-08T12:00:00.000Z'), 'day', zone);
      expect(previous).toEqual({ key: '2026-03-07', end: utc('2026-03-08T05:00:00.000Z') });
      expect(day).toEqual({ key: '2026-03-08', end: utc('2026-03-09T04:00:00.000Z') });
      expect(day.end - previous.end).toBe(23 * HOUR);
    });

    it('makes the fall-back day 25 hours long', () => {
      // 2026-11-01: clocks go from 02:00 EDT back to 01:00 EST.
      const previous = calendarWindow(utc('2026-10-31T12:00:00.000Z'), 'day', zone);
      const day = calendarWindow(utc('2026-11-01T12:00:00.000Z'), 'day', zone);
      expect(previous).toEqual({ key: '2026-10-31', end: utc('2026-11-01T04:00:00.000Z') });
      expect(day).toEqual({ key: '2026-11-01', end: utc('2026-11-02T05:00:00.000Z') });
      expect(day.end - previous.end).toBe(25 * HOUR);
    });

    it('keeps both 01:30s of the fall-back day in that day', () => {
      expect(calendarWindow(utc('2026-11-01T05:30:00.000Z'), 'day', zone).key).toBe('2026-11-01'); // 01:30 EDT
      expect(calendarWindow(utc('2026-11-01T06:30:00.000Z'), 'day', zone).key).toBe('2026-11-01'); // 01:30 EST
    });

    it('ends December at local midnight on 1 January, 05:00Z', () => {
      expect(calendarWindow(utc('2026-12-31T12:00:00.000Z'), 'month', zone)).toEqual({
        key: '2026-12',
        end: utc('2027-01-01T05:00:00.000Z'),
      });
      // 2027-01-01T03:00Z is still 22:00 on 31 December in New York.
      expect(calendarWindow(utc('2027-01-01T03:00:00.000Z'), 'month', zone)).toEqual({
        key: '2026-12',
        end: utc('2027-01-01T05:00:00.000Z'),
      });
    });

    it('ends March at the EDT midnight although it began at the EST one', () => {
      expect(calendarWindow(utc('2026-03-15T12:00:00.000Z'), 'month', zone)).toEqual({
        key: '2026-03',
        end: utc('2026-04-01T04:00:00.000Z'),
      });
    });
  });

  describe('Asia/Kolkata', () => {
    const zone = 'Asia/Kolkata';

    it('ends a day at 18:30Z (UTC+5:30)', () => {
      expect(calendarWindow(utc('2026-06-15T12:00:00.000Z'), 'day', zone)).toEqual({
        key: '2026-06-15',
        end: utc('2026-06-15T18:30:00.000Z'),
      });
    });

    it('starts the next local day at 18:30Z, before the UTC date changes', () => {
      expect(calendarWindow(utc('2026-06-15T18:29:59.999Z'), 'day', zone).key).toBe('2026-06-15');
      expect(calendarWindow(utc('2026-06-15T18:30:00.000Z'), 'day', zone)).toEqual({
        key: '2026-06-16',
        end: utc('2026-06-16T18:30:00.000Z'),
      });
    });

    it('ends December at 18:30Z on 31 December', () => {
      expect(calendarWindow(utc('2026-12-31T12:00:00.000Z'), 'month', zone)).toEqual({
        key: '2026-12',
        end: utc('2026-12-31T18:30:00.000Z'),
      });
      expect(calendarWindow(utc('2026-12-31T19:00:00.000Z'), 'month', zone)).toEqual({
        key: '2027-01',
        end: utc('2027-01-31T18:30:00.000Z'),
      });
    });
  });

  /** `count` consecutive windows of `zone` from instant `from`, each with the start it abuts. */
  function chain(
    from: number,
    per: 'day' | 'month',
    zone: string,
    count: number,
  ): { key: string; start: string; end: string }[] {
    const windows = [];
    for (let start = from; windows.length < count;) {
      const { key, end } = calendarWindow(start, per, zone);
      windows.push({ key, start: new Date(start).toISOString(), end: new Date(end).toISOString() });
      start = end;
    }
    return windows;
  }

  describe('a skipped local date', () => {
    it('gives Pacific/Apia no 2011-12-30: the 29th ends when the clock jumps from -10 to +14', () => {
      expect(chain(utc('2011-12-29T10:00:00.000Z'), 'day', 'Pacific/Apia', 3)).toEqual([
        { key: '2011-12-29', start: '2011-12-29T10:00:00.000Z', end: '2011-12-30T10:00:00.000Z' },
        { key: '2011-12-31', start: '2011-12-30T10:00:00.000Z', end: '2011-12-31T10:00:00.000Z' },
        { key: '2012-01-01', start: '2011-12-31T10:00:00.000Z', end: '2012-01-01T10:00:00.000Z' },
      ]);
    });

    it('keys the last moments before the jump by the 29th and the jump itself by the 31st', () => {
      expect(calendarWindow(utc('2011-12-30T09:59:59.999Z'), 'day', 'Pacific/Apia')).toEqual({
        key: '2011-12-29',
        end: utc('2011-12-30T10:00:00.000Z'),
      });
      expect(calendarWindow(utc('2011-12-30T10:00:00.000Z'), 'day', 'Pacific/Apia')).toEqual({
        key: '2011-12-31',
        end: utc('2011-12-31T10:00:00.000Z'),
      });
    });

    it('ends Pacific/Apia December 2011 at local midnight on 1 January, one day short', () => {
      expect(calendarWindow(utc('2011-12-15T00:00:00.000Z'), 'month', 'Pacific/Apia')).toEqual({
        key: '2011-12',
        end: utc('2011-12-31T10:00:00.000Z'),
      });
    });

    it('ends Pacific/Kiritimati December 1994 when 31 December is skipped', () => {
      expect(chain(utc('1994-12-30T10:00:00.000Z'), 'day', 'Pacific/Kiritimati', 2)).toEqual([
        { key: '1994-12-30', start: '1994-12-30T10:00:00.000Z', end: '1994-12-31T10:00:00.000Z' },
        { key: '1995-01-01', start: '1994-12-31T10:00:00.000Z', end: '1995-01-01T10:00:00.000Z' },
      ]);
      expect(chain(utc('1994-12-01T10:00:00.000Z'), 'month', 'Pacific/Kiritimati', 2)).toEqual([
        { key: '1994-12', start: '1994-12-01T10:00:00.000Z', end: '1994-12-31T10:00:00.000Z' },
        { key: '1995-01', start: '1994-12-31T10:00:00.000Z', end: '1995-01-31T10:00:00.000Z' },
      ]);
    });
  });

  describe('a transition at midnight', () => {
    it('makes America/Santiago start its spring-forward day at 01:00, 23 hours long', () => {
      // 2011-08-21: 00:00 -04 does not exist; clocks go to 01:00 -03.
      expect(chain(utc('2011-08-20T04:00:00.000Z'), 'day', 'America/Santiago', 2)).toEqual([
        { key: '2011-08-20', start: '2011-08-20T04:00:00.000Z', end: '2011-08-21T04:00:00.000Z' },
        { key: '2011-08-21', start: '2011-08-21T04:00:00.000Z', end: '2011-08-22T03:00:00.000Z' },
      ]);
    });

    it('makes America/Santiago repeat 23:00 on its fall-back Saturday, 25 hours long', () => {
      // 2011-05-08 00:00 -03 is 2011-05-07 23:00 -04.
      expect(chain(utc('2011-05-07T03:00:00.000Z'), 'day', 'America/Santiago', 2)).toEqual([
        { key: '2011-05-07', start: '2011-05-07T03:00:00.000Z', end: '2011-05-08T04:00:00.000Z' },
        { key: '2011-05-08', start: '2011-05-08T04:00:00.000Z', end: '2011-05-09T04:00:00.000Z' },
      ]);
    });

    it('makes America/Havana days of 23 hours (00:00 skipped) and 25 hours (00:00 to 01:00 twice)', () => {
      expect(chain(utc('2011-03-19T05:00:00.000Z'), 'day', 'America/Havana', 2)).toEqual([
        { key: '2011-03-19', start: '2011-03-19T05:00:00.000Z', end: '2011-03-20T05:00:00.000Z' },
        { key: '2011-03-20', start: '2011-03-20T05:00:00.000Z', end: '2011-03-21T04:00:00.000Z' },
      ]);
      expect(chain(utc('2011-11-13T04:00:00.000Z'), 'day', 'America/Havana', 1)).toEqual([
        { key: '2011-11-13', start: '2011-11-13T04:00:00.000Z', end: '2011-11-14T05:00:00.000Z' },
      ]);
    });

    it('follows Asia/Gaza in 2014: a 23-hour Friday in March, a 25-hour Thursday in October', () => {
      expect(calendarWindow(utc('2014-03-28T12:00:00.000Z'), 'day', 'Asia/Gaza')).toEqual({
        key: '2014-03-28',
        end: utc('2014-03-28T21:00:00.000Z'),
      });
      expect(calendarWindow(utc('2014-03-27T21:59:59.999Z'), 'day', 'Asia/Gaza')).toEqual({
        key: '2014-03-27',
        end: utc('2014-03-27T22:00:00.000Z'),
      });
      expect(calendarWindow(utc('2014-10-23T12:00:00.000Z'), 'day', 'Asia/Gaza')).toEqual({
        key: '2014-10-23',
        end: utc('2014-10-23T22:00:00.000Z'),
      });
      expect(calendarWindow(utc('2014-10-22T20:59:59.999Z'), 'day', 'Asia/Gaza')).toEqual({
        key: '2014-10-22',
        end: utc('2014-10-22T21:00:00.000Z'),
      });
    });
  });

  describe('a local date that recurs', () => {
    it('gives each run of America/Juneau 1867-10-18 a window of its own when the clock went back a day', () => {
      // At 00:31:13Z on 19 October 1867 the local clock went from 15:33:32 on the 19th (LMT +15:02:19) to 15:33:32 on
      // the 18th (LMT -8:57:41).
      expect(chain(utc('1867-10-17T08:57:41.000Z'), 'day', 'America/Juneau', 4)).toEqual([
        { key: '1867-10-18', start: '1867-10-17T08:57:41.000Z', end: '1867-10-18T08:57:41.000Z' },
        { key: '1867-10-19', start: '1867-10-18T08:57:41.000Z', end: '1867-10-19T00:31:13.000Z' },
        { key: '1867-10-18', start: '1867-10-19T00:31:13.000Z', end: '1867-10-19T08:57:41.000Z' },
        { key: '1867-10-19', start: '1867-10-19T08:57:41.000Z', end: '1867-10-20T08:57:41.000Z' },
      ]);
    });
  });

  describe('years and range', () => {
    it('keys years below 100 as themselves, not as 19xx', () => {
      const at = utc('0050-03-04T05:06:07.000Z');
      expect(calendarWindow(at, 'day', 'UTC')).toEqual({ key: '0050-03-04', end: utc('0050-03-05T00:00:00.000Z') });
      expect(calendarWindow(at, 'month', 'UTC')).toEqual({ key: '0050-03', end: utc('0050-04-01T00:00:00.000Z') });
    });

    it('ends the last whole day at the last representable instant', () => {
      expect(calendarWindow(8.64e15 - 1, 'day', 'UTC')).toEqual({ key: '275760-09-12', end: 8.64e15 });
    });

    it('throws a RangeError where the window would end after the last representable instant', () => {
      expect(() => calendarWindow(8.64e15, 'day', 'UTC')).toThrow(RangeError);
      expect(() => calendarWindow(8.64e15 - 1, 'month', 'UTC')).toThrow(RangeError);
      expect(() => calendarWindow(8.64e15 - 1, 'day', 'Pacific/Kiritimati')).toThrow(RangeError);
      expect(() => calendarWindow(Number.NaN, 'day', 'UTC')).toThrow(RangeError);
    });
  });
});

describe('assertTimeZone', () => {
  it('accepts IANA zones', () => {
    expect(() => assertTimeZone('UTC')).not.toThrow();
    expect(() => assertTimeZone('America/New_York')).not.toThrow();
    expect(() => assertTimeZone('Asia/Kolkata')).not.toThrow();
  });

  it('refuses an unknown zone with a ConfigError naming the field and an example', () => {
    expect.assertions(4);
    try {
      assertTimeZone('Mars/Olympus', 'LEDGER_TIME_ZONE');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const configError = error as ConfigError;
      expect(configError.field).toBe('LEDGER_TIME_ZONE');
      expect(configError.message).toBe(
        `LEDGER_TIME_ZONE: must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"`,
      );
      expect(configError.cause).toBeInstanceOf(RangeError);
    }
  });

  it("names the field 'timeZone' by default", () => {
    expect(() => assertTimeZone('Mars/Olympus')).toThrow(
      expect.objectContaining({
        field: 'timeZone',
        message: `timeZone: must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"`,
      }),
    );
  });
});
