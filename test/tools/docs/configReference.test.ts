import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseServiceConfig } from '../../../lib/config';
import { buildConfigReference, CONFIG_REFERENCE_COMMAND, CONFIG_REFERENCE_FILE } from '../../../tools/docs/configReference';

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
      throw new Error(`${CONFIG_REFERENCE_FILE} is out of date with the configuration parsers or their TSDoc: run \`${CONFIG_REFERENCE_COMMAND}\` and commit the result`);
    }
  });

  it('lists every key of every section the parser fills in, with its default', () => {
    const rows = rowsBySection(generated);
    const defaults = parseServiceConfig({ quotas: [{ limit: 1, per: 'second' }] }) as unknown as Record<string, unknown>;
    expect(rows.get('custom.quotaOrchestrator')).toEqual(expect.arrayContaining(Object.keys(defaults)));
    for (const [section, value] of Object.entries(defaults)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
      expect([section, rows.get(section)]).toEqual([section, Object.keys(value)]);
      for (const [key, setting] of Object.entries(value)) {
        expect(generated).toContain(`| \`${key}\` | \`${String(setting)}\` |`);
      }
    }
    expect(rows.get('quotas')).toEqual(['limit', 'per', 'unit']);
  });

  it('lists the keys only serverless.yml has, required ones marked', () => {
    const rows = rowsBySection(generated);
    expect(rows.get('Keys only serverless.yml has')).toEqual(expect.arrayContaining(['apiUrl', 'healthUrl', 'apiTimeoutMs', 'apiKeyParameter']));
    expect(generated).toContain('| `apiUrl` | required | must be an http(s) URL');
  });

  it('states each range as the parser checks it', () => {
    expect(generated).toContain('| `burstFraction` | `0` | must be a number from 0 to 1 |');
    expect(generated).toContain('| `stateOutage` | `pace-in-memory` | must be one of \'pace-in-memory\', \'pause\' |');
    expect(generated).toContain('| `per` | required | must be one of second, minute, hour, day, month |');
  });

  it('describes every setting from its TSDoc', () => {
    expect(generated).not.toContain('no TSDoc');
  });

  it('carries the serverless.yml comments of the other custom settings, and what packaging checks of them', () => {
    expect(rowsBySection(generated).get('Other settings under custom')).toEqual(expect.arrayContaining(['custom.queues.maxReceiveCount', 'custom.stateTable.pointInTimeRecovery']));
    expect(generated).toMatch(/\| `custom\.queues\.maxReceiveCount` \| `10` \| must be an integer from 1 to 1000 [^|]*\| SQS redrive is the last guard/);
  });
});
