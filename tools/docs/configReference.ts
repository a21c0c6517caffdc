/**
 * Builds docs/configuration.md from the code that reads the configuration, so the reference cannot drift from it:
 * - the keys, defaults and allowed values come from the parsers themselves: `parseServiceConfig` (lib/config.ts) and
 *   `resolveQuotaSettings` (lib/deploy/quotaSettings.ts) are called with the defaults, with an unknown key (whose
 *   error lists the allowed keys) and with a value of the wrong type for each key (whose error states the range the
 *   parser checks). A key added to any section, or a section added to `ServiceConfig`, appears without an edit here;
 * - the descriptions are the TSDoc of the members of `ServiceConfig` and of each section's interface
 *   (`PacingSettings`, `BreakerSettings`, `RetrySettings`, `OrchestratorSettings`), of `TierSpec` for a tier, and of
 *   `DeploySettings` (lib/workerSettings.ts) for the keys only serverless.yml has, read with the TypeScript compiler
 *   API;
 * - the other settings under `custom` in serverless.yml (`queues`, `stateTable`, `alarms`…) come with the comment lines
 *   written above them there, and with what `resolveQuotaSettings` checks of them, found by giving each a wrong value;
 * - `units` is keyed by unit name, so its rows are the keys of one unit's settings (`UnitSetting`), with the defaults
 *   the parser gives each kind of unit, the usage source shapes it accepts, and the presets' sources (`USAGE_PRESETS`);
 * - the examples (an Anthropic and an OpenAI lane) are written here, and checked with the parser, the presets and the
 *   ledger's hand-back when the reference is built: a wrong example fails the build, and the numbers in their text
 *   are computed, not typed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { yamlParse } from 'yaml-cfn';
import { parseServiceConfig } from '../../lib/config';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV } from '../../lib/configFromEnv';
import { resolveQuotaSettings, SETTINGS_PATH, type ServiceView } from '../../lib/deploy/quotaSettings';
import { parseScenario } from '../simulation/scenario';
import { llmExamplesSection, type ExampleValidator } from './llmExamples';
import { lanesSection, LANES_HEADING } from './lanesSection';
import { LANES_KEY } from '../../lib/deploy/laneSettings';
import {
  acceptedKeys,
  allowedIn,
  allowedValues,
  MINIMAL_CONFIG,
  MINIMAL_TIER,
  refusal,
  WRONG_VALUE,
} from './parserProbe';
import { cell, describe, formatValue, inWords, table, type Setting } from './settingsTable';
import { DocReader, REPO_ROOT, type MemberDoc } from './tsdocReader';
import { unitsSection, UNITS_SOURCE, USAGE_SOURCE } from './unitsReference';

/** Where the reference is written, relative to the repository root. */
export const CONFIG_REFERENCE_FILE = 'docs/configuration.md';

/** The command that writes it. */
export const CONFIG_REFERENCE_COMMAND = 'npm run docs:config';

const CONFIG_SOURCE = 'lib/config.ts';
const TIERS_SOURCE = 'lib/domain/quota/tiers.ts';
const DEPLOY_SOURCE = 'lib/deploy/quotaSettings.ts';
const WORKER_SOURCE = 'lib/workerSettings.ts';

/** A serverless.yml as small as the plugin accepts: the functions and queues it cross-checks, and the required keys. */
const MINIMAL_SERVICE = {
  provider: {},
  functions: { orchestrator: { timeout: 300 }, worker: { timeout: 30, maximumEventAge: 60 } },
  custom: {
    queues: { maxReceiveCount: 10, fifoMaxReceiveCount: 100 },
    quotaOrchestrator: {
      ...MINIMAL_CONFIG,
      apiUrl: 'https://api.example.com/jobs',
      healthUrl: 'https://api.example.com/health',
    },
  },
} as const;

/** serverless.yml's `custom.names` of the queues, as it resolves them on a stage: the lanes' queues are named after them. */
const STAGE_NAMES = {
  mainQueue: 'quota-orchestrator-prod-main',
  mainDeadLetterQueue: 'quota-orchestrator-prod-main-dlq',
  fifoQueue: 'quota-orchestrator-prod-fifo.fifo',
  fifoDeadLetterQueue: 'quota-orchestrator-prod-fifo-dlq.fifo',
  requeueQueue: 'quota-orchestrator-prod-requeue',
  requeueDeadLetterQueue: 'quota-orchestrator-prod-requeue-dlq',
  bulkQueue: 'quota-orchestrator-prod-bulk',
  bulkDeadLetterQueue: 'quota-orchestrator-prod-bulk-dlq',
  workerFailureQueue: 'quota-orchestrator-prod-worker-failures',
} as const;

