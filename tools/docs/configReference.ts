/**
 * Builds docs/configuration.md from the code that reads the configuration, so the reference cannot drift from it:
 * - the keys, defaults and allowed values come from the parsers themselves: `parseServiceConfig` (lib/config.ts) and
 *   `resolveQuotaSettings` (lib/deploy/quotaSettings.ts) are called with the defaults, with an unknown key (whose
 *   error lists the allowed keys) and with a value of the wrong type for each key (whose error states the range the
 *   parser checks). A key added to any section, or a section added to `ServiceConfig`, appears without an edit here;
 * - the descriptions are the TSDoc of the members of `ServiceConfig` and of each section's interface
 *   (`PacingSettings`, `BreakerSettings`, `RetrySettings`, `OrchestratorSettings`), of `TierSpec` for a tier, and of
 *   `DeploySettings` for the keys only serverless.yml has, read with the TypeScript compiler API;
 * - the other settings under `custom` in serverless.yml (`queues`, `stateTable`, `alarms`…) come with the comment lines
 *   written above them there, and with what `resolveQuotaSettings` checks of them, found by giving each a wrong value.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { yamlParse } from 'yaml-cfn';
import { parseServiceConfig } from '../../lib/config';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV } from '../../lib/configFromEnv';
import { resolveQuotaSettings, SETTINGS_PATH, type ServiceView } from '../../lib/deploy/quotaSettings';
import { ConfigError } from '../../lib/errors';

/** The repository root. */
const REPO_ROOT = path.resolve(__dirname, '../..');

/** Where the reference is written, relative to the repository root. */
export const CONFIG_REFERENCE_FILE = 'docs/configuration.md';

/** The command that writes it. */
export const CONFIG_REFERENCE_COMMAND = 'npm run docs:config';

const CONFIG_SOURCE = 'lib/config.ts';
const TIERS_SOURCE = 'lib/domain/quota/tiers.ts';
const DEPLOY_SOURCE = 'lib/deploy/quotaSettings.ts';

/** The smallest valid tier, and so the smallest valid configuration. */
const MINIMAL_TIER = { limit: 1, per: 'second' } as const;
const MINIMAL_CONFIG = { quotas: [MINIMAL_TIER] };

/** A serverless.yml as small as the plugin accepts: the functions and queues it cross-checks, and the required keys. */
const MINIMAL_SERVICE = {
  provider: {},
  functions: { orchestrator: { timeout: 300 }, worker: { timeout: 30, maximumEventAge: 60 } },
  custom: { queues: { maxReceiveCount: 10 }, quotaOrchestrator: { ...MINIMAL_CONFIG, apiUrl: 'https://api.example.com/jobs', healthUrl: 'https://api.example.com/health' } },
} as const;

/** A key no parser knows, whose refusal lists the keys it does know. */
const UNKNOWN_KEY = '\u0000unknown';

/** A value no setting takes (no setting is a list), whose refusal states what the setting takes. */
const WRONG_VALUE: readonly unknown[] = [];

/** `custom` keys of serverless.yml that are not settings: names, build options, and the lookup highThroughputFifo uses. */
const NOT_SETTINGS = new Set(['names', 'esbuild', 'fifoThroughput', 'quotaOrchestrator']);

/** What the TSDoc of one member says. */
interface MemberDoc {
  readonly text: string;
  readonly defaultTag?: string;
}

/** One row of a settings table. */
interface Setting {
  readonly key: string;
  readonly defaultValue: string;
  readonly allowed: string;
  readonly description: string;
}

/** The ConfigError `run` throws, or `undefined` if it throws none. */
function refusal(run: () => unknown): ConfigError | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}

/**
 * The keys a parser accepts, read from its refusal of an unknown key.
 * @throws Error when the parser accepts the unknown key or does not list its keys.
 */
function acceptedKeys(run: (unknownKey: string) => unknown, where: string): string[] {
  const problem = refusal(() => run(UNKNOWN_KEY))?.problem ?? '';
  const listed = /allowed keys are (.+)$/.exec(problem)?.[1];
  if (listed === undefined) throw new Error(`${where}: the parser did not list its keys when given an unknown one (got '${problem}')`);
  return listed.split(', ');
}

