import { parseServiceConfig } from '../../../lib/config';
import { workerSettingsFromEnv } from '../../../lib/configFromEnv';
import { resolveQuotaSettings } from '../../../lib/deploy/quotaSettings';
import { ConfigError } from '../../../lib/errors';
import { SCHEDULE_EXPRESSION } from '../../../lib/schedule';
import { quotas, service } from '../../helpers/serviceView';
import { thrown } from '../../helpers/thrown';

describe('resolveQuotaSettings', () => {
  describe('on valid settings', () => {
    it('carries each section as written, as JSON, and derives workerTimeoutMs from the worker timeout', () => {
      const resolved = resolveQuotaSettings(
        service({ settings: { lane: 'sms', timeZone: 'Europe/Paris', circuit: { failureThreshold: 3 } } }),
      );
      expect(resolved.provider).toEqual({
        LANE: 'sms',
        TIME_ZONE: 'Europe/Paris',
        QUOTAS: JSON.stringify(quotas),
        CIRCUIT: '{"failureThreshold":3}',
        ORCHESTRATOR: '{"workerTimeoutMs":30000}',
      });
      expect(resolved.lanes[0]!.config.orchestrator.workerTimeoutMs).toBe(30_000);
      expect(resolved.lanes[0]!.config.circuit.failureThreshold).toBe(3);
    });

    it('gives the worker its API settings', () => {
      const resolved = resolveQuotaSettings(service({ settings: { apiTimeoutMs: 5000 } }));
      expect(resolved.worker).toEqual({
        API_URL: 'https://api.example.com/jobs',
        HEALTH_URL: 'https://api.example.com/health',
        API_TIMEOUT_MS: '5000',
      });
    });

    it("gives the worker an Anthropic lane's request settings as written, which its cold start reads back", () => {
      const resolved = resolveQuotaSettings(
        service({
          settings: {
            apiKeyHeader: 'x-api-key',
            requestHeaders: { 'anthropic-version': '2023-06-01' },
            healthCheckSendsKey: false,
          },
        }),
      );
      expect(resolved.worker).toMatchObject({
        API_KEY_HEADER: 'x-api-key',
        REQUEST_HEADERS: '{"anthropic-version":"2023-06-01"}',
        HEALTH_CHECK_SENDS_KEY: 'false',
      });
      expect(resolved.worker.API_KEY_SCHEME).toBeUndefined();
      const config = parseServiceConfig({ quotas });
      expect(workerSettingsFromEnv(resolved.worker, config)).toMatchObject({
        apiKeyHeader: 'x-api-key',
        apiKeyScheme: undefined,
        requestHeaders: { 'anthropic-version': '2023-06-01' },
        healthCheckSendsKey: false,
      });
    });

    it('refuses a request header the worker cannot send, naming it under custom.quotaOrchestrator', () => {
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings(service({ settings: { requestHeaders: { 'x-version': 'a\nb' } } })),
      );
      expect(error.field).toBe('custom.quotaOrchestrator.requestHeaders.x-version');
    });

    it('names the SSM parameter of the API key for the worker, never the key itself', () => {
      const resolved = resolveQuotaSettings(
        service({ settings: { apiKeyParameter: '/quota-orchestrator/prod/api-key' } }),
      );
      expect(resolved.worker.API_KEY_PARAMETER).toBe('/quota-orchestrator/prod/api-key');
      expect(resolved.provider.API_KEY_PARAMETER).toBeUndefined();
    });

    it('gives the worker its result destination as written, and the statement that lets it send there', () => {
      const results = { type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' };
      const resolved = resolveQuotaSettings(service({ settings: { results } }));
      expect(JSON.parse(resolved.worker.RESULT_DESTINATION ?? '')).toEqual(results);
      expect(resolved.provider.RESULT_DESTINATION).toBeUndefined();
      expect(resolved.workerStatements).toEqual([
        {
          Sid: 'ResultDestination',
          Effect: 'Allow',
          Action: ['sqs:GetQueueUrl', 'sqs:SendMessage'],
          Resource: results.queueArn,
        },
      ]);
    });

    it("refuses a destination ARN outside the stack's region, naming the field", () => {
      const view = service({
        settings: { results: { type: 'sqs', queueArn: 'arn:aws:sqs:eu-west-1:123456789012:results' } },
      });
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings({ ...view, provider: { ...view.provider, region: 'us-east-1' } }),
      );
      expect(error.message).toBe(
        "custom.quotaOrchestrator.results.queueArn: must be in the stack's region (provider.region us-east-1), where the worker sends; got eu-west-1",
      );
      const bus = service({
        settings: { results: { type: 'eventbridge', busName: 'arn:aws:events:eu-west-1:123456789012:event-bus/b' } },
      });
      expect(
        thrown(ConfigError, () => resolveQuotaSettings({ ...bus, provider: { ...bus.provider, region: 'us-east-1' } }))
          .field,
      ).toBe('custom.quotaOrchestrator.results.busName');
    });

    it("grants events:PutEvents on a bus named in the stack's account and region, or on the ARN given", () => {
      const named = resolveQuotaSettings(service({ settings: { results: { type: 'eventbridge', busName: 'jobs' } } }));
      expect(named.workerStatements).toEqual([
        {
          Sid: 'ResultDestination',
          Effect: 'Allow',
          Action: 'events:PutEvents',
          Resource: {
            'Fn::Join': [
              '',
              [
                'arn:',
                { Ref: 'AWS::Partition' },
                ':events:',
                { Ref: 'AWS::Region' },
                ':',
                { Ref: 'AWS::AccountId' },
                ':event-bus/',
                'jobs',
              ],
            ],
          },
        },
      ]);
      const arn = 'arn:aws:events:eu-west-1:123456789012:event-bus/jobs';
      expect(
        resolveQuotaSettings(service({ settings: { results: { type: 'eventbridge', busName: arn } } }))
          .workerStatements[0]?.Resource,
      ).toBe(arn);
    });

    it('grants nothing more and sets no variable without a result destination', () => {
      const resolved = resolveQuotaSettings(service());
      expect(resolved.workerStatements).toEqual([]);
      expect(resolved.worker).not.toHaveProperty('RESULT_DESTINATION');
    });

    it('sets no variable for a section left out, so the functions take its defaults', () => {
      const resolved = resolveQuotaSettings(service());
      expect(Object.keys(resolved.provider).sort()).toEqual(['ORCHESTRATOR', 'QUOTAS']);
      expect(resolved.lanes[0]!.config.lane).toBe('default');
    });

    it('accepts a workerTimeoutMs equal to the worker timeout', () => {
      const resolved = resolveQuotaSettings(service({ settings: { orchestrator: { workerTimeoutMs: 30000 } } }));
      expect(resolved.provider.ORCHESTRATOR).toBe('{"workerTimeoutMs":30000}');
    });

    it("falls back to the provider's timeout for a function without one", () => {
      const view = service({ orchestratorTimeout: undefined });
      const resolved = resolveQuotaSettings({ ...view, provider: { ...view.provider, timeout: 120 } });
      expect(resolved.lanes[0]!.config.quotas).toHaveLength(2);
    });

    it('accepts an environment that already holds the same values, so a second run is harmless', () => {
      const first = resolveQuotaSettings(service());
      const view = service();
      expect(() =>
        resolveQuotaSettings({
          ...view,
          provider: { environment: { ...view.provider.environment, ...first.provider } },
        }),
      ).not.toThrow();
    });

    it("adds the orchestrator's schedule, once however often the plugin runs", () => {
      const view = service();
      expect(resolveQuotaSettings(view).orchestratorEvents).toEqual([{ schedule: SCHEDULE_EXPRESSION }]);
      const orchestrator = { timeout: 300, events: [{ schedule: SCHEDULE_EXPRESSION }] };
      expect(
        resolveQuotaSettings({ ...view, functions: { ...view.functions, orchestrator } }).orchestratorEvents,
      ).toEqual([]);
    });
  });

  describe('on invalid settings', () => {
    it.each<[string, Parameters<typeof service>[0], string, string]>([
      [
        'a zero limit',
        { settings: { quotas: [{ limit: 0, per: 'second' }] } },
        'custom.quotaOrchestrator.quotas[0].limit',
        'must be an integer from 1 to',
      ],
      [
        'an unknown period',
        { settings: { quotas: [quotas[0], { limit: 5, per: 'fortnight' }] } },
        'custom.quotaOrchestrator.quotas[1].per',
        'must be one of second, minute',
      ],
      [
        'no quotas',
        { settings: { quotas: undefined } },
        'custom.quotaOrchestrator.quotas',
        'must be a non-empty JSON array',
      ],
      [
        'an unknown key',
        { settings: { quota: quotas } },
        'custom.quotaOrchestrator.quota',
        'unknown key; allowed keys are lane, timeZone, quotas',
      ],
      [
        'an unknown circuit key',
        { settings: { circuit: { threshold: 3 } } },
        'custom.quotaOrchestrator.circuit.threshold',
        'unknown key',
      ],
      ['a bad lane', { settings: { lane: 'two words' } }, 'custom.quotaOrchestrator.lane', 'must be 1 to 64 letters'],
      [
        'a missing apiUrl',
        { settings: { apiUrl: undefined } },
        'custom.quotaOrchestrator.apiUrl',
        'must be an http(s) URL',
      ],
      [
        'a non-http healthUrl',
        { settings: { healthUrl: 'ftp://api.example.com/health' } },
        'custom.quotaOrchestrator.healthUrl',
        'must use http or https',
      ],
      [
        'an API timeout as long as the worker timeout',
        { settings: { apiTimeoutMs: 30000 } },
        'custom.quotaOrchestrator.apiTimeoutMs',
        'must be a whole number of milliseconds from 1 to 29999',
      ],
      [
        'an API key parameter without a leading slash',
        { settings: { apiKeyParameter: 'api-key' } },
        'custom.quotaOrchestrator.apiKeyParameter',
        'must be an SSM parameter name',
      ],
      [
        'an API key given as a value',
        { settings: { apiKeyParameter: '/x/sk live 123' } },
        'custom.quotaOrchestrator.apiKeyParameter',
        'must be an SSM parameter name',
      ],
      [
        'an orchestrator timeout within one tick',
        { orchestratorTimeout: 60 },
        'functions.orchestrator.timeout',
        'must be a whole number of seconds from 61 to 900',
      ],
      [
        'a fractional worker timeout',
        { workerTimeout: 2.5 },
        'functions.worker.timeout',
        'must be a whole number of seconds from 1 to 900',
      ],
      [
        'a non-numeric redrive threshold',
        { maxReceiveCount: '10' },
        'custom.queues.maxReceiveCount',
        'must be an integer from 1 to 1000',
      ],
      [
        'a FIFO redrive threshold beyond SQS’s range',
        { fifoMaxReceiveCount: 1001 },
        'custom.queues.fifoMaxReceiveCount',
        'must be an integer from 1 to 1000',
      ],
      [
        'a result destination of an unknown type',
        { settings: { results: { type: 'sns' } } },
        'custom.quotaOrchestrator.results.type',
        'must be one of sqs, eventbridge',
      ],
      [
        'a result queue given by URL',
        { settings: { results: { type: 'sqs', queueArn: 'https://sqs.us-east-1.amazonaws.com/1/r' } } },
        'custom.quotaOrchestrator.results.queueArn',
        'must be the ARN of an SQS queue',
      ],
    ])('refuses %s, naming the field', (_case, overrides, field, problem) => {
      const error = thrown(ConfigError, () => resolveQuotaSettings(service(overrides)));
      expect(error.field).toBe(field);
      expect(error.message).toContain(`${field}: ${problem}`);
    });

    it('refuses an API timeout, given or default, not below the health-check timeout, naming both', () => {
      const given = thrown(ConfigError, () =>
        resolveQuotaSettings(service({ settings: { apiTimeoutMs: 5000, circuit: { healthCheckTimeoutSeconds: 5 } } })),
      );
      expect(given.field).toBe('custom.quotaOrchestrator.apiTimeoutMs');
      expect(given.message).toBe(
        'custom.quotaOrchestrator.apiTimeoutMs: must be below custom.quotaOrchestrator.circuit.healthCheckTimeoutSeconds (5000 ms), so a health probe still calling is never presumed lost and overlapped by the next; got 5000. Lower it or raise custom.quotaOrchestrator.circuit.healthCheckTimeoutSeconds',
      );
      const defaulted = thrown(ConfigError, () =>
        resolveQuotaSettings(service({ settings: { circuit: { healthCheckTimeoutSeconds: 10 } } })),
      );
      expect(defaulted.message).toContain('got 10000 (the default)');
      expect(() =>
        resolveQuotaSettings(service({ settings: { apiTimeoutMs: 4999, circuit: { healthCheckTimeoutSeconds: 5 } } })),
      ).not.toThrow();
    });

    it('refuses a workerTimeoutMs that differs from the worker timeout, naming both', () => {
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings(service({ settings: { orchestrator: { workerTimeoutMs: 20000 } } })),
      );
      expect(error.message).toBe(
        'custom.quotaOrchestrator.orchestrator.workerTimeoutMs: must equal functions.worker.timeout in milliseconds (30000); got 20000. Leave it out to derive it from the timeout, or change both',
      );
    });

    it('says where a derived workerTimeoutMs came from when it breaks a cross-field rule', () => {
      const error = thrown(ConfigError, () => resolveQuotaSettings(service({ workerTimeout: 300 })));
      expect(error.field).toBe('custom.quotaOrchestrator.orchestrator.visibilityTimeoutMs');
      expect(error.message).toContain('must exceed orchestrator.workerTimeoutMs (300000)');
      expect(error.message).toContain('(workerTimeoutMs is derived from functions.worker.timeout)');
    });

    it('refuses a visibility timeout that a worker event of the maximum age and its run could outlast, naming the fields', () => {
      const error = thrown(ConfigError, () => resolveQuotaSettings(service({ workerEventAge: 100 })));
      expect(error.message).toBe(
        'custom.quotaOrchestrator.orchestrator.visibilityTimeoutMs: must exceed functions.worker.maximumEventAge plus functions.worker.timeout (130000), or a message could be dispatched again while its first event may still start; got 120000',
      );
    });

    it('refuses a worker without maximumEventAge: Lambda would keep its events 6 hours', () => {
      const error = thrown(ConfigError, () => resolveQuotaSettings(service({ workerEventAge: undefined })));
      expect(error.field).toBe('functions.worker.maximumEventAge');
    });

    it('refuses retry.maxAttempts that SQS redrive would cut short, naming both settings', () => {
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings(service({ settings: { retry: { maxAttempts: 10 } } })),
      );
      expect(error.field).toBe('custom.quotaOrchestrator.retry.maxAttempts');
      expect(error.message).toContain('must be below custom.queues.maxReceiveCount (10)');
    });

    it('refuses a FIFO redrive threshold below 20 receives per attempt: a FIFO message is received again on every retry and hand-back', () => {
      const error = thrown(ConfigError, () => resolveQuotaSettings(service({ fifoMaxReceiveCount: 99 })));
      expect(error.field).toBe('custom.queues.fifoMaxReceiveCount');
      expect(error.message).toContain(
        'must be from 100 (20 receives per attempt of custom.quotaOrchestrator.retry.maxAttempts 5',
      );
      expect(() => resolveQuotaSettings(service({ fifoMaxReceiveCount: 100 }))).not.toThrow();
    });

    it('caps the least FIFO redrive threshold at SQS’s 1000', () => {
      const settings = { retry: { maxAttempts: 60 } };
      expect(() =>
        resolveQuotaSettings(service({ settings, maxReceiveCount: 61, fifoMaxReceiveCount: 1000 })),
      ).not.toThrow();
    });

    it('refuses a missing settings block', () => {
      const view = service();
      const error = thrown(ConfigError, () => resolveQuotaSettings({ ...view, custom: {} }));
      expect(error.field).toBe('custom.quotaOrchestrator');
    });

    it('refuses a missing worker function', () => {
      const view = service();
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings({ ...view, functions: { orchestrator: { timeout: 300 } } }),
      );
      expect(error.field).toBe('functions.worker');
    });

    it('refuses to overwrite a variable set by hand in serverless.yml', () => {
      const view = service();
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings({ ...view, provider: { environment: { QUOTAS: '[]' } } }),
      );
      expect(error.message).toBe(
        'provider.environment.QUOTAS: is set from custom.quotaOrchestrator; remove it from provider.environment',
      );
    });

    it('refuses a function-level variable that would override the settings', () => {
      const view = service({ settings: { retry: { maxAttempts: 3 } } });
      const functions = {
        ...view.functions,
        worker: { timeout: 30, maximumEventAge: 60, environment: { RETRY: '{}' } },
      };
      const error = thrown(ConfigError, () => resolveQuotaSettings({ ...view, functions }));
      expect(error.field).toBe('functions.worker.environment.RETRY');
    });

    it('refuses a schedule of its own for the orchestrator: the period each run aligns to is named in lib/schedule.ts', () => {
      const view = service();
      const orchestrator = { timeout: 300, events: [{ schedule: 'rate(5 minutes)' }] };
      const error = thrown(ConfigError, () =>
        resolveQuotaSettings({ ...view, functions: { ...view.functions, orchestrator } }),
      );
      expect(error.field).toBe('functions.orchestrator.events');
      expect(error.message).toContain(`the plugin adds ${SCHEDULE_EXPRESSION}`);
      expect(error.message).toContain('got ["rate(5 minutes)"]');
    });
  });
});

