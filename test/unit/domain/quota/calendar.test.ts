import { assertTimeZone, calendarWindow } from '../../../../lib/domain/quota/calendar';
import { ConfigError } from '../../../../lib/errors';

const HOUR = 3_600_000;
const utc = (iso: string) => Date.parse(iso);

describe('calendarWindow', () => {
  describe('UTC', () => {
    it('keys a day by its date and ends it at the next midnight', () => {
      expect(calendarWindow(utc('2026-11-23T13:45:10.500Z'), 'day', 'UTC')).toEqual({ key: '2026-11-23', end: utc('2026-11-24T00:00:00.000Z') });
    });

    it('puts midnight in the day it starts and the last ms before it in the day before', () => {
      expect(calendarWindow(utc('2026-11-24T00:00:00.000Z'), 'day', 'UTC')).toEqual({ key: '2026-11-24', end: utc('2026-11-25T00:00:00.000Z') });
      expect(calendarWindow(utc('2026-11-23T23:59:59.999Z'), 'day', 'UTC')).toEqual({ key: '2026-11-23', end: utc('2026-11-24T00:00:00.000Z') });
    });

    it('keys a month by year and month and ends it at the first of the next month', () => {
      expect(calendarWindow(utc('2026-11-23T13:45:10.500Z'), 'month', 'UTC')).toEqual({ key: '2026-11', end: utc('2026-12-01T00:00:00.000Z') });
    });

    it('ends February on 1 March, in leap and common years', () => {
      expect(calendarWindow(utc('2028-02-29T12:00:00.000Z'), 'month', 'UTC')).toEqual({ key: '2028-02', end: utc('2028-03-01T00:00:00.000Z') });
      expect(calendarWindow(utc('2028-02-29T12:00:00.000Z'), 'day', 'UTC')).toEqual({ key: '2028-02-29', end: utc('2028-03-01T00:00:00.000Z') });
      expect(calendarWindow(utc('2027-02-28T12:00:00.000Z'), 'day', 'UTC')).toEqual({ key: '2027-02-28', end: utc('2027-03-01T00:00:00.000Z') });
    });

    it('ends December on 1 January of the next year', () => {
      expect(calendarWindow(utc('2026-12-31T23:59:59.999Z'), 'month', 'UTC')).toEqual({ key: '2026-12', end: utc('2027-01-01T00:00:00.000Z') });
      expect(calendarWindow(utc('2026-12-31T23:59:59.999Z'), 'day', 'UTC')).toEqual({ key: '2026-12-31', end: utc('2027-01-01T00:00:00.000Z') });
      expect(calendarWindow(utc('2027-01-01T00:00:00.000Z'), 'month', 'UTC')).toEqual({ key: '2027-01', end: utc('2027-02-01T00:00:00.000Z') });
    });

    it('pads years, months and days in keys', () => {
      expect(calendarWindow(utc('0999-03-04T05:06:07.000Z'), 'day', 'UTC').key).toBe('0999-03-04');
      expect(calendarWindow(utc('0999-03-04T05:06:07.000Z'), 'month', 'UTC').key).toBe('0999-03');
    });
  });

  describe('America/New_York', () => {
    const zone = 'America/New_York';

    it('ends a winter day at 05:00Z (EST, UTC-5)', () => {
      expect(calendarWindow(utc('2026-01-15T12:00:00.000Z'), 'day', zone)).toEqual({ key: '2026-01-15', end: utc('2026-01-16T05:00:00.000Z') });
    });

    it('ends a summer day at 04:00Z (EDT, UTC-4)', () => {
      expect(calendarWindow(utc('2026-07-15T12:00:00.000Z'), 'day', zone)).toEqual({ key: '2026-07-15', end: utc('2026-07-16T04:00:00.000Z') });
    });

    it('keys an instant after UTC midnight but before local midnight by the local date', () => {
      expect(calendarWindow(utc('2026-01-16T04:59:59.999Z'), 'day', zone)).toEqual({ key: '2026-01-15', end: utc('2026-01-16T05:00:00.000Z') });
      expect(calendarWindow(utc('2026-01-16T05:00:00.000Z'), 'day', zone)).toEqual({ key: '2026-01-16', end: utc('2026-01-17T05:00:00.000Z') });
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
      expect(calendarWindow(utc('2026-12-31T12:00:00.000Z'), 'month', zone)).toEqual({ key: '2026-12', end: utc('2027-01-01T05:00:00.000Z') });
      // 2027-01-01T03:00Z is still 22:00 on 31 December in New York.
      expect(calendarWindow(utc('2027-01-01T03:00:00.000Z'), 'month', zone)).toEqual({ key: '2026-12', end: utc('2027-01-01T05:00:00.000Z') });
    });

    it('ends March at the EDT midnight although it began at the EST one', () => {
      expect(calendarWindow(utc('2026-03-15T12:00:00.000Z'), 'month', zone)).toEqual({ key: '2026-03', end: utc('2026-04-01T04:00:00.000Z') });
    });
  });

  describe('Asia/Kolkata', () => {
    const zone = 'Asia/Kolkata';

    it('ends a day at 18:30Z (UTC+5:30)', () => {
      expect(calendarWindow(utc('2026-06-15T12:00:00.000Z'), 'day', zone)).toEqual({ key: '2026-06-15', end: utc('2026-06-15T18:30:00.000Z') });
    });

    it('starts the next local day at 18:30Z, before the UTC date changes', () => {
      expect(calendarWindow(utc('2026-06-15T18:29:59.999Z'), 'day', zone).key).toBe('2026-06-15');
      expect(calendarWindow(utc('2026-06-15T18:30:00.000Z'), 'day', zone)).toEqual({ key: '2026-06-16', end: utc('2026-06-16T18:30:00.000Z') });
    });

    it('ends December at 18:30Z on 31 December', () => {
      expect(calendarWindow(utc('2026-12-31T12:00:00.000Z'), 'month', zone)).toEqual({ key: '2026-12', end: utc('2026-12-31T18:30:00.000Z') });
      expect(calendarWindow(utc('2026-12-31T19:00:00.000Z'), 'month', zone)).toEqual({ key: '2027-01', end: utc('2027-01-31T18:30:00.000Z') });
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
      expect(configError.message).toBe(`LEDGER_TIME_ZONE: must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"`);
      expect(configError.cause).toBeInstanceOf(RangeError);
    }
  });

  it("names the field 'timeZone' by default", () => {
    expect(() => assertTimeZone('Mars/Olympus')).toThrow(
      expect.objectContaining({ field: 'timeZone', message: `timeZone: must be an IANA time zone such as 'UTC' or 'America/New_York'; got "Mars/Olympus"` }),
    );
  });
});
