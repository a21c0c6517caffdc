import { serviceConfigFromEnv } from '../../../lib/configFromEnv';
import { resolveQuotaSettings } from '../../../lib/deploy/quotaSettings';
import { ConfigError } from '../../../lib/errors';
import { service } from '../../helpers/serviceView';
import { thrown } from '../../helpers/thrown';

const anthropic = {
  quotas: [
    { limit: 50, per: 'minute' },
    { limit: 40_000, per: 'minute', unit: 'input_tokens' },
    { limit: 8_000, per: 'minute', unit: 'output_tokens' },
  ],
  maxInFlight: 8,
  usagePreset: 'anthropic',
  units: { output_tokens: { default: 1024 } },
};

describe('named units, usage and maxInFlight in serverless.yml', () => {
  it('carries them to both functions, which read them back as the service was configured', () => {
    const resolved = resolveQuotaSettings(service({ settings: anthropic }));
    expect(resolved.provider).toMatchObject({
      MAX_IN_FLIGHT: '8',
      USAGE_PRESET: 'anthropic',
      UNITS: JSON.stringify(anthropic.units),
    });
    const read = serviceConfigFromEnv({ ...resolved.provider, ...resolved.worker } as Record<string, string>);
    expect(read.maxInFlight).toBe(8);
    expect(read.units).toEqual(resolved.lanes[0]!.config.units);
    expect(read.units.output_tokens).toEqual({ default: 1024, usage: { pointer: '/usage/output_tokens' } });
  });

  it('refuses a wrong value at packaging, naming the setting as written in serverless.yml', () => {
    const error = thrown(ConfigError, () =>
      resolveQuotaSettings(service({ settings: { ...anthropic, units: { tokens: { default: 5 } } } })),
    );
    expect(error.field).toBe('custom.quotaOrchestrator.units.tokens');
    expect(
      thrown(ConfigError, () => resolveQuotaSettings(service({ settings: { ...anthropic, maxInFlight: 0 } }))).field,
    ).toBe('custom.quotaOrchestrator.maxInFlight');
  });

  it('names the variable when the environment holds a wrong value', () => {
    const env = { QUOTAS: JSON.stringify(anthropic.quotas), UNITS: '{"output_tokens": {"default": -1}}' };
    expect(thrown(ConfigError, () => serviceConfigFromEnv(env)).field).toBe('UNITS.output_tokens.default');
    expect(thrown(ConfigError, () => serviceConfigFromEnv({ QUOTAS: env.QUOTAS, MAX_IN_FLIGHT: 'many' })).field).toBe(
      'MAX_IN_FLIGHT',
    );
    expect(thrown(ConfigError, () => serviceConfigFromEnv({ QUOTAS: env.QUOTAS, USAGE_PRESET: 'gemini' })).field).toBe(
      'USAGE_PRESET',
    );
  });
});
