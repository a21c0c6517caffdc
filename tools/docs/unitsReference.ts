/**
 * The `units` section of the configuration reference. `units` is keyed by unit name, so its rows are the keys of one
 * unit's settings (`UnitSetting`), with the defaults the parser gives each kind of unit; then the usage source
 * shapes the parser accepts, how the worker reads an answer, and each preset's sources (`USAGE_PRESETS`).
 */
import { parseServiceConfig } from '../../lib/config';
import { COST_UNIT } from '../../lib/domain/quota/tiers';
import {
  DEFAULT_USAGE_COUNTING,
  PRESET_COUNTING,
  USAGE_PRESET_NAMES,
  USAGE_PRESETS,
} from '../../lib/domain/usage/usageSources';
import { acceptedKeys, allowedIn, MINIMAL_CONFIG, refusal, WRONG_VALUE } from './parserProbe';
import { cell, describe, formatValue, table, type Setting } from './settingsTable';
import type { DocReader } from './tsdocReader';

/** Where one unit's settings are declared. */
export const UNITS_SOURCE = 'lib/domain/usage/unitSettings.ts';

/** Where usage sources and presets are declared. */
export const USAGE_SOURCE = 'lib/domain/usage/usageSources.ts';

/** A unit no preset and no default knows: what the parser gives "any other unit". */
const OTHER_UNIT = 'my_unit';

/** The units some preset gives a source, in the order the presets list them. */
const PRESET_UNITS = [...new Set(USAGE_PRESET_NAMES.flatMap((preset) => Object.keys(USAGE_PRESETS[preset])))];

/** A tier of each unit the reference tells apart: `cost`, the presets' units, and any other. */
const UNIT_TIERS = [COST_UNIT, ...PRESET_UNITS, OTHER_UNIT].map((unit) => ({ limit: 1, per: 'second', unit }));

/** The configuration with a tier of each unit of {@link UNIT_TIERS}, and `units` set to `units`. */
function withUnits(units: unknown, usagePreset?: string): ReturnType<typeof parseServiceConfig> {
  return parseServiceConfig({
    quotas: UNIT_TIERS,
    ...(units === undefined ? {} : { units }),
    ...(usagePreset === undefined ? {} : { usagePreset }),
  });
}

/** What a unit's setting means when the parser leaves it out, for the keys whose absence is a value. */
const ABSENT_MEANS: Readonly<Record<string, unknown>> = { counts: DEFAULT_USAGE_COUNTING };

/**
 * The default of one key of a unit's settings, as the parser fills it in for each kind of unit: its own value where
 * it has one, "from `usagePreset`" where only a preset gives one, what its absence means (see {@link ABSENT_MEANS}) or
 * none otherwise.
 */
function unitDefault(key: string): string {
  const plain = withUnits(undefined).units as Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  const preset = USAGE_PRESET_NAMES.map(
    (name) => withUnits(undefined, name).units as Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  );
  const own = UNIT_TIERS.flatMap(({ unit }) =>
    plain[unit]?.[key] === undefined ? [] : [`\`${unit}\`: ${formatValue(plain[unit]?.[key])}`],
  );
  const fromPreset = UNIT_TIERS.filter(
    ({ unit }) => plain[unit]?.[key] === undefined && preset.some((units) => units[unit]?.[key] !== undefined),
  ).map(({ unit }) => `\`${unit}\``);
  const parts = [...own, ...(fromPreset.length === 0 ? [] : [`${fromPreset.join(', ')}: from \`usagePreset\``])];
  const otherHasOne = plain[OTHER_UNIT]?.[key] !== undefined;
  const absent = key in ABSENT_MEANS ? formatValue(ABSENT_MEANS[key]) : 'none';
  return [...parts, otherHasOne ? '' : `other units: ${absent}`].filter((part) => part !== '').join('; ');
}

