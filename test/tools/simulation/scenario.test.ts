import { parseAllowed } from '../../../tools/simulation/allowedLimits';
import llmScenario from '../../../tools/simulation/scenarios/llm.json';
import { ConfigError } from '../../../lib/errors';
import { buildJobs, unitAttributes } from '../../../tools/simulation/jobs';
import { seededRandom } from '../../../tools/simulation/random';
import { parseScenario } from '../../../tools/simulation/scenario';

const LLM_QUOTAS = [
  { limit: 50, per: 'minute' },
  { limit: 30_000, per: 'minute', unit: 'input_tokens' },
  { limit: 8_000, per: 'minute', unit: 'output_tokens' },
];

/** A valid LLM scenario, with `extra` merged over its top level. */
const llm = (extra: Record<string, unknown> = {}) => ({
  quotas: LLM_QUOTAS,
  jobs: { count: 4, llm: {} },
  api: { llm: {} },
  ...extra,
});

describe('parseScenario', () => {
  describe('the service settings', () => {
    it('passes maxInFlight, units and usagePreset to the service configuration', () => {
      const { config } = parseScenario(
        llm({ maxInFlight: 4, usagePreset: 'openai', units: { output_tokens: { default: 512 } } }),
      );
      expect(config.maxInFlight).toBe(4);
      expect(config.usagePreset).toBe('openai');
      expect(config.units.output_tokens).toEqual({
        default: 512,
        usage: { pointer: '/usage/completion_tokens' },
        counts: 'estimate',
      });
      expect(config.units.input_tokens).toEqual({ usage: { pointer: '/usage/prompt_tokens' }, counts: 'estimate' });
    });

    it('refuses them out of range, naming the field', () => {
      expect(() => parseScenario(llm({ maxInFlight: 0 }))).toThrow(
        new ConfigError('maxInFlight', 'must be an integer from 1 to 1000; got 0'),
      );
      expect(() => parseScenario(llm({ usagePreset: 'gemini' }))).toThrow(
        /usagePreset: must be one of 'anthropic', 'openai'/,
      );
      expect(() => parseScenario(llm({ units: { tokens: {} } }))).toThrow(
        /units\.tokens: no quota tier counts this unit/,
      );
    });
  });

  describe('request', () => {
    it("is authorization: Bearer when left out, and a provider's own headers as given", () => {
      expect(parseScenario(llm()).request).toEqual({
        apiMethod: 'POST',
        requestHeaders: {},
        apiKeyHeader: 'authorization',
        apiKeyScheme: 'Bearer',
        healthCheckSendsKey: true,
      });
      expect(parseScenario(llm({ request: { apiKeyHeader: 'x-api-key', apiMethod: 'PUT' } })).request).toMatchObject({
        apiMethod: 'PUT',
        apiKeyHeader: 'x-api-key',
        apiKeyScheme: undefined,
      });
    });

    it('refuses an unknown key and a setting packaging would refuse, naming it under request', () => {
      expect(() => parseScenario(llm({ request: { apiKey: 'k' } }))).toThrow(
        /^request\.apiKey: unknown key; allowed keys are apiMethod, requestHeaders/,
      );
      expect(() => parseScenario(llm({ request: { requestHeaders: { host: 'x' } } }))).toThrow(
        /^request\.requestHeaders\.host: must not be host/,
      );
    });
  });

  it("reads the LLM example scenario, with Anthropic's headers", () => {
    const scenario = parseScenario(llmScenario);
    expect(scenario.request).toMatchObject({
      apiKeyHeader: 'x-api-key',
      apiKeyScheme: undefined,
      requestHeaders: { 'anthropic-version': '2023-06-01' },
    });
    expect(scenario.config).toMatchObject({ maxInFlight: 10, usagePreset: 'anthropic' });
    expect(scenario.jobs.llm).toEqual({ promptTokensMin: 500, promptTokensMax: 2000, maxTokens: 1024 });
    expect(scenario.api).toMatchObject({
      concurrency: 10,
      llm: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 4 },
    });
  });

  describe('jobs.llm', () => {
    it('fills in the defaults: prompts of 500 to 2,000 tokens, max_tokens 1,024', () => {
      expect(parseScenario(llm()).jobs.llm).toEqual({ promptTokensMin: 500, promptTokensMax: 2000, maxTokens: 1024 });
      expect(parseScenario({ quotas: [{ limit: 5, per: 'second' }] }).jobs.llm).toBeUndefined();
    });

    it('refuses a value out of its range, an unknown key, and a prompt range upside down', () => {
      expect(() => parseScenario(llm({ jobs: { llm: { maxTokens: 0 } } }))).toThrow(
        new ConfigError('jobs.llm.maxTokens', 'must be an integer from 1 to 1000000; got 0'),
      );
      expect(() => parseScenario(llm({ jobs: { llm: { temperature: 1 } } }))).toThrow(
        /jobs\.llm\.temperature: unknown key; allowed keys are promptTokensMin, promptTokensMax, maxTokens/,
      );
      expect(() => parseScenario(llm({ jobs: { llm: { promptTokensMin: 900, promptTokensMax: 800 } } }))).toThrow(
        new ConfigError('jobs.llm.promptTokensMin', 'must not exceed jobs.llm.promptTokensMax (800); got 900'),
      );
    });

    it('refuses a cost range beside it: LLM jobs carry token estimates', () => {
      expect(() => parseScenario(llm({ jobs: { costMax: 3, llm: {} } }))).toThrow(
        /jobs\.costMax: LLM jobs \(jobs\.llm\) carry token estimates, not a cost/,
      );
    });

    it('gives each job a prompt in the range and max_tokens, in its body and as its estimates', () => {
      const scenario = parseScenario(
        llm({ jobs: { count: 50, llm: { promptTokensMin: 100, promptTokensMax: 200, maxTokens: 64 } } }),
      );
      const jobs = buildJobs(scenario, seededRandom(3));
      for (const job of jobs) {
        const body = JSON.parse(job.body) as { prompt_tokens: number; max_tokens: number };
        expect(body.prompt_tokens).toBeGreaterThanOrEqual(100);
        expect(body.prompt_tokens).toBeLessThanOrEqual(200);
        expect(body.max_tokens).toBe(64);
        expect(job.costs).toEqual({
          input_tokens: body.prompt_tokens,
          output_tokens: 64,
          tokens: body.prompt_tokens + 64,
        });
      }
      const [first] = jobs;
      expect(first && unitAttributes(first, ['input_tokens', 'output_tokens'])).toEqual({
        input_tokens: String(first?.costs.input_tokens),
        output_tokens: '64',
      });
    });
  });

  describe('api', () => {
    it('reads an LLM model and a concurrency limit, with the LLM defaults', () => {
      expect(parseScenario(llm({ api: { concurrency: 5, llm: { msPerOutputToken: 4 } } })).api).toEqual({
        latencyMs: 50,
        outages: [],
        concurrency: 5,
        llm: { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 4 },
      });
      expect(parseScenario({ quotas: [{ limit: 5, per: 'second' }] }).api).toEqual({ latencyMs: 50, outages: [] });
    });

    it('refuses a value out of its range, an unknown key, and an output share range upside down', () => {
      expect(() => parseScenario(llm({ api: { concurrency: 0 } }))).toThrow(
        new ConfigError('api.concurrency', 'must be an integer from 1 to 100000; got 0'),
      );
      expect(() => parseScenario(llm({ api: { llm: { outputShareMax: 1.5 } } }))).toThrow(
        new ConfigError('api.llm.outputShareMax', 'must be a number from 0 to 1; got 1.5'),
      );
      expect(() => parseScenario(llm({ api: { llm: { outputShareMin: 0.8, outputShareMax: 0.5 } } }))).toThrow(
        new ConfigError('api.llm.outputShareMin', 'must not exceed api.llm.outputShareMax (0.5); got 0.8'),
      );
      expect(() => parseScenario(llm({ api: { rpm: 5 } }))).toThrow(
        /api\.rpm: unknown key; allowed keys are latencyMs, outages, concurrency, llm/,
      );
    });

    it('refuses an LLM API without LLM jobs, whose bodies it reads', () => {
      expect(() => parseScenario({ quotas: [{ limit: 5, per: 'second' }], api: { llm: {} } })).toThrow(
        /api\.llm: needs jobs\.llm/,
      );
    });
  });
});

