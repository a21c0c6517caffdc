import { ownValue } from '../ownValue';
import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';
import { COST_UNIT, MAX_QUANTITY, namedUnits, type Costs, type Tier } from '../quota/tiers';
import {
  ACTUAL_COST_HEADER,
  parseUsageSource,
  PRESET_COUNTING,
  USAGE_COUNTINGS,
  USAGE_PRESET_NAMES,
  USAGE_PRESETS,
  type UsageCounting,
  type UsagePreset,
  type UsageSource,
} from './usageSources';

/** How one named unit (see `TierUnit`) is estimated before a call and read back after it. */
export interface UnitSetting {
  /**
   * The estimate reserved for a message that carries no attribute of the unit's name. Without one, such a message is
   * dead-lettered with the reason. The `cost` unit defaults to 1.
   */
  readonly default?: number;
  /**
   * Where the API's answer says what a call used (see `UsageSource`). Without one, or when the answer does not say,
   * the estimate stands. The `cost` unit reads the `x-actual-cost` header unless set otherwise; the other units take
   * their source from `usagePreset`, if it has one for them.
   */
  readonly usage?: UsageSource;
  /**
   * What the provider's limiter counts of the unit (see `UsageCounting`): `usage`, so that what a call did not use of
   * its estimate goes back to the quota once its answer is folded in; or `estimate`, for a provider that counts what
   * the request asked for and gives nothing back: the unused part then stays counted. Usage above the estimate is
   * charged either way. @default 'usage'; `input_tokens`, `output_tokens` and `tokens` take theirs from `usagePreset`
   * (`openai` counts the estimate)
   */
  readonly counts?: UsageCounting;
}

/** The settings of every named unit the lane's tiers count, defaults and preset applied. */
export type UnitSettings = Readonly<Record<string, UnitSetting>>;

const KEYS = ['default', 'usage', 'counts'];

/**
 * Validates the `units` section (per unit name, optional `default` and `usage`) and `usagePreset` against `tiers`,
 * and returns the settings of every named unit the tiers count (see {@link UnitSettings}).
 * @throws ConfigError naming the field and what is allowed: a unit no tier counts, an unknown key, a default that is
 * not an integer from 0 to 1e12, a usage source of the wrong shape, an unknown preset.
 */
export function parseUnitSettings(
  input: unknown,
  preset: unknown,
  tiers: readonly Tier[],
  fields = { units: 'units', usagePreset: 'usagePreset' },
): UnitSettings {
  const presetName = presetOf(preset, fields.usagePreset);
  const fromPreset: PresetEntries = {
    sources: presetName === undefined ? {} : USAGE_PRESETS[presetName],
    counting: presetName === undefined ? {} : PRESET_COUNTING[presetName],
  };
  const counted = namedUnits(tiers);
  const raw = unitsSectionOf(input, counted, fields.units);
  const settings = counted.map(
    (unit) => [unit, unitSettingOf(unit, ownValue(raw, unit), fromPreset, `${fields.units}.${unit}`)] as const,
  );
  return Object.freeze(Object.fromEntries(settings));
}

/** What a preset gives the units it knows: their usage sources, and what its provider counts of them. */
interface PresetEntries {
  readonly sources: Readonly<Record<string, UsageSource>>;
  readonly counting: Readonly<Record<string, UsageCounting>>;
}

/** The preset `preset` names, if any. @throws ConfigError for an unknown preset. */
function presetOf(preset: unknown, field: string): UsagePreset | undefined {
  if (preset !== undefined && !(USAGE_PRESET_NAMES as readonly unknown[]).includes(preset)) {
    throw new ConfigError(
      field,
      `must be one of ${USAGE_PRESET_NAMES.map((p) => `'${p}'`).join(', ')}; got ${describeValue(preset)}`,
    );
  }
  return preset as UsagePreset | undefined;
}

/**
 * The `units` section as a record (empty when left out).
 * @throws ConfigError for a section that is not an object, or a unit that no tier counts (`counted` are those that are).
 */
