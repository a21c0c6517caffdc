import { ConfigError } from '../../../../lib/errors';
import { parsePrioritySettings } from '../../../../lib/domain/priorities/settings';

describe('parsePrioritySettings', () => {
  it('gives bulk a tenth of the dispatches by default', () => {
    expect(parsePrioritySettings(undefined)).toEqual({ bulkShare: 0.1 });
    expect(parsePrioritySettings({ bulkShare: 0.5 })).toEqual({ bulkShare: 0.5 });
  });

  it.each([
    [{ bulkShare: 0 }, 'priorities.bulkShare: must be a number from 0.01 to 0.99; got 0'],
    [{ bulkShare: 1 }, 'priorities.bulkShare: must be a number from 0.01 to 0.99; got 1'],
    [{ share: 0.2 }, 'priorities.share: unknown key; allowed keys are bulkShare'],
  ])('refuses %j, naming the field and its range', (input, message) => {
    expect(() => parsePrioritySettings(input)).toThrow(ConfigError);
    expect(() => parsePrioritySettings(input)).toThrow(message);
  });
});