/**
 * What a setting takes, as the parser words it when refusing a wrong value: its message without the value it got,
 * with example addresses as code (GitHub would make links of them).
 */
function allowedValues(run: () => unknown): string {
  return allowedIn(refusal(run));
}

/** What a refusal says is allowed (see {@link allowedValues}); `—` for no refusal. */
function allowedIn(error: ConfigError | undefined): string {
  return error === undefined ? '—' : error.problem.replace(/; got [\s\S]*$/, '').replace(/https?:\/\/[^\s,;]+/g, (url) => `\`${url}\``);
}

/** TSDoc text as markdown: `{@link X}` becomes `` `X` `` (or its label). */
function plain(parts: ts.SymbolDisplayPart[] | undefined): string {
  return ts.displayPartsToString(parts).replace(/\{@link(?:code|plain)?\s+([^}|\s]+)(?:\s*\|?\s*([^}]+))?\}/g, (_all, target: string, label?: string) => `\`${(label ?? target).trim()}\``);
}

/** Reads TSDoc with the TypeScript compiler API: one program over the sources that declare the settings. */
class DocReader {
  private readonly program: ts.Program;
  private readonly checker: ts.TypeChecker;

  constructor(files: readonly string[]) {
    this.program = ts.createProgram(
      files.map((file) => path.join(REPO_ROOT, file)),
      { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: true, noEmit: true, skipLibCheck: true, types: [] },
    );
    this.checker = this.program.getTypeChecker();
  }

  /** The exported symbol `name` of `file`. @throws Error when the file does not export it. */
  private exported(file: string, name: string): ts.Symbol {
    const source = this.program.getSourceFile(path.join(REPO_ROOT, file));
    const moduleSymbol = source === undefined ? undefined : this.checker.getSymbolAtLocation(source);
    const symbol = moduleSymbol === undefined ? undefined : this.checker.getExportsOfModule(moduleSymbol).find((s) => s.name === name);
    if (symbol === undefined) throw new Error(`${file} does not export ${name}, whose TSDoc the configuration reference reads`);
    return symbol;
  }

  private docOf(symbol: ts.Symbol): MemberDoc {
    const text = plain(symbol.getDocumentationComment(this.checker));
    const tag = symbol.getJsDocTags(this.checker).find((t) => t.name === 'default');
    return tag?.text === undefined ? { text } : { text, defaultTag: plain(tag.text) };
  }

  /** The TSDoc of each member of the exported interface `name` of `file`, inherited members included. */
  members(file: string, name: string): Map<string, MemberDoc> {
    const type = this.checker.getDeclaredTypeOfSymbol(this.exported(file, name));
    return new Map(this.checker.getPropertiesOfType(type).map((member) => [member.name, this.docOf(member)]));
  }

  /**
   * The type of member `member` of the exported interface `name` of `file`: its TSDoc (that of the type's own
   * declaration, e.g. `PacingSettings`) and the TSDoc of each of its members.
   */
  memberType(file: string, name: string, member: string): { readonly doc: string; readonly members: Map<string, MemberDoc> } {
    const owner = this.checker.getDeclaredTypeOfSymbol(this.exported(file, name));
    const property = this.checker.getPropertyOfType(owner, member);
    if (property === undefined) return { doc: '', members: new Map() };
    const type = this.checker.getTypeOfSymbol(property);
    const doc = plain(type.getSymbol()?.getDocumentationComment(this.checker));
    return { doc, members: new Map(this.checker.getPropertiesOfType(type).map((m) => [m.name, this.docOf(m)])) };
  }

  /** The TSDoc of the exported function `name` of `file`, with its line breaks, without its tags. */
  functionDoc(file: string, name: string): string {
    return plain(this.exported(file, name).getDocumentationComment(this.checker));
  }
}

/** A value as serverless.yml would write it. */
function formatValue(value: unknown): string {
  if (value === undefined) return '—';
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
}

/**
 * The description of a member: its TSDoc text, and what its `@default` tag adds beyond the value (a reason, a unit).
 * A member without TSDoc says so, where the reader (and the reviewer) will see it.
 */