function unitsSectionOf(input: unknown, counted: readonly string[], field: string): Record<string, unknown> {
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    throw new ConfigError(
      field,
      `must be an object keyed by unit name, e.g. {"output_tokens": {"default": 1024}}; got ${describeValue(input)}`,
    );
  }
  const raw = (input ?? {}) as Record<string, unknown>;
  for (const unit of Object.keys(raw)) {
    if (!counted.includes(unit)) {
      throw new ConfigError(
        `${field}.${unit}`,
        `no quota tier counts this unit; the tiers count ${counted.length === 0 ? 'requests only' : counted.map((u) => `'${u}'`).join(', ')}`,
      );
    }
  }
  return raw;
}

/**
 * The frozen setting of `unit` from its entry `given` in the `units` section (at `field`), with the unit's defaults
 * and what the preset gives it (`fromPreset`) filled in.
 * @throws ConfigError for an entry that is not an object, an unknown key, a bad default, a bad usage source or a bad
 * counting.
 */
function unitSettingOf(unit: string, given: unknown, fromPreset: PresetEntries, field: string): UnitSetting {
  const record = unitEntryOf(given ?? {}, field);
  const estimate = record.default ?? (unit === COST_UNIT ? 1 : undefined);
  if (
    estimate !== undefined &&
    (typeof estimate !== 'number' || !Number.isInteger(estimate) || estimate < 0 || estimate > MAX_QUANTITY)
  ) {
    throw new ConfigError(
      `${field}.default`,
      `must be an integer from 0 to ${MAX_QUANTITY}; got ${describeValue(estimate)}`,
    );
  }
  const usage =
    record.usage === undefined
      ? (ownValue(fromPreset.sources, unit) ?? (unit === COST_UNIT ? { header: ACTUAL_COST_HEADER } : undefined))
      : parseUsageSource(record.usage, `${field}.usage`);
  const counts = record.counts ?? ownValue(fromPreset.counting, unit);
  if (counts !== undefined && !(USAGE_COUNTINGS as readonly unknown[]).includes(counts)) {
    throw new ConfigError(
      `${field}.counts`,
      `must be one of ${USAGE_COUNTINGS.map((c) => `'${c}'`).join(', ')} (what the provider counts of the unit); got ${describeValue(counts)}`,
    );
  }
  return Object.freeze({
    ...(estimate === undefined ? {} : { default: estimate }),
    ...(usage === undefined ? {} : { usage }),
    ...(counts === undefined ? {} : { counts: counts as UsageCounting }),
  });
}

/** One unit's entry as a record. @throws ConfigError for an entry that is not an object, or an unknown key. */
function unitEntryOf(given: unknown, field: string): Record<string, unknown> {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new ConfigError(
      field,
      `must be an object with optional keys ${KEYS.join(', ')}; got ${describeValue(given)}`,
    );
  }
  const record = given as Record<string, unknown>;
  for (const key of Object.keys(record))
    if (!KEYS.includes(key))
      throw new ConfigError(`${field}.${key}`, `unknown key; allowed keys are ${KEYS.join(', ')}`);
  return record;
}

/**
 * The usage the provider counts of each unit `usage` reports, for a call that reserved `reserved`: the usage itself,
 * or for a unit that counts the estimate (see {@link UnitSetting.counts}) never less than the estimate, so that what
 * the call did not use is not handed back. A unit `usage` leaves out is left out: its estimate stands anyway.
 */
export function countedUsage(units: UnitSettings, reserved: Costs, usage: Costs): Costs {
  return Object.fromEntries(
    Object.entries(usage).map(([unit, used]) => [
      unit,
      ownValue(units, unit)?.counts === 'estimate' ? Math.max(used, ownValue(reserved, unit) ?? 0) : used,
    ]),
  );
}

/**
 * Whether a call's answer may give part of its estimate of a unit of `setting` back: the unit reads its usage from the
 * answer (see {@link UnitSetting.usage}), and its provider counts the usage (see {@link UnitSetting.counts}).
 */
export function handsBack(setting: UnitSetting | undefined): boolean {
  return setting?.usage !== undefined && setting.counts !== 'estimate';
}

/** The usage source of each unit that has one. */
export function usageSourcesOf(units: UnitSettings): Readonly<Record<string, UsageSource>> {
  return Object.fromEntries(
    Object.entries(units).flatMap(([unit, { usage }]) => (usage === undefined ? [] : [[unit, usage]])),
  );
}
