import { DEFAULT_FAMILY_UNITS, parseLimitSettings } from '../../../../lib/domain/limits/settings';

describe('parseLimitSettings', () => {
  it('learns and enforces from the headers of the usage preset, per minute, each family on its own unit', () => {
    expect(parseLimitSettings(undefined, 'anthropic')).toEqual({
      learn: 'enforce',
      headers: 'anthropic',
      per: 'minute',
      units: DEFAULT_FAMILY_UNITS,
    });
    expect(parseLimitSettings({}, undefined).headers).toBe('none');
  });

  it('takes the format, window, mode and units given', () => {
    expect(
      parseLimitSettings(
        { learn: 'off', headers: 'ietf', per: 'second', units: { requests: 'requests', tokens: 'cost' } },
        'openai',
      ),
    ).toEqual({
      learn: 'off',
      headers: 'ietf',
      per: 'second',
      units: { ...DEFAULT_FAMILY_UNITS, tokens: 'cost' },
    });
  });

  it.each([
    [{ learn: 'always' }, "limits.learn: must be one of 'enforce', 'shadow', 'off'; got \"always\""],
    [{ headers: 'github' }, "limits.headers: must be one of 'openai', 'anthropic', 'ietf', 'none'; got \"github\""],
    [{ per: 'day' }, "limits.per: must be one of 'second', 'minute', 'hour'; got \"day\""],
    [
      { units: { pennies: 'cost' } },
      'limits.units.pennies: unknown key; allowed keys are the families of limit headers',
    ],
    [{ units: { tokens: 'a b' } }, 'limits.units.tokens: must be 1 to 256 of the characters'],
    [{ window: 60 }, 'limits.window: unknown key; allowed keys are learn, headers, per, units'],
    ['openai', 'limits: must be an object with optional keys learn, headers, per, units; got "openai"'],
  ])('refuses %j, naming the field and what it allows', (input, message) => {
    expect(() => parseLimitSettings(input, undefined)).toThrow(message);
  });
});
