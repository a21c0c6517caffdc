import { readFileSync } from 'node:fs';
import path from 'node:path';
import { yamlParse } from 'yaml-cfn';
import { parseServiceConfig } from '../../../lib/config';
import { CONFIG_ENV } from '../../../lib/configFromEnv';
import { USAGE_PRESET_NAMES, USAGE_PRESETS } from '../../../lib/domain/usage/usageSources';
import { DEPLOY_SETTING_KEYS } from '../../../lib/workerSettings';
import { resolveQuotaSettings } from '../../../lib/deploy/quotaSettings';
import { queueNames, service } from '../../helpers/serviceView';
import {
  buildConfigReference,
  CONFIG_REFERENCE_COMMAND,
  CONFIG_REFERENCE_FILE,
} from '../../../tools/docs/configReference';

jest.setTimeout(30_000);

const committed = readFileSync(path.resolve(__dirname, '../../..', CONFIG_REFERENCE_FILE), 'utf8');
const generated = buildConfigReference();

/** The first key of each row of the markdown tables, by the heading above it. */
function rowsBySection(markdown: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let heading = '';
  for (const line of markdown.split('\n')) {
    const title = /^#+\s+(.*)$/.exec(line);
    if (title !== null) heading = title[1]!.replace(/`/g, '');
    const row = /^\| `([^`]+)` \|/.exec(line);
    if (row !== null) sections.set(heading, [...(sections.get(heading) ?? []), row[1]!]);
  }
  return sections;
}

describe('buildConfigReference', () => {
  it(`matches the committed ${CONFIG_REFERENCE_FILE} (run \`${CONFIG_REFERENCE_COMMAND}\` when it does not)`, () => {
    if (committed !== generated) {
      throw new Error(
        `${CONFIG_REFERENCE_FILE} is out of date with the configuration parsers or their TSDoc: run \`${CONFIG_REFERENCE_COMMAND}\` and commit the result`,
      );
    }
  });

  it('lists every key of every section the parser fills in, with its default', () => {
    const rows = rowsBySection(generated);
    const defaults = parseServiceConfig({ quotas: [{ limit: 1, per: 'second' }] }) as unknown as Record<
      string,
      unknown
    >;
    expect(rows.get('custom.quotaOrchestrator')).toEqual(expect.arrayContaining(Object.keys(defaults)));
    for (const [section, value] of Object.entries(defaults)) {
      // `units` is keyed by unit name: its rows are one unit's keys (see below).
      if (typeof value !== 'object' || value === null || Array.isArray(value) || section === 'units') continue;
      expect([section, rows.get(section)]).toEqual([section, Object.keys(value)]);
      for (const [key, setting] of Object.entries(value)) {
        // A map's default (`limits.units`) is shown as its JSON.
        const shown = typeof setting === 'object' && setting !== null ? JSON.stringify(setting) : String(setting);
        expect(generated).toContain(`| \`${key}\` | \`${shown}\` |`);
      }
    }
    expect(rows.get('quotas')).toEqual(['limit', 'per', 'unit']);
  });

  it('lists the keys only serverless.yml has, required ones marked', () => {
    const rows = rowsBySection(generated);
    expect(rows.get('Keys only serverless.yml has')).toEqual(
      expect.arrayContaining(['apiUrl', 'healthUrl', 'apiTimeoutMs', 'apiKeyParameter']),
    );
    expect(generated).toContain('| `apiUrl` | required | must be an http(s) URL');
  });

  it('states each range as the parser checks it', () => {
    expect(generated).toContain('| `burstFraction` | `0` | must be a number from 0 to 1 |');
    expect(generated).toContain("| `stateOutage` | `pace-in-memory` | must be one of 'pace-in-memory', 'pause' |");
    expect(generated).toContain('| `per` | required | must be one of second, minute, hour, day, month |');
  });

  it('lists the optional top-level keys without a default, with their ranges and environment variables', () => {
    expect(generated).toContain('| `maxInFlight` | — | must be an integer from 1 to 1000 |');
    expect(generated).toContain("| `usagePreset` | — | must be one of 'anthropic', 'openai' |");
    for (const [key, name] of Object.entries(CONFIG_ENV)) expect(generated).toContain(`- \`${name}\`: \`${key}\``);
  });

  it("lists one unit's keys, the defaults the parser gives each kind of unit, and the usage source shapes", () => {
    const rows = rowsBySection(generated);
    expect(rows.get('units')).toEqual(['default', 'usage', 'counts']);
    expect(generated).toContain(
      '| `default` | `cost`: `1`; other units: none | must be an integer from 0 to 1000000000000 |',
    );
    expect(generated).toMatch(
      /\| `usage` \| `cost`: `\{"header":"x-actual-cost"\}`; `input_tokens`, `output_tokens`, `tokens`: from `usagePreset`; other units: none \|/,
    );
    expect(generated).toContain(
      "| `counts` | `input_tokens`, `output_tokens`, `tokens`: from `usagePreset`; other units: `usage` | must be one of 'usage', 'estimate'",
    );
    expect(rows.get('Usage sources')).toEqual(['header', 'pointer', 'sum']);
    expect(generated).toContain('| `sum` | must be a list of 1 to 10 JSON Pointers |');
  });

  it("shows each preset's source of each unit, as the code has it", () => {
    for (const preset of USAGE_PRESET_NAMES) {
      for (const [unit, source] of Object.entries(USAGE_PRESETS[preset])) {
        const row = generated.split('\n').find((line) => line.startsWith(`| \`${unit}\` | \`{`));
        expect([preset, unit, row]).toEqual([preset, unit, expect.stringContaining(`\`${JSON.stringify(source)}\``)]);
      }
    }
  });

  it('shows an Anthropic and an OpenAI example whose settings the parser accepts, with the attributes each message carries', () => {
    const examples = generated.slice(
      generated.indexOf('## Examples: LLM providers'),
      generated.indexOf('## Several lanes'),
    );
    const yamls = [...examples.matchAll(/```yaml\n([\s\S]*?)```/g)].map(
      (m) => (yamlParse(m[1]!) as { custom: { quotaOrchestrator: Record<string, unknown> } }).custom.quotaOrchestrator,
    );
    const deployOnly: readonly string[] = DEPLOY_SETTING_KEYS;
    const configs = yamls.map((settings) =>
      parseServiceConfig(Object.fromEntries(Object.entries(settings).filter(([key]) => !deployOnly.includes(key)))),
    );
    expect(
      configs.map((config) => ({
        preset: config.usagePreset,
        units: config.quotas.map((tier) => tier.unit),
        capped: config.maxInFlight !== undefined,
      })),
    ).toEqual([
      { preset: 'anthropic', units: ['requests', 'input_tokens', 'output_tokens'], capped: true },
      { preset: 'openai', units: ['requests', 'tokens'], capped: true },
    ]);
    expect(examples).toContain('| `input_tokens` | `812` |');
    expect(examples).toContain('| `output_tokens` | `1024` |');
    expect(examples).toContain('| `tokens` | `1836` |');
    expect(examples).toContain('713 `output_tokens` go back');
    // Anthropic's key goes alone in x-api-key, with a version YAML keeps as text.
    expect(yamls[0]).toMatchObject({
      apiKeyHeader: 'x-api-key',
      requestHeaders: { 'anthropic-version': '2023-06-01' },
    });
    // OpenAI's limiter keeps counting the estimate: what the answer did not use stays counted.
    expect(examples).toContain('nothing goes back to the quota:\nthe provider counts the estimate of `tokens`');
  });

  it('shows a deployment of four lanes, two sharing a pool, that packaging accepts as written, with the queues each lane gets', () => {
    const section = generated.slice(
      generated.indexOf('## Several lanes'),
      generated.indexOf('## What packaging checks'),
    );
    const [, yaml] = /```yaml\n([\s\S]*?)```/.exec(section) ?? [];
    const settings = (yamlParse(yaml!) as { custom: { quotaOrchestrator: Record<string, unknown> } }).custom
      .quotaOrchestrator;
    const names = queueNames('qo-prod-');
    const resolved = resolveQuotaSettings({
      ...service(),
      custom: { ...service().custom, quotaOrchestrator: settings, names },
    });
    expect(resolved.lanes.map(({ config }) => config.lane)).toEqual([
      'default',
      'gpt-4o',
      'gpt-4o-mini',
      'claude-sonnet',
    ]);
    expect(resolved.lanes.map(({ config }) => config.pools?.map((pool) => pool.name))).toEqual([
      undefined,
      ['openai-org'],
      ['openai-org'],
      undefined,
    ]);
    expect(resolved.lanes[3]!.worker.requestHeaders).toEqual({ 'anthropic-version': '2023-06-01' });
    expect(section).toContain('| `gpt-4o` | `<service>-<stage>-gpt-4o-requeue`');
    expect(section).toContain('| `default` | `<service>-<stage>-requeue`');
  });

  it('describes every setting from its TSDoc', () => {
    expect(generated).not.toContain('no TSDoc');
  });

  it('carries the serverless.yml comments of the other custom settings, and what packaging checks of them', () => {
    expect(rowsBySection(generated).get('Other settings under custom')).toEqual(
      expect.arrayContaining(['custom.queues.maxReceiveCount', 'custom.stateTable.pointInTimeRecovery']),
    );
    expect(generated).toMatch(
      /\| `custom\.queues\.maxReceiveCount` \| `10` \| must be an integer from 1 to 1000 [^|]*\| SQS redrive is the last guard/,
    );
  });
});