/** The rows of one unit's settings: every key the parser accepts for it. */
function unitRows(docs: DocReader): Setting[] {
  const keys = acceptedKeys((unknown) => withUnits({ [COST_UNIT]: { [unknown]: 1 } }), 'units');
  const memberDocs = docs.members(UNITS_SOURCE, 'UnitSetting');
  return keys.map((key) => {
    const allowed = allowedIn(refusal(() => withUnits({ [COST_UNIT]: { [key]: WRONG_VALUE } })));
    return { key, defaultValue: unitDefault(key), allowed, description: describe(memberDocs.get(key), undefined) };
  });
}

/**
 * What the parser accepts of each shape of a usage source, found by giving it wrong ones: the shapes come from its
 * refusal of a source that is not an object, and what each takes from its refusal of wrong values for it (a pointer
 * is also given text without a leading `/` and a `~` out of place).
 */
function sourceShapes(): string[] {
  const usage = (source: unknown) => refusal(() => withUnits({ [COST_UNIT]: { usage: source } }));
  const shapes = [...(usage(WRONG_VALUE)?.problem ?? '').matchAll(/\{"([A-Za-z]+)":/g)].map((match) => match[1]!);
  if (shapes.length === 0)
    throw new Error('units.usage: the parser did not name the shapes of a usage source when given a wrong one');
  const wrong: Readonly<Record<string, readonly unknown[]>> = { pointer: [WRONG_VALUE, 'usage', '/a~2'] };
  return shapes.map((shape) => {
    const problems = (wrong[shape] ?? [WRONG_VALUE]).map((value) => allowedIn(usage({ [shape]: value })));
    return `| \`${shape}\` | ${cell([...new Set(problems)].join('; '))} |`;
  });
}

/** What `preset` gives `unit`: its source, and what its provider counts when that is not the default. */
function presetCell(preset: (typeof USAGE_PRESET_NAMES)[number], unit: string): string {
  const source = formatValue((USAGE_PRESETS[preset] as Readonly<Record<string, unknown>>)[unit]);
  const counting = (PRESET_COUNTING[preset] as Readonly<Record<string, unknown>>)[unit];
  return counting === undefined ? source : `${source}, counts ${formatValue(counting)}`;
}

/** The sources each preset gives, one row per unit, one column per preset. */
function presetRows(): string[] {
  const head = `| Unit | ${USAGE_PRESET_NAMES.map((name) => `\`${name}\``).join(' | ')} |`;
  const rule = `| --- | ${USAGE_PRESET_NAMES.map(() => '---').join(' | ')} |`;
  const rows = PRESET_UNITS.map(
    (unit) => `| \`${unit}\` | ${USAGE_PRESET_NAMES.map((name) => presetCell(name, unit)).join(' | ')} |`,
  );
  return [head, rule, ...rows];
}

/** The markdown of the `units` section (below its heading). */
export function unitsSection(docs: DocReader): string[] {
  const notCounted = refusal(() => parseServiceConfig({ ...MINIMAL_CONFIG, units: { [OTHER_UNIT]: {} } }));
  return [
    `${docs.symbolDoc(UNITS_SOURCE, 'UnitSetting')} Keyed by the unit's name, e.g. \`units: { output_tokens: { default: 1024 } }\`;`,
    `a unit no tier counts is refused (\`${notCounted?.problem.replace(/;.*$/, '') ?? '—'}\`). Each unit takes:`,
    '',
    table(unitRows(docs)),
    '',
    '#### Usage sources',
    '',
    docs.symbolDoc(USAGE_SOURCE, 'UsageSource'),
    '',
    '| Shape | Allowed |',
    '| --- | --- |',
    ...sourceShapes(),
    '',
    `What the worker reads from an answer, in the words of \`readUsage\` (${USAGE_SOURCE}):`,
    '',
    ...docs
      .symbolDoc(USAGE_SOURCE, 'readUsage')
      .split('\n')
      .map((line) => `> ${line}`),
    '',
    '#### Usage presets',
    '',
    '`usagePreset` gives these units their usage source, unless the unit sets its own `usage`, and what the provider',
    'counts of them, unless the unit sets its own `counts`.',
    docs.symbolDoc(USAGE_SOURCE, 'USAGE_PRESETS'),
    '',
    ...presetRows(),
    '',
    docs.symbolDoc(USAGE_SOURCE, 'PRESET_COUNTING'),
  ];
}
