import { ownValue } from '../ownValue';
import { ConfigError } from '../../errors';
import { describeValue } from '../describeValue';
import { COST_UNIT, MAX_QUANTITY, namedUnits, type Tier } from '../quota/tiers';
import {
  ACTUAL_COST_HEADER,
  parseUsageSource,
  USAGE_PRESET_NAMES,
  USAGE_PRESETS,
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
}

/** The settings of every named unit the lane's tiers count, defaults and preset applied. */
export type UnitSettings = Readonly<Record<string, UnitSetting>>;

const KEYS = ['default', 'usage'];

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
  const presetSources = presetSourcesOf(preset, fields.usagePreset);
  const counted = namedUnits(tiers);
  const raw = unitsSectionOf(input, counted, fields.units);
  const settings = counted.map(
    (unit) => [unit, unitSettingOf(unit, ownValue(raw, unit), presetSources, `${fields.units}.${unit}`)] as const,
  );
  return Object.freeze(Object.fromEntries(settings));
}

/** The usage sources of the preset `preset` names (none without one). @throws ConfigError for an unknown preset. */
function presetSourcesOf(preset: unknown, field: string): Readonly<Record<string, UsageSource>> {
  if (preset !== undefined && !(USAGE_PRESET_NAMES as readonly unknown[]).includes(preset)) {
    throw new ConfigError(
      field,
      `must be one of ${USAGE_PRESET_NAMES.map((p) => `'${p}'`).join(', ')}; got ${describeValue(preset)}`,
    );
  }
  return preset === undefined ? {} : USAGE_PRESETS[preset as UsagePreset];
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
 * and the preset's source (`presetSources`) filled in.
 * @throws ConfigError for an entry that is not an object, an unknown key, a bad default or a bad usage source.
 */
function unitSettingOf(
  unit: string,
  given: unknown,
  presetSources: Readonly<Record<string, UsageSource>>,
  field: string,
): UnitSetting {
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
      ? (ownValue(presetSources, unit) ?? (unit === COST_UNIT ? { header: ACTUAL_COST_HEADER } : undefined))
      : parseUsageSource(record.usage, `${field}.usage`);
  return Object.freeze({
    ...(estimate === undefined ? {} : { default: estimate }),
    ...(usage === undefined ? {} : { usage }),
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

/** The usage source of each unit that has one. */
export function usageSourcesOf(units: UnitSettings): Readonly<Record<string, UsageSource>> {
  return Object.fromEntries(
    Object.entries(units).flatMap(([unit, { usage }]) => (usage === undefined ? [] : [[unit, usage]])),
  );
}
