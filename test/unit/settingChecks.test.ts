import { ConfigError } from '../../lib/errors';
import { isRecord, wholeNumber } from '../../lib/settingChecks';
import { thrown } from '../helpers/thrown';

describe('isRecord', () => {
  it('is true of a plain object only', () => {
    expect(isRecord({ a: 1 })).toBe(true);
    expect(isRecord({})).toBe(true);
    for (const value of [null, undefined, [], 'text', 1]) expect(isRecord(value)).toBe(false);
  });
});

describe('wholeNumber', () => {
  const range = { min: 1, max: 10 };

  it('returns a whole number at either end of the range', () => {
    expect(wholeNumber(1, range, { field: 'f' })).toBe(1);
    expect(wholeNumber(10, range, { field: 'f' })).toBe(10);
  });

  it.each([0, 11, 1.5, '5', Infinity, undefined])('refuses %p, naming the field and the range', (value) => {
    const error = thrown(ConfigError, () => wholeNumber(value, range, { field: 'f' }));

    expect(error.field).toBe('f');
    expect(error.problem).toMatch(/^must be a whole number from 1 to 10; got /);
  });

  it('words the refusal with the unit, the note and the value as written', () => {
    const error = thrown(ConfigError, () =>
      wholeNumber(Number('soon'), range, {
        field: 'WAIT_SECONDS',
        unit: 'seconds',
        note: ', below X',
        shown: "'soon'",
      }),
    );

    expect(error.message).toBe("WAIT_SECONDS: must be a whole number of seconds from 1 to 10, below X; got 'soon'");
  });

  it('shows the value as JSON by default', () => {
    expect(thrown(ConfigError, () => wholeNumber('5', range, { field: 'f' })).message).toBe(
      'f: must be a whole number from 1 to 10; got "5"',
    );
  });
});