function describe(doc: MemberDoc | undefined, defaultValue: unknown): string {
  if (doc === undefined || doc.text === '') return '**(no TSDoc: document this member where it is declared)**';
  const tag = doc.defaultTag?.trim();
  if (tag === undefined || tag === '') return doc.text;
  const shown = typeof defaultValue === 'string' ? [defaultValue, `'${defaultValue}'`] : [String(defaultValue)];
  const rest = shown.reduce((text, value) => (text.startsWith(value) ? text.slice(value.length) : text), tag).replace(/^[\s:,;]+/, '');
  const sentence = (text: string) => `${doc.text} Default: ${text.replace(/^\((.*)\)$/, '$1').replace(/\.$/, '')}.`;
  if (defaultValue !== undefined && rest === tag) return sentence(tag);
  return rest === '' ? doc.text : sentence(rest);
}

function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
}

function table(rows: readonly Setting[]): string {
  const lines = ['| Key | Default | Allowed | Description |', '| --- | --- | --- | --- |'];
  for (const row of rows) lines.push(`| \`${row.key}\` | ${cell(row.defaultValue)} | ${cell(row.allowed)} | ${cell(row.description)} |`);
  return lines.join('\n');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The minimal serverless.yml with `settings` as `custom.quotaOrchestrator` and `custom` holding `sections` besides
 * (serverless.yml's own settings sections, so that a plugin that checks them finds them).
 */
function serviceWith(settings: Record<string, unknown>, sections: Record<string, unknown>): ServiceView {
  return { ...MINIMAL_SERVICE, custom: { ...MINIMAL_SERVICE.custom, ...sections, quotaOrchestrator: settings } };
}

/** `record` with the value at `keys` (a path of object keys) replaced by `value`, copied along the path. */
function replaced(record: Record<string, unknown>, keys: readonly string[], value: unknown): Record<string, unknown> {
  const [key, ...rest] = keys;
  if (key === undefined) return record;
  const inner = record[key];
  return { ...record, [key]: rest.length === 0 ? value : replaced(isRecord(inner) ? inner : {}, rest, value) };
}

/** A settings comment of serverless.yml: the comment lines right above a key under `custom`, by the key's path. */
interface YamlSetting {
  readonly path: string;
  readonly value: string;
  readonly comment: string;
}

/**
 * The settings under `custom` in serverless.yml other than {@link NOT_SETTINGS}: each key with a value on its line,
 * with the comment lines written right above it, else those above the objects holding it.
 */
function customSettings(yml: string): YamlSetting[] {
  const settings: YamlSetting[] = [];
  const stack: { indent: number; key: string; comment: string }[] = [];
  let comment: string[] = [];
  let inCustom = false;
  for (const line of yml.split('\n')) {
    if (/^\S/.test(line)) inCustom = /^custom:\s*$/.test(line);
    const commentLine = /^\s*#\s?(.*)$/.exec(line);
    if (!inCustom || /^custom:/.test(line)) continue;
    if (commentLine !== null) {
      comment.push(commentLine[1]!);
      continue;
    }
    const entry = /^(\s*)([A-Za-z0-9_'"-]+):\s*(.*?)\s*$/.exec(line);
    if (entry === null) {
      comment = [];
      continue;
    }
    const indent = entry[1]!.length;
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop();
    const key = entry[2]!.replace(/^['"]|['"]$/g, '');
    const ownComment = comment.join(' ');
    comment = [];
    const value = entry[3]!;
    if (value === '') {
      stack.push({ indent, key, comment: ownComment });
      continue;
    }
    const keys = [...stack.map((s) => s.key), key];
    if (NOT_SETTINGS.has(keys[0]!)) continue;
    const context = stack.map((s) => s.comment).filter((c) => c !== '');
    settings.push({ path: `custom.${keys.join('.')}`, value, comment: ownComment === '' ? context.join(' ') : ownComment });
  }
  return settings;
}

/**
 * The markdown of docs/configuration.md, built from the parsers, their sources' TSDoc and serverless.yml.
 * @throws Error when a parser no longer lists its keys, or a documented interface is no longer exported.
 */
export function buildConfigReference(): string {
  const docs = new DocReader([CONFIG_SOURCE, TIERS_SOURCE, DEPLOY_SOURCE]);
  const defaults = parseServiceConfig(MINIMAL_CONFIG) as unknown as Record<string, unknown>;
  const serviceKeys = acceptedKeys((unknown) => parseServiceConfig({ ...MINIMAL_CONFIG, [unknown]: 1 }), 'parseServiceConfig');
  const topDocs = docs.members(CONFIG_SOURCE, 'ServiceConfig');
  const envOf = CONFIG_ENV as Readonly<Record<string, string>>;

  const sections: { key: string; rows: Setting[] }[] = [];
  const topRows: Setting[] = [];
  for (const key of serviceKeys) {
    const value = defaults[key];
    const env = envOf[key] === undefined ? '' : ` Environment variable \`${envOf[key]}\`.`;
    if (key === 'quotas') {
      topRows.push({ key, defaultValue: 'required', allowed: `a list of tiers: see [quotas](#quotas)`, description: describe(topDocs.get(key), undefined) + env });
      sections.push({ key, rows: tierRows(docs) });
    } else if (isRecord(value)) {
      const { doc, members } = docs.memberType(CONFIG_SOURCE, 'ServiceConfig', key);
      const own = topDocs.get(key);
      topRows.push({ key, defaultValue: 'all defaults', allowed: `see [${key}](#${key})`, description: describe(own?.text ? own : { text: doc }, undefined) + env });
      sections.push({ key, rows: sectionRows(key, value, members) });
    } else {
      const allowed = allowedValues(() => parseServiceConfig({ ...MINIMAL_CONFIG, [key]: WRONG_VALUE }));
      topRows.push({ key, defaultValue: formatValue(value), allowed, description: describe(topDocs.get(key), value) + env });
    }
  }

  const yml = readFileSync(path.join(REPO_ROOT, 'serverless.yml'), 'utf8');
  const ymlCustom = ((yamlParse(yml) as Record<string, unknown>).custom ?? {}) as Record<string, unknown>;
  const customSections = Object.fromEntries(Object.entries(ymlCustom).filter(([key]) => !NOT_SETTINGS.has(key)));
  const deployDocs = docs.members(DEPLOY_SOURCE, 'DeploySettings');
  const baseline = MINIMAL_SERVICE.custom.quotaOrchestrator as Record<string, unknown>;
  const allKeys = acceptedKeys((unknown) => resolveQuotaSettings(serviceWith({ ...baseline, [unknown]: 1 }, customSections)), 'resolveQuotaSettings');
  const deployRows = allKeys
    .filter((key) => !serviceKeys.includes(key))
    .map((key): Setting => {
      const without = Object.fromEntries(Object.entries(baseline).filter(([name]) => name !== key));
      const required = refusal(() => resolveQuotaSettings(serviceWith(without, customSections)))?.field === `${SETTINGS_PATH}.${key}`;
      const allowed = allowedValues(() => resolveQuotaSettings(serviceWith({ ...baseline, [key]: WRONG_VALUE }, customSections)));
      const doc = deployDocs.get(key);
      const defaultValue = required ? 'required' : doc?.defaultTag === undefined ? '—' : doc.defaultTag.replace(/\s+/g, ' ');
      return { key, defaultValue, allowed, description: describe(doc === undefined ? undefined : { text: doc.text }, undefined) };
    });

  const other = customSettings(yml).map((setting) => {
    const keys = setting.path.split('.').slice(1);
    const refused = refusal(() => resolveQuotaSettings(serviceWith(baseline, replaced(customSections, keys, WRONG_VALUE))));
    return { ...setting, checked: allowedIn(refused?.field === setting.path ? refused : undefined) };
  });
  const checks = docs.functionDoc(DEPLOY_SOURCE, 'resolveQuotaSettings');

  const out: string[] = [];
  out.push(
    `<!-- Generated by \`${CONFIG_REFERENCE_COMMAND}\` (tools/docs/configReference.ts) from the configuration parsers and their TSDoc. Do not edit: change the source and run the command again. -->`,
    '',
    '# Configuration reference',
    '',
    `Your settings live in \`${SETTINGS_PATH}\` in [serverless.yml](../serverless.yml). The quota-config plugin`,
    '([lib/deploy/quotaConfigPlugin.cjs](../lib/deploy/quotaConfigPlugin.cjs)) validates them with the service\'s own parser before anything is packaged, so a',
    'wrong value fails `npm run package` (and `deploy`) with the field\'s name and its allowed values, for example',
    '`custom.quotaOrchestrator.quotas[0].per: must be one of second, minute, hour, day, month; got "fortnight"`.',
    'It then hands them to both functions as environment variables, which the functions parse again, with the same',
    'parser, at cold start. A section you leave out takes every default; a key you leave out takes its default.',
    '',
    'A scenario file for the local run (`npm start -- --scenario FILE`) takes the same `quotas`, `pacing`, `circuit`,',
    '`retry` and `orchestrator` objects, which replace serverless.yml\'s for that run.',
    '',
    '"Allowed" is what the parser checks, in its own words; the descriptions name the rules between settings.',
    '',
    `## \`${SETTINGS_PATH}\``,
    '',
    table(topRows),
    '',
    '### Keys only serverless.yml has',
    '',
    'These configure the deployment and the example worker; the functions receive them as their own environment',
    'variables.',
    '',
    table(deployRows),
  );
  for (const section of sections) {
    out.push('', `### ${section.key}`, '');
    if (section.key === 'quotas') out.push('Each tier of the `quotas` list:', '');
    out.push(table(section.rows));
  }
  out.push('', '## What packaging checks', '', checks.trim());
  if (other.length > 0) {
    out.push(
      '',
      '## Other settings under `custom`',
      '',
      'Written with their explanation in serverless.yml itself. "Checked at packaging" is what the quota-config plugin',
      'checks; the others are checked by CloudFormation when the stack deploys.',
      '',
    );
    const lines = ['| Key | In serverless.yml | Checked at packaging | Description |', '| --- | --- | --- | --- |'];
    for (const setting of other) lines.push(`| \`${setting.path}\` | \`${cell(setting.value)}\` | ${cell(setting.checked)} | ${cell(setting.comment) || '—'} |`);
    out.push(lines.join('\n'));
  }
  out.push(
    '',
    '## Environment variables',
    '',
    'serverless.yml sets these; you only set them yourself to run a handler outside it. The settings (JSON for the',
    'objects and the list):',
    '',
    ...Object.entries(CONFIG_ENV).map(([key, name]) => `- \`${name}\`: \`${key}\``),
    '',
    'The resources and the example worker\'s API:',
    '',
    ...Object.entries({ ...RESOURCE_ENV, ...QUEUE_URL_ENV }).map(([key, name]) => `- \`${name}\` (${key})`),
    '',
  );
  return out.join('\n');
}

/** The rows of a tier: its keys, required or defaulted, as `parseTiers` checks them. */
function tierRows(docs: DocReader): Setting[] {
  const withTier = (tier: Record<string, unknown>) => parseServiceConfig({ quotas: [tier] });
  const keys = acceptedKeys((unknown) => withTier({ ...MINIMAL_TIER, [unknown]: 1 }), 'parseTiers');
  const parsed = (withTier(MINIMAL_TIER).quotas[0] ?? {}) as unknown as Record<string, unknown>;
  const tierDocs = docs.members(TIERS_SOURCE, 'TierSpec');
  return keys.map((key) => {
    const required = Object.hasOwn(MINIMAL_TIER, key);
    const allowed = allowedValues(() => withTier({ ...MINIMAL_TIER, [key]: WRONG_VALUE }));
    const value = required ? undefined : parsed[key];
    return { key, defaultValue: required ? 'required' : formatValue(value), allowed, description: describe(tierDocs.get(key), value) };
  });
}

/** The rows of an object section of `ServiceConfig` (`pacing`, `circuit`, …): every key its parser accepts. */
function sectionRows(section: string, defaults: Record<string, unknown>, memberDocs: Map<string, MemberDoc>): Setting[] {
  const keys = acceptedKeys((unknown) => parseServiceConfig({ ...MINIMAL_CONFIG, [section]: { [unknown]: 1 } }), section);
  return keys.map((key) => {
    const allowed = allowedValues(() => parseServiceConfig({ ...MINIMAL_CONFIG, [section]: { [key]: WRONG_VALUE } }));
    return { key, defaultValue: formatValue(defaults[key]), allowed, description: describe(memberDocs.get(key), defaults[key]) };
  });
}