describe('parseAllowed', () => {
  it('reads the changes of what the API allows, and the headers it announces them in', () => {
    expect(
      parseAllowed(
        {
          changes: [
            { atSeconds: 0, limits: [12] },
            { atSeconds: 25, limits: [8] },
          ],
          headers: 'ietf',
        },
        'api.allowed',
      ),
    ).toEqual({
      changes: [
        { atSeconds: 0, limits: [12] },
        { atSeconds: 25, limits: [8] },
      ],
      headers: 'ietf',
    });
    expect(parseAllowed({ changes: [{ atSeconds: 5, limits: [3] }] }, 'api.allowed').headers).toBe('none');
  });

  it.each([
    [{ changes: [] }, 'api.allowed.changes: must be a non-empty list'],
    [
      {
        changes: [
          { atSeconds: 2, limits: [1] },
          { atSeconds: 2, limits: [2] },
        ],
      },
      'api.allowed.changes[1].atSeconds: must be a number of seconds from 0, each later',
    ],
    [
      { changes: [{ atSeconds: 0, limits: [0] }] },
      'api.allowed.changes[0].limits: must be a list of whole numbers from 1',
    ],
    [
      { changes: [{ atSeconds: 0, limits: [1] }], headers: 'github' },
      'api.allowed.headers: must be one of ietf, openai, none',
    ],
    [
      { changes: [{ atSeconds: 0, limits: [1] }], window: 1 },
      'api.allowed.window: unknown key; allowed keys are changes, headers',
    ],
  ])('refuses %j, naming the field', (input, message) => {
    expect(() => parseAllowed(input, 'api.allowed')).toThrow(message);
  });

  it("is read from a scenario, with the lane's limits settings", () => {
    const scenario = parseScenario({
      quotas: [{ limit: 20, per: 'second' }],
      limits: { headers: 'ietf', learn: 'enforce' },
      api: { allowed: { changes: [{ atSeconds: 0, limits: [12] }], headers: 'ietf' } },
    });

    expect(scenario.api.allowed).toEqual({ changes: [{ atSeconds: 0, limits: [12] }], headers: 'ietf' });
    expect(scenario.config.limits).toMatchObject({ headers: 'ietf', learn: 'enforce' });
  });
});