/** The heading of the worked examples. */
const EXAMPLES_HEADING = 'Examples: LLM providers';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** `custom` keys of serverless.yml that are not settings: names, build options, and the lookup highThroughputFifo uses. */
const NOT_SETTINGS = new Set(['names', 'esbuild', 'fifoThroughput', 'quotaOrchestrator']);

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
    settings.push({
      path: `custom.${keys.join('.')}`,
      value,
      comment: ownComment === '' ? context.join(' ') : ownComment,
    });
  }
  return settings;
}

/**
 * The markdown of docs/configuration.md, built from the parsers, their sources' TSDoc and serverless.yml.
 * @throws Error when a parser no longer lists its keys, or a documented interface is no longer exported.
 */
export function buildConfigReference(): string {
  const docs = new DocReader([CONFIG_SOURCE, TIERS_SOURCE, DEPLOY_SOURCE, WORKER_SOURCE, UNITS_SOURCE, USAGE_SOURCE]);
  const defaults = parseServiceConfig(MINIMAL_CONFIG) as unknown as Record<string, unknown>;
  const serviceKeys = acceptedKeys(
    (unknown) => parseServiceConfig({ ...MINIMAL_CONFIG, [unknown]: 1 }),
    'parseServiceConfig',
  );
  const topDocs = docs.members(CONFIG_SOURCE, 'ServiceConfig');
  const envOf = CONFIG_ENV as Readonly<Record<string, string>>;

  const sections: { key: string; lines: string[] }[] = [];
  const topRows: Setting[] = [];
  for (const key of serviceKeys) {
    const value = defaults[key];
    const env = envOf[key] === undefined ? '' : ` Environment variable \`${envOf[key]}\`.`;
    if (key === 'quotas') {
      topRows.push({
        key,
        defaultValue: 'required',
        allowed: `a list of tiers: see [quotas](#quotas)`,
        description: describe(topDocs.get(key), undefined) + env,
      });
      sections.push({
        key,
        lines: [
          'Each tier of the `quotas` list:',
          '',
          table(tierRows(docs)),
          '',
          `**Units.** ${docs.symbolDoc(TIERS_SOURCE, 'TierUnit')}`,
          '',
          `**Unit names.** ${docs.symbolDoc(TIERS_SOURCE, 'unitNameProblem').replace(/^Why `name` cannot name a unit, or `undefined` when it can\. /, '')}`,
        ],
      });
    } else if (key === 'units') {
      // Keyed by unit name: its rows are the keys of one unit's settings.
      const allowed = allowedValues(() => parseServiceConfig({ ...MINIMAL_CONFIG, [key]: WRONG_VALUE }));
      topRows.push({
        key,
        defaultValue: 'per unit: see [units](#units)',
        allowed: `${allowed}: see [units](#units)`,
        description: describe(topDocs.get(key), undefined) + env,
      });
      sections.push({ key, lines: unitsSection(docs) });
    } else if (isRecord(value)) {
      const { doc, members } = docs.memberType(CONFIG_SOURCE, 'ServiceConfig', key);
      const own = topDocs.get(key);
      topRows.push({
        key,
        defaultValue: 'all defaults',
        allowed: `see [${key}](#${key})`,
        description: describe(own?.text ? own : { text: doc }, undefined) + env,
      });
      sections.push({ key, lines: [table(sectionRows(key, value, members))] });
    } else {
      const allowed = allowedValues(() => parseServiceConfig({ ...MINIMAL_CONFIG, [key]: WRONG_VALUE }));
      topRows.push({
        key,
        defaultValue: formatValue(value),
        allowed,
        description: describe(topDocs.get(key), value) + env,
      });
    }
  }

  const yml = readFileSync(path.join(REPO_ROOT, 'serverless.yml'), 'utf8');
  const ymlCustom = ((yamlParse(yml) as Record<string, unknown>).custom ?? {}) as Record<string, unknown>;
  const customSections = Object.fromEntries(Object.entries(ymlCustom).filter(([key]) => !NOT_SETTINGS.has(key)));
  const deployDocs = docs.members(WORKER_SOURCE, 'DeploySettings');
  const baseline = MINIMAL_SERVICE.custom.quotaOrchestrator as Record<string, unknown>;
  const allKeys = acceptedKeys(
    (unknown) => resolveQuotaSettings(serviceWith({ ...baseline, [unknown]: 1 }, customSections)),
    'resolveQuotaSettings',
  );
  const deployRows = allKeys
    .filter((key) => !serviceKeys.includes(key) && key !== LANES_KEY)
    .map((key): Setting => {
      const without = Object.fromEntries(Object.entries(baseline).filter(([name]) => name !== key));
      const required =
        refusal(() => resolveQuotaSettings(serviceWith(without, customSections)))?.field === `${SETTINGS_PATH}.${key}`;
      const allowed = allowedValues(() =>
        resolveQuotaSettings(serviceWith({ ...baseline, [key]: WRONG_VALUE }, customSections)),
      );
      const doc = deployDocs.get(key);
      const defaultValue = required
        ? 'required'
        : doc?.defaultTag === undefined
          ? '—'
          : doc.defaultTag.replace(/\s+/g, ' ');
      return {
        key,
        defaultValue,
        allowed,
        description: describe(doc === undefined ? undefined : { text: doc.text }, undefined),
      };
    });

  const other = customSettings(yml).map((setting) => {
    const keys = setting.path.split('.').slice(1);
    const refused = refusal(() =>
      resolveQuotaSettings(serviceWith(baseline, replaced(customSections, keys, WRONG_VALUE))),
    );
    return { ...setting, checked: allowedIn(refused?.field === setting.path ? refused : undefined) };
  });
  const checks = docs.symbolDoc(DEPLOY_SOURCE, 'resolveQuotaSettings');
  // The service's settings a scenario file takes, read from the scenario parser's list of its keys.
  const scenarioKeys = acceptedKeys(
    (unknown) => parseScenario({ ...MINIMAL_CONFIG, [unknown]: 1 }),
    'parseScenario',
  ).filter((key) => serviceKeys.includes(key));

  const out: string[] = [];
  out.push(
    `<!-- Generated by \`${CONFIG_REFERENCE_COMMAND}\` (tools/docs/configReference.ts) from the configuration parsers and their TSDoc. Do not edit: change the source and run the command again. -->`,
    '',
    '# Configuration reference',
    '',
    `Your settings live in \`${SETTINGS_PATH}\` in [serverless.yml](../serverless.yml). The quota-config plugin`,
    "([lib/deploy/quotaConfigPlugin.cjs](../lib/deploy/quotaConfigPlugin.cjs)) validates them with the service's own parser before anything is packaged, so a",
    "wrong value fails `npm run package` (and `deploy`) with the field's name and its allowed values, for example",
    '`custom.quotaOrchestrator.quotas[0].per: must be one of second, minute, hour, day, month; got "fortnight"`.',
    'It then hands them to both functions as environment variables, which the functions parse again, with the same',
    'parser, at cold start. A section you leave out takes every default; a key you leave out takes its default.',
    '',
    `A scenario file for the local run (\`npm start -- --scenario FILE\`) takes the same ${inWords(scenarioKeys.map((key) => `\`${key}\``))},`,
    "which replace serverless.yml's for that run.",
    '',
    `Worked examples for an Anthropic and an OpenAI lane: [${EXAMPLES_HEADING}](#${anchorOf(EXAMPLES_HEADING)}). Several APIs from one deployment, each a lane of its own: [${LANES_HEADING}](#${anchorOf(LANES_HEADING)}).`,
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
  for (const section of sections) out.push('', `### ${section.key}`, '', ...section.lines);
  const validate: ExampleValidator = (settings, workerTimeoutSeconds) => {
    const service = serviceWith({ ...settings }, customSections);
    resolveQuotaSettings({
      ...service,
      functions: {
        ...MINIMAL_SERVICE.functions,
        worker: { ...MINIMAL_SERVICE.functions.worker, timeout: workerTimeoutSeconds },
      },
    });
  };
  out.push('', `## ${EXAMPLES_HEADING}`, '', ...llmExamplesSection(validate));
  out.push(
    '',
    `## ${LANES_HEADING}`,
    '',
    ...lanesSection((settings) =>
      resolveQuotaSettings(serviceWith({ ...settings }, { ...customSections, names: STAGE_NAMES })),
    ),
  );
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
    for (const setting of other)
      lines.push(
        `| \`${setting.path}\` | \`${cell(setting.value)}\` | ${cell(setting.checked)} | ${cell(setting.comment) || '—'} |`,
      );
    out.push(lines.join('\n'));
  }
  out.push(
    '',
    '## Environment variables',
    '',
    'serverless.yml sets these; you only set them yourself to run a handler outside it. The settings, each as',
    'serverless.yml writes it (a string as it is; a number, an object or a list as JSON):',
    '',
    ...Object.entries(CONFIG_ENV).map(([key, name]) => `- \`${name}\`: \`${key}\``),
    '',
    "The resources and the example worker's API:",
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
    return {
      key,
      defaultValue: required ? 'required' : formatValue(value),
      allowed,
      description: describe(tierDocs.get(key), value),
    };
  });
}

/** The rows of an object section of `ServiceConfig` (`pacing`, `circuit`, …): every key its parser accepts. */
function sectionRows(
  section: string,
  defaults: Record<string, unknown>,
  memberDocs: Map<string, MemberDoc>,
): Setting[] {
  const keys = acceptedKeys(
    (unknown) => parseServiceConfig({ ...MINIMAL_CONFIG, [section]: { [unknown]: 1 } }),
    section,
  );
  return keys.map((key) => {
    const allowed = allowedValues(() => parseServiceConfig({ ...MINIMAL_CONFIG, [section]: { [key]: WRONG_VALUE } }));
    return {
      key,
      defaultValue: formatValue(defaults[key]),
      allowed,
      description: describe(memberDocs.get(key), defaults[key]),
    };
  });
}