describe('resolveQuotaSettings › apiKeyCacheSeconds', () => {
  it('gives the worker API_KEY_CACHE_SECONDS when set, and nothing when left to its default', () => {
    expect(resolveQuotaSettings(service({ settings: { apiKeyCacheSeconds: 60 } })).worker.API_KEY_CACHE_SECONDS).toBe(
      '60',
    );
    expect(resolveQuotaSettings(service()).worker).not.toHaveProperty('API_KEY_CACHE_SECONDS');
  });

  it.each([0, 3601, 1.5, '300'])('refuses %p, naming the field and its range', (value) => {
    const error = thrown(ConfigError, () => resolveQuotaSettings(service({ settings: { apiKeyCacheSeconds: value } })));
    expect(error.message).toBe(
      `custom.quotaOrchestrator.apiKeyCacheSeconds: must be a whole number of seconds from 1 to 3600; got ${JSON.stringify(value)}`,
    );
  });
});

describe('resolveQuotaSettings › apiKeyReadTimeoutMs', () => {
  const keyed = { apiKeyParameter: '/quota-orchestrator/prod/api-key', apiTimeoutMs: 9_900 };

  it('gives the worker API_KEY_READ_TIMEOUT_MS when set, and nothing when left to its default', () => {
    const resolved = resolveQuotaSettings(service({ settings: { ...keyed, apiKeyReadTimeoutMs: 1_500 } }));
    expect(resolved.worker.API_KEY_READ_TIMEOUT_MS).toBe('1500');
    expect(resolveQuotaSettings(service({ settings: keyed })).worker).not.toHaveProperty('API_KEY_READ_TIMEOUT_MS');
  });

  it('refuses a key read that, with the API timeout, could outlive the health check, naming both', () => {
    const error = thrown(ConfigError, () =>
      resolveQuotaSettings(service({ settings: { ...keyed, apiKeyReadTimeoutMs: 6_000 } })),
    );
    expect(error.field).toBe('custom.quotaOrchestrator.apiKeyReadTimeoutMs');
    expect(error.message).toContain(
      'must be a whole number of milliseconds from 100 to 5099: with custom.quotaOrchestrator.apiTimeoutMs (9900 ms) it must stay below custom.quotaOrchestrator.circuit.healthCheckTimeoutSeconds (15000 ms)',
    );
  });
});

describe('resolveQuotaSettings › custom.alarms', () => {
  const alarms = { email: '', oldestMessageAgeSeconds: 86_400, circuitOpenMinutes: 15 };

  it('is checked when the plugin resolves the settings', () => {
    expect(() => resolveQuotaSettings(service({ alarms: { ...alarms, circuitOpenMinutes: 2000 } }))).toThrow(
      'custom.alarms.circuitOpenMinutes',
    );
  });
});
