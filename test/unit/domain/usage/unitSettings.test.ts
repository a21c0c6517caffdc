import { parseServiceConfig } from '../../../../lib/config';
import { ConfigError } from '../../../../lib/errors';
import { COST_UNIT, parseTiers, unitNameProblem } from '../../../../lib/domain/quota/tiers';
import { PACKED_ATTRIBUTES } from '../../../../lib/adapters/sqs/fitAttributes';
import { ATTRIBUTES } from '../../../../lib/ports/QueueReceiver';
import { countedUsage, parseUnitSettings, usageSourcesOf } from '../../../../lib/domain/usage/unitSettings';

const anthropicQuotas = [
  { limit: 50, per: 'minute' },
  { limit: 40_000, per: 'minute', unit: 'input_tokens' },
  { limit: 8_000, per: 'minute', unit: 'output_tokens' },
];

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('named units in the configuration', () => {
  it('gives every unit the tiers count an entry: the preset sources, and defaults where given', () => {
    const config = parseServiceConfig({
      quotas: anthropicQuotas,
      usagePreset: 'anthropic',
      units: { output_tokens: { default: 1024 } },
    });
    expect(config.units).toEqual({
      input_tokens: { usage: { sum: ['/usage/input_tokens', '/usage/cache_creation_input_tokens'] } },
      output_tokens: { default: 1024, usage: { pointer: '/usage/output_tokens' } },
    });
    expect(config.usagePreset).toBe('anthropic');
  });

  it("keeps the cost unit as it was: default 1, usage from the 'x-actual-cost' header", () => {
    const config = parseServiceConfig({ quotas: [{ limit: 100, per: 'minute', unit: 'cost' }] });
    expect(config.units).toEqual({ cost: { default: 1, usage: { header: 'x-actual-cost' } } });
  });

  it("lets a unit's own source win over the preset's", () => {
    const units = parseUnitSettings(
      { tokens: { usage: { header: 'X-Tokens' } } },
      'openai',
      parseTiers([{ limit: 90_000, per: 'minute', unit: 'tokens' }]),
    );
    expect(usageSourcesOf(units)).toEqual({ tokens: { header: 'x-tokens' } });
  });

  it("counts the estimate of the openai preset's units, the usage of the anthropic preset's, and lets a unit's own setting win", () => {
    const openaiQuotas = parseTiers([
      { limit: 90_000, per: 'minute', unit: 'tokens' },
      { limit: 40_000, per: 'minute', unit: 'input_tokens' },
      { limit: 8_000, per: 'minute', unit: 'output_tokens' },
      { limit: 10, per: 'second', unit: 'images' },
    ]);
    const openai = parseUnitSettings(undefined, 'openai', openaiQuotas);
    expect([openai.tokens?.counts, openai.input_tokens?.counts, openai.output_tokens?.counts]).toEqual([
      'estimate',
      'estimate',
      'estimate',
    ]);
    expect(openai.images).toEqual({});
    expect(parseUnitSettings(undefined, 'anthropic', openaiQuotas).tokens?.counts).toBeUndefined();
    const own = parseUnitSettings(
      { tokens: { counts: 'usage' }, images: { counts: 'estimate' } },
      'openai',
      openaiQuotas,
    );
    expect([own.tokens?.counts, own.images?.counts]).toEqual(['usage', 'estimate']);
  });

  it('counts, of a unit whose provider counts the estimate, never less than the estimate, and more when more was used', () => {
    const units = parseUnitSettings(
      { input_tokens: { counts: 'estimate' } },
      undefined,
      parseTiers(anthropicQuotas.slice(1)),
    );
    const reserved = { input_tokens: 800, output_tokens: 1024 };
    expect(countedUsage(units, reserved, { input_tokens: 700, output_tokens: 300 })).toEqual({
      input_tokens: 800,
      output_tokens: 300,
    });
    expect(countedUsage(units, reserved, { input_tokens: 900 })).toEqual({ input_tokens: 900 });
  });

  it('leaves a unit the preset does not know without a source: its estimate stands', () => {
    const units = parseUnitSettings(undefined, 'openai', parseTiers([{ limit: 10, per: 'second', unit: 'images' }]));
    expect(units).toEqual({ images: {} });
    expect(usageSourcesOf(units)).toEqual({});
  });

  it.each([
    [
      { units: { tokens: {} } },
      'units.tokens',
      "no quota tier counts this unit; the tiers count 'input_tokens', 'output_tokens'",
    ],
    [
      { units: { input_tokens: { default: -1 } } },
      'units.input_tokens.default',
      'must be an integer from 0 to 1000000000000; got -1',
    ],
    [
      { units: { input_tokens: { default: 1.5 } } },
      'units.input_tokens.default',
      'must be an integer from 0 to 1000000000000',
    ],
    [
      { units: { input_tokens: { estimate: 5 } } },
      'units.input_tokens.estimate',
      'unknown key; allowed keys are default, usage, counts',
    ],
    [
      { units: { input_tokens: { counts: 'tokens' } } },
      'units.input_tokens.counts',
      `must be one of 'usage', 'estimate' (what the provider counts of the unit); got "tokens"`,
    ],
    [{ units: { output_tokens: { counts: true } } }, 'units.output_tokens.counts', 'got true'],
    [
      { units: { input_tokens: { usage: { pointer: 'usage' } } } },
      'units.input_tokens.usage.pointer',
      "must be '' or start with '/'",
    ],
    [{ units: [] }, 'units', 'must be an object keyed by unit name'],
    [{ usagePreset: 'gemini' }, 'usagePreset', `must be one of 'anthropic', 'openai'; got "gemini"`],
    [{ maxInFlight: 0 }, 'maxInFlight', 'must be an integer from 1 to 1000; got 0'],
    [{ maxInFlight: 1001 }, 'maxInFlight', 'must be an integer from 1 to 1000'],
    [{ maxInFlight: '5' }, 'maxInFlight', 'must be an integer from 1 to 1000'],
  ])('refuses %j naming the field and the allowed values', (extra, field, problem) => {
    const error = configError(() => parseServiceConfig({ quotas: anthropicQuotas, ...extra }));
    expect(error.field).toBe(field);
    expect(error.problem).toContain(problem);
  });

  it.each([
    ['AWS.tokens', "must not start with 'AWS.' or 'Amazon.'"],
    ['amazon.x', "must not start with 'AWS.' or 'Amazon.'"],
    ['.tokens', 'must not start or end with a period'],
    ['to..kens', 'must not start or end with a period, nor hold two in a row'],
    ['output tokens', 'must be 1 to 256 of the characters'],
    ['x'.repeat(257), 'must be 1 to 256 of the characters'],
    ['', 'must be 1 to 256 of the characters'],
    ['idempotencyKey', 'is a message attribute of the service itself'],
    ['attempt', 'is a message attribute of the service itself'],
    ['constructor', 'is a member of every JavaScript object'],
    ['toString', 'is a member of every JavaScript object'],
    ['__proto__', 'is a member of every JavaScript object'],
    ['hasOwnProperty', 'is a member of every JavaScript object'],
  ])('refuses the unit name %j, which SQS or the service would not take as an attribute name', (unit, problem) => {
    const error = configError(() => parseServiceConfig({ quotas: [{ limit: 10, per: 'second', unit }] }));
    expect(error.field).toBe('quotas[0].unit');
    expect(error.problem).toContain(problem);
  });

  it("keeps every attribute the service sets or reads off the unit names, but 'cost', the unit of the contract", () => {
    const own = [...Object.values(ATTRIBUTES), PACKED_ATTRIBUTES].filter((name) => name !== COST_UNIT);
    expect(own.filter((name) => unitNameProblem(name) === undefined)).toEqual([]);
    expect(unitNameProblem(COST_UNIT)).toBeUndefined();
  });

  it('takes any unit name SQS takes, and a cap on calls in flight', () => {
    const config = parseServiceConfig({
      quotas: [{ limit: 10, per: 'second', unit: 'gpu-seconds.v2_x' }],
      maxInFlight: 1000,
    });
    expect(config.quotas[0]?.unit).toBe('gpu-seconds.v2_x');
    expect(config.maxInFlight).toBe(1000);
    expect(parseServiceConfig({ quotas: anthropicQuotas }).maxInFlight).toBeUndefined();
  });
});
