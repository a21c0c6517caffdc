import fc from 'fast-check';
import { parseServiceConfig, type ServiceConfig } from '../../lib/config';
import { CONFIG_ENV, serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import { COST_UNIT, MAX_QUANTITY, PERIODS, REQUESTS } from '../../lib/domain/quota/tiers';
import { ConfigError } from '../../lib/errors';
import { escapeRegExp } from '../helpers/escapeRegExp';
import { thrown } from '../helpers/thrown';

// Configuration, fuzzed (issue 5): take a valid configuration, break exactly one setting, and the parser must refuse
// it at start-up with a ConfigError naming that setting and what it allows, both as an object (`parseServiceConfig`)
// and through the environment (`serviceConfigFromEnv`, naming the variable). The settings are not listed here: the
// sections are what `parseServiceConfig` fills in by default, their keys are the defaults' keys, and each numeric
// setting's range is the one its own error message states (checked against what the parser really accepts). A new
// setting or section is covered without touching this file.

// --- What the configuration holds, derived from the parser's defaults -------------------------------------------

type Raw = Record<string, unknown>;

const MINIMAL: Raw = { quotas: [{ limit: 10, per: 'second' }] };
const DEFAULTS = parseServiceConfig(MINIMAL);

function isRecord(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sections of settings with defaults (pacing, circuit, retry, orchestrator, …): every non-array object of the config
 * but `units`, which is keyed by unit name, not by setting (its rules are tested with `unitSettings`).
 */
const SECTIONS = Object.keys(DEFAULTS).filter(
  (key) => key !== 'units' && isRecord(DEFAULTS[key as keyof ServiceConfig]),
);
/** Top-level keys that have no default, and so are missing from the parsed minimal configuration. */
const OPTIONAL_TOP_KEYS = ['maxInFlight', 'usagePreset'];
const TOP_KEYS = [...Object.keys(DEFAULTS), ...OPTIONAL_TOP_KEYS];

function sectionDefaults(section: string): Raw {
  return DEFAULTS[section as keyof ServiceConfig] as unknown as Raw;
}

/** A numeric setting and the range its error message states. */
interface NumericSetting {
  readonly section: string;
  readonly key: string;
  readonly field: string;
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
}

const RANGE_TEXT =
  /^must be (an integer|a number) from (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?) to (-?\d+(?:\.\d+)?(?:e[+-]?\d+)?); got /;

/** The range a setting's error message states when it is given a string: `undefined` if it states none. */
function statedRange(section: string, key: string): NumericSetting | undefined {
  const error = thrown(ConfigError, () => parseServiceConfig({ ...MINIMAL, [section]: { [key]: 'a string' } }));
  const match = RANGE_TEXT.exec(error.problem);
  if (error.field !== `${section}.${key}` || match === null) return undefined;
  return {
    section,
    key,
    field: `${section}.${key}`,
    min: Number(match[2]),
    max: Number(match[3]),
    integer: match[1] === 'an integer',
  };
}

/** Every setting whose default is a number, with its range where the message states one. */
const NUMERIC_KEYS = SECTIONS.flatMap((section) =>
  Object.entries(sectionDefaults(section))
    .filter(([, value]) => typeof value === 'number')
    .map(([key]) => ({ section, key })),
);
const NUMERIC: readonly NumericSetting[] = NUMERIC_KEYS.map(({ section, key }) => statedRange(section, key)).filter(
  (s): s is NumericSetting => s !== undefined,
);
/**
 * Settings whose default is not a number (e.g. a policy name): only refusals of wrong values are checked. A map keyed
 * by name (`limits.units`, by header family) is left out, as `units` is: its rules are tested with its section.
 */
const OTHER_KEYS = SECTIONS.flatMap((section) =>
  Object.entries(sectionDefaults(section))
    .filter(([, value]) => typeof value !== 'number' && !isRecord(value))
    .map(([key, value]) => ({ section, key, value })),
);

/** The variable holding each top-level key (`orchestrator` → `ORCHESTRATOR`). */
function envName(top: string): string {
  const name = (CONFIG_ENV as Record<string, string>)[top];
  if (name === undefined) throw new Error(`no environment variable for '${top}'`);
  return name;
}

/** A field path as `serviceConfigFromEnv` names it: `orchestrator.leaseTtlMs` → `ORCHESTRATOR.leaseTtlMs`. */
function envField(field: string): string {
  const top = /^[A-Za-z]+/.exec(field)?.[0] ?? field;
  return envName(top) + field.slice(top.length);
}

/** Top-level keys read from the environment as plain text: those whose default is a string (`lane`, `timeZone`), and `usagePreset`, which has none. */
const TEXT_KEYS = [
  ...TOP_KEYS.filter((key) => typeof DEFAULTS[key as keyof ServiceConfig] === 'string'),
  'usagePreset',
];

/** The environment holding a configuration object: text keys as they are (when strings), everything else as JSON. */
function envOf(input: Raw): Env {
  return Object.fromEntries(
    Object.entries(input).map(([key, value]) => [
      envName(key),
      TEXT_KEYS.includes(key) && typeof value === 'string' ? value : JSON.stringify(value),
    ]),
  );
}

/** -0 as 0: JSON, and so the environment, cannot tell them apart. */
function plain(value: number): number {
  return value === 0 ? 0 : value;
}

// --- Arbitraries: valid configurations --------------------------------------------------------------------------

function inRange(setting: NumericSetting): fc.Arbitrary<number> {
  const { min, max, integer } = setting;
  if (integer)
    return fc.oneof(
      fc.constantFrom(min, max),
      fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }),
      fc.double({ min, max, noNaN: true }).map((v) => plain(Math.floor(v))),
    );
  return fc.oneof(fc.constantFrom(min, max), fc.double({ min, max, noNaN: true }).map(plain));
}

/** A section with each numeric setting either left out or set within its range. */
function sectionArbitrary(section: string): fc.Arbitrary<Raw> {
  const model: Record<string, fc.Arbitrary<number>> = {};
  for (const setting of NUMERIC.filter((s) => s.section === section)) model[setting.key] = inRange(setting);
  return fc.record(model, { requiredKeys: [] });
}

const period = fc.constantFrom(...PERIODS);
/** Requests, the `cost` unit, and other named units (any SQS attribute name may name one). */
const unit = fc.constantFrom(REQUESTS, COST_UNIT, 'input_tokens', 'output_tokens', 'tokens', 'gpu-seconds.v2');

/** One to five tiers, one per period and unit, `unit` sometimes left to its default. */
const tiers = fc
  .uniqueArray(fc.record({ per: period, unit }), { minLength: 1, maxLength: 5, selector: (t) => `${t.per}/${t.unit}` })
  .chain((kinds) =>
    fc.tuple(
      ...kinds.map((kind) =>
        fc
          .record({
            limit: fc.oneof(fc.integer({ min: 1, max: 1_000_000 }), fc.constantFrom(1, MAX_QUANTITY)),
            implicitUnit: fc.boolean(),
          })
          .map(({ limit, implicitUnit }) =>
            implicitUnit && kind.unit === 'requests' ? { limit, per: kind.per } : { limit, ...kind },
          ),
      ),
    ),
  );

const TIME_ZONES = [
  'UTC',
  'America/New_York',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'Etc/GMT+12',
];

/** A configuration object `parseServiceConfig` accepts, with any section or optional key left out. */
const validConfig: fc.Arbitrary<Raw> = fc
  .record(
    {
      lane: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
      timeZone: fc.constantFrom(...TIME_ZONES),
      quotas: tiers,
      maxInFlight: fc.integer({ min: 1, max: 1000 }),
      usagePreset: fc.constantFrom('anthropic', 'openai'),
      ...Object.fromEntries(SECTIONS.map((section) => [section, sectionArbitrary(section)])),
    },
    { requiredKeys: ['quotas'] },
  )
  .filter((config) => {
    try {
      parseServiceConfig(config); // the cross-field rules (e.g. flushIntervalMs * 3 <= leaseTtlMs)
      return true;
    } catch {
      return false;
    }
  });

// --- Arbitraries: one setting broken ----------------------------------------------------------------------------

/** A broken configuration, the field the error must name, and what its message must say about the allowed values. */
interface Break {
  readonly input: Raw;
  readonly field: string;
  readonly allowed: RegExp;
  /** Words the message must hold besides, in any order (e.g. every allowed key). */
  readonly mentions?: readonly string[];
  /** Whether the broken value survives JSON (NaN, Infinity and `undefined` do not), so the break can go through the environment. */
  readonly json: boolean;
  /** Whether the broken value can be written as an environment variable (a string for `lane` and `timeZone`, not empty). */
  readonly env: boolean;
}

function isJson(value: unknown): boolean {
  return (
    value !== undefined &&
    JSON.stringify(value) !== undefined &&
    JSON.stringify(JSON.parse(JSON.stringify(value))) === JSON.stringify(value) &&
    !(typeof value === 'number' && !Number.isFinite(value))
  );
}

/** Values of the wrong type for a number. */
const notANumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer().map(String),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.integer().map((n) => [n]),
);

/** A value outside a numeric setting's range: too low, too high, fractional where whole numbers are required, NaN, ±Infinity, wrong type. */
function outOfRange(setting: NumericSetting): fc.Arbitrary<unknown> {
  const { min, max, integer } = setting;
  const delta = fc.oneof(fc.constant(1), fc.double({ min: 1e-6, max: 1e12, noNaN: true }));
  const options: fc.Arbitrary<unknown>[] = [
    delta.map((d) => min - d).filter((v) => v < min),
    delta.map((d) => max + d).filter((v) => v > max),
    fc.constantFrom(
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      -Number.MAX_VALUE,
      Number.MAX_VALUE,
    ),
    notANumber,
  ];
  if (integer) options.push(fc.double({ min, max, noNaN: true }).filter((v) => !Number.isInteger(v)));
  return fc.oneof(...options);
}

function numericBreak(config: Raw): fc.Arbitrary<Break> {
  return fc.constantFrom(...NUMERIC).chain((setting) =>
    outOfRange(setting).map((value) => {
      const section = isRecord(config[setting.section]) ? (config[setting.section] as Raw) : {};
      const kind = setting.integer ? 'an integer' : 'a number';
      return {
        input: { ...config, [setting.section]: { ...section, [setting.key]: value } },
        field: setting.field,
        allowed: new RegExp(
          `^must be ${kind} from ${escapeRegExp(String(setting.min))} to ${escapeRegExp(String(setting.max))}; got `,
        ),
        json: isJson(value),
        env: true,
      };
    }),
  );
}

/** Keys no section knows; the prototype's names catch a lookup that is not an own-property one. */
const strangeKey = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'toString',
    'valueOf',
    'hasOwnProperty',
    'isPrototypeOf',
    'LEASETTLMS',
    'lease_ttl_ms',
    ' leaseTtlMs',
    'burstfraction',
  ),
);

function unknownKeyBreak(config: Raw): fc.Arbitrary<Break> {
  return fc
    .tuple(fc.constantFrom(...SECTIONS), strangeKey, fc.integer({ min: 0, max: 1000 }))
    .filter(([section, key]) => !Object.keys(sectionDefaults(section)).includes(key))
    .map(([section, key, value]): Break => {
      const given = isRecord(config[section]) ? (config[section] as Raw) : {};
      // Object.fromEntries makes `__proto__` an own key, as JSON.parse does.
      const broken = Object.fromEntries([...Object.entries(given), [key, value]]);
      return {
        input: { ...config, [section]: broken },
        field: `${section}.${key}`,
        allowed: /^unknown key; allowed keys are /,
        mentions: Object.keys(sectionDefaults(section)),
        json: true,
        env: true,
      };
    });
}

/** A setting whose default is not a number (a word, a flag) given a value of another type, or an unknown word. */
function otherSettingBreak(config: Raw): fc.Arbitrary<Break> {
  const values = fc.oneof(
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant({}),
    fc.string().map((s) => `not-${s}`),
  );
  return fc
    .tuple(fc.constantFrom(...OTHER_KEYS), values)
    .filter(([{ value: fallback }, value]) => typeof fallback !== 'boolean' || typeof value !== 'boolean')
    .map(([{ section, key }, value]) => {
      const given = isRecord(config[section]) ? (config[section] as Raw) : {};
      return {
        input: { ...config, [section]: { ...given, [key]: value } },
        field: `${section}.${key}`,
        allowed: /^must be .+; got /,
        json: true,
        env: true,
      };
    });
}

/** A whole section of the wrong type. */
function sectionBreak(config: Raw): fc.Arbitrary<Break> {
  return fc
    .tuple(
      fc.constantFrom(...SECTIONS),
      fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 })),
    )
    .map(([section, value]) => ({
      input: { ...config, [section]: value },
      field: section,
      allowed: /^must be an object with optional keys .+; got /,
      mentions: Object.keys(sectionDefaults(section)),
      json: true,
      env: true,
    }));
}

function isTimeZone(text: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: text });
    return true;
  } catch {
    return false;
  }
}

function topLevelBreak(config: Raw): fc.Arbitrary<Break> {
  const badLane = fc.oneof(
    fc.string({ maxLength: 80 }).filter((s) => !/^[A-Za-z0-9_-]{1,64}$/.test(s)),
    fc.stringMatching(/^[A-Za-z0-9_-]{65,80}$/),
    fc.constantFrom('no spaces', 'ünï', 'a/b', ''),
  );
  const badZone = fc
    .oneof(fc.string({ maxLength: 30 }), fc.constantFrom('Mars/Olympus', 'utc+1', 'Europe/Berlin ', 'GMT+25', ''))
    .filter((s) => !isTimeZone(s));
  return fc.oneof(
    badLane.map((lane) => ({
      input: { ...config, lane },
      field: 'lane',
      allowed: /^must be 1 to 64 letters, digits, '-' or '_'; got /,
      json: true,
      env: lane !== '',
    })),
    fc.oneof(fc.integer(), fc.boolean(), fc.constant({})).map((lane) => ({
      input: { ...config, lane },
      field: 'lane',
      allowed: /^must be 1 to 64 letters/,
      json: true,
      env: false,
    })),
    badZone.map((timeZone) => ({
      input: { ...config, timeZone },
      field: 'timeZone',
      allowed: /^must be an IANA time zone such as 'UTC'/,
      json: true,
      env: timeZone !== '',
    })),
    fc.oneof(fc.integer(), fc.boolean(), fc.constant([])).map((timeZone) => ({
      input: { ...config, timeZone },
      field: 'timeZone',
      allowed: /^must be an IANA time zone such as 'UTC'/,
      json: true,
      env: false,
    })),
    fc
      .oneof(
        fc.integer({ max: 0 }),
        fc.integer({ min: 1001 }),
        fc.double({ min: 1, max: 1000, noNaN: true }).filter((v) => !Number.isInteger(v)),
        fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY),
        notANumber,
      )
      .map((maxInFlight) => ({
        input: { ...config, maxInFlight },
        field: 'maxInFlight',
        allowed: /^must be an integer from 1 to 1000; got /,
        json: isJson(maxInFlight),
        env: true,
      })),
    fc
      .oneof(fc.string({ maxLength: 20 }), fc.constantFrom('Anthropic', 'gemini', 'openai ', ''))
      .filter((preset) => !['anthropic', 'openai'].includes(preset))
      .map((usagePreset) => ({
        input: { ...config, usagePreset },
        field: 'usagePreset',
        allowed: /^must be one of 'anthropic', 'openai'; got /,
        json: true,
        env: usagePreset !== '',
      })),
    strangeKey
      .filter((key) => !TOP_KEYS.includes(key))
      .map((key) => ({
        input: Object.fromEntries([...Object.entries(config), [key, 1]]),
        field: key,
        allowed: /^unknown key; allowed keys are /,
        mentions: TOP_KEYS,
        json: true,
        env: false, // the environment has no place for a key the service does not read
      })),
  );
}

const LIMIT_RULE = new RegExp(`^must be an integer from 1 to ${MAX_QUANTITY}; got `);
const PER_RULE = new RegExp(`^must be one of ${PERIODS.join(', ')}; got `);

/** A unit that cannot name a unit, and the rule its refusal states. */
const badUnit: fc.Arbitrary<{ readonly unit: unknown; readonly rule: RegExp }> = fc.oneof(
  fc
    .oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.constant({}))
    .map((unit) => ({ unit, rule: /^must be 'requests' or the name of a unit such as 'cost'/ })),
  fc
    .oneof(fc.string({ maxLength: 20 }), fc.constantFrom('', 'my tokens', 'tokens/min', 'ünits', 'x'.repeat(257)))
    .filter((name) => !/^[A-Za-z0-9_.-]{1,256}$/.test(name))
    .map((unit) => ({
      unit,
      rule: /^must be 1 to 256 of the characters A-Z, a-z, 0-9, _, - and \. \(an SQS message attribute name\); got /,
    })),
  fc
    .constantFrom('.tokens', 'tokens.', 'input..tokens')
    .map((unit) => ({ unit, rule: /^must not start or end with a period, nor hold two in a row/ })),
  fc
    .constantFrom('AWS.tokens', 'amazon.cost', 'Aws.x')
    .map((unit) => ({ unit, rule: /^must not start with 'AWS\.' or 'Amazon\.'/ })),
  fc
    .constantFrom('idempotencyKey', 'attempt', 'reason', 'sourceQueue', 'originalMessageId', 'dispatchId', 'apiError')
    .map((unit) => ({ unit, rule: /^is a message attribute of the service itself/ })),
);

/** One tier broken: its limit, per or unit wrong or missing, an unknown key, not an object, or a duplicate; or the list itself. */
function quotaBreak(config: Raw): fc.Arbitrary<Break> {
  const quotas = config.quotas as Raw[];
  return fc.nat(quotas.length - 1).chain((i) => {
    const tier = quotas[i] as Raw;
    const withTier = (changed: unknown): Raw => ({ ...config, quotas: quotas.map((t, j) => (j === i ? changed : t)) });
    const at = `quotas[${i}]`;
    const badLimit = fc.oneof(
      fc.integer({ max: 0 }),
      fc.double({ min: 1, max: 1e6, noNaN: true }).filter((v) => !Number.isInteger(v)),
      fc.constantFrom(MAX_QUANTITY + 1, 1e15, Number.NaN, Number.POSITIVE_INFINITY, undefined),
      notANumber,
    );
    const badPer = fc
      .oneof(
        fc.string(),
        fc.integer(),
        fc.constant(null),
        fc.constantFrom('Second', 'seconds', 'week', 'year', 'tokens', 'request'),
      )
      .filter((w) => !(PERIODS as readonly unknown[]).includes(w));
    const without = (key: string): Raw => Object.fromEntries(Object.entries(tier).filter(([name]) => name !== key));
    const withoutLimit = without('limit');
    const withoutPer = without('per');
    return fc.oneof(
      badLimit.map((limit): Break => ({
        input: withTier(limit === undefined ? withoutLimit : { ...tier, limit }),
        field: `${at}.limit`,
        allowed: LIMIT_RULE,
        json: limit === undefined || isJson(limit),
        env: true,
      })),
      badPer.map((per): Break => ({
        input: withTier({ ...tier, per }),
        field: `${at}.per`,
        allowed: PER_RULE,
        json: true,
        env: true,
      })),
      fc.constant<Break>({ input: withTier(withoutPer), field: `${at}.per`, allowed: PER_RULE, json: true, env: true }),
      badUnit.map(({ unit: u, rule }): Break => ({
        input: withTier({ ...tier, unit: u }),
        field: `${at}.unit`,
        allowed: rule,
        json: true,
        env: true,
      })),
      strangeKey
        .filter((key) => !['limit', 'per', 'unit'].includes(key))
        .map((key): Break => ({
          input: withTier(Object.fromEntries([...Object.entries(tier), [key, 1]])),
          field: `${at}.${key}`,
          allowed: /^unknown key; allowed keys are limit, per, unit$/,
          json: true,
          env: true,
        })),
      fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.constant([tier])).map((value): Break => ({
        input: withTier(value),
        field: at,
        allowed: /^must be an object \{"limit", "per", "unit"\?\}; got /,
        json: true,
        env: true,
      })),
      fc.constant<Break>({
        input: { ...config, quotas: [...quotas, { ...tier }] },
        field: `quotas[${quotas.length}]`,
        allowed: new RegExp(`^duplicates ${escapeRegExp(at)} `),
        json: true,
        env: true,
      }),
      fc.constant<Break>({
        input: { ...config, quotas: [] },
        field: 'quotas',
        allowed: /^must hold at least one tier/,
        json: true,
        env: true,
      }),
      fc
        .oneof(fc.constant(null), fc.integer(), fc.constant({ limit: 10, per: 'second' }), fc.string())
        .map((value): Break => ({
          input: { ...config, quotas: value },
          field: 'quotas',
          allowed: /^must be a non-empty JSON array of tiers/,
          json: true,
          env: true,
        })),
    );
  });
}

/** A valid configuration with exactly one thing wrong in it. */
const brokenConfig: fc.Arbitrary<Break> = validConfig.chain((config) =>
  fc.oneof(
    numericBreak(config),
    numericBreak(config),
    unknownKeyBreak(config),
    ...(OTHER_KEYS.length === 0 ? [] : [otherSettingBreak(config)]),
    sectionBreak(config),
    topLevelBreak(config),
    quotaBreak(config),
  ),
);

/** The refusal `run` throws, described for a failed property: field and message must both say what is wrong. */
function expectRefusal(run: () => unknown, field: string, allowed: RegExp, mentions: readonly string[] = []): void {
  const error = thrown(ConfigError, run);
  expect({ field: error.field, message: error.message }).toEqual({
    field,
    message: expect.stringMatching(new RegExp(`^${escapeRegExp(field)}: ${allowed.source.replace(/^\^/, '')}`)),
  });
  expect(mentions.filter((word) => !error.problem.includes(word))).toEqual([]);
}

// --- The properties ---------------------------------------------------------------------------------------------

describe('the configuration, fuzzed', () => {
  it('derives its settings from the defaults: every section and numeric setting is found, and each message states a range', () => {
    expect(SECTIONS.length).toBeGreaterThanOrEqual(4);
    expect(SECTIONS).toEqual(expect.arrayContaining(['pacing', 'circuit', 'retry', 'orchestrator']));
    expect(NUMERIC_KEYS.length).toBeGreaterThanOrEqual(20);
    expect(NUMERIC.map((s) => s.field)).toEqual(NUMERIC_KEYS.map(({ section, key }) => `${section}.${key}`));
    expect(NUMERIC.map((s) => s.field)).toContain('orchestrator.leaseTtlMs');
  });

  it('states ranges that hold each setting’s default, and whose ends the parser accepts', () => {
    for (const setting of NUMERIC) {
      const value = sectionDefaults(setting.section)[setting.key] as number;
      expect({ field: setting.field, inRange: value >= setting.min && value <= setting.max }).toEqual({
        field: setting.field,
        inRange: true,
      });
      // Each end alone may break a cross-field rule (a lease of 5 s with the default 2 s flush): the error then names
      // another field, or names another setting it depends on.
      const others = Object.keys(sectionDefaults(setting.section)).filter((key) => key !== setting.key);
      for (const end of [setting.min, setting.max]) {
        try {
          parseServiceConfig({ ...MINIMAL, [setting.section]: { [setting.key]: end } });
        } catch (error) {
          expect(error).toBeInstanceOf(ConfigError);
          const { field, problem } = error as ConfigError;
          const dependsOn = others.filter((key) => problem.includes(key));
          expect({
            setting: setting.field,
            end,
            refusedAs: field === setting.field && dependsOn.length === 0 ? problem : 'another rule',
          }).toEqual({ setting: setting.field, end, refusedAs: 'another rule' });
        }
      }
    }
  });

  describe('parseServiceConfig', () => {
    it('refuses a valid configuration with one setting broken, naming the setting and what it allows', () => {
      fc.assert(
        fc.property(brokenConfig, ({ input, field, allowed, mentions }) => {
          expectRefusal(() => parseServiceConfig(input), field, allowed, mentions);
        }),
        { numRuns: 400 },
      );
    });

    it('refuses a numeric setting out of its range in every section, naming it with the range', () => {
      for (const setting of NUMERIC) {
        fc.assert(
          fc.property(outOfRange(setting), (value) => {
            expectRefusal(
              () => parseServiceConfig({ ...MINIMAL, [setting.section]: { [setting.key]: value } }),
              setting.field,
              new RegExp(`^must be (an integer|a number) from ${escapeRegExp(String(setting.min))} to `),
            );
          }),
          { numRuns: 30 },
        );
      }
    });

    it('refuses a key no section knows, even one named like a property of every object', () => {
      for (const section of SECTIONS) {
        for (const key of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
          const input = { ...MINIMAL, [section]: JSON.parse(`{${JSON.stringify(key)}: 5}`) as Raw };
          expectRefusal(() => parseServiceConfig(input), `${section}.${key}`, /^unknown key; allowed keys are /);
        }
      }
    });

    describe('refuses settings that contradict each other, naming the one to change', () => {
      const integers = (min: number, max: number) => fc.integer({ min, max });

      it('orchestrator.flushIntervalMs above a third of orchestrator.leaseTtlMs', () => {
        const pair = integers(5_000, 179_999).chain((lease) =>
          integers(Math.floor(lease / 3) + 1, 60_000).map((flush) => ({ lease, flush })),
        );
        fc.assert(
          fc.property(pair, ({ lease, flush }) => {
            expectRefusal(
              () => parseServiceConfig({ ...MINIMAL, orchestrator: { leaseTtlMs: lease, flushIntervalMs: flush } }),
              'orchestrator.flushIntervalMs',
              new RegExp(`^must be at most a third of orchestrator.leaseTtlMs \\(${lease}\\).*; got ${flush}$`),
            );
          }),
        );
      });

      it('orchestrator.visibilityTimeoutMs not above orchestrator.workerTimeoutMs', () => {
        const pair = integers(1_000, 900_000).chain((worker) =>
          integers(1_000, worker).map((visibility) => ({ worker, visibility })),
        );
        fc.assert(
          fc.property(pair, ({ worker, visibility }) => {
            expectRefusal(
              () =>
                parseServiceConfig({
                  ...MINIMAL,
                  orchestrator: { workerTimeoutMs: worker, visibilityTimeoutMs: visibility },
                }),
              'orchestrator.visibilityTimeoutMs',
              new RegExp(`^must exceed orchestrator.workerTimeoutMs \\(${worker}\\).*; got ${visibility}$`),
            );
          }),
        );
      });

      it('circuit.maxOpenSeconds below circuit.openSeconds, given or left to its default', () => {
        const given = integers(2, 3_600).chain((open) =>
          integers(1, open - 1).map((maxOpen) => ({ open, maxOpen: maxOpen as number | undefined })),
        );
        const defaulted = integers(301, 3_600).map((open) => ({ open, maxOpen: undefined as number | undefined }));
        fc.assert(
          fc.property(fc.oneof(given, defaulted), ({ open, maxOpen }) => {
            const circuit =
              maxOpen === undefined ? { openSeconds: open } : { openSeconds: open, maxOpenSeconds: maxOpen };
            expectRefusal(
              () => parseServiceConfig({ ...MINIMAL, circuit }),
              'circuit.maxOpenSeconds',
              new RegExp(
                `^must be a number from ${open} \\(openSeconds\\) to 86400; got ${maxOpen ?? 300}${maxOpen === undefined ? ' \\(the default\\)' : ''}$`,
              ),
            );
          }),
        );
      });

      it('retry.maxDelayMs below retry.baseDelayMs', () => {
        const pair = integers(2, 900_000).chain((base) =>
          integers(1, base - 1).map((maxDelay) => ({ base, maxDelay })),
        );
        fc.assert(
          fc.property(pair, ({ base, maxDelay }) => {
            expectRefusal(
              () => parseServiceConfig({ ...MINIMAL, retry: { baseDelayMs: base, maxDelayMs: maxDelay } }),
              'retry.maxDelayMs',
              new RegExp(`^must be an integer from ${base} \\(baseDelayMs\\) to 900000; got ${maxDelay}$`),
            );
          }),
        );
      });
    });

    it('accepts any valid configuration, and its result again unchanged (parse ∘ parse = parse)', () => {
      fc.assert(
        fc.property(validConfig, (input) => {
          const once = parseServiceConfig(input);
          expect(parseServiceConfig(once)).toEqual(once);
          expect(Object.isFrozen(once)).toBe(true);
        }),
      );
    });
  });

  describe('serviceConfigFromEnv', () => {
    it('refuses the same broken settings, naming the variable and the field inside it', () => {
      const throughEnv = brokenConfig.filter((b) => b.json && b.env);
      fc.assert(
        fc.property(throughEnv, ({ input, field, allowed, mentions }) => {
          expectRefusal(() => serviceConfigFromEnv(envOf(input)), envField(field), allowed, mentions);
        }),
        { numRuns: 300 },
      );
    });

    it('refuses a variable that is not JSON, naming it with the parser’s reason', () => {
      const jsonVariables = ['quotas', ...SECTIONS].map(envName);
      const notJson = fc
        .oneof(
          fc.string({ minLength: 1 }),
          fc.constantFrom(
            'NaN',
            'Infinity',
            '-Infinity',
            'undefined',
            '{leaseTtlMs: 5000}',
            "{'a':1}",
            '{"a":1,}',
            '[1,]',
            '0x10',
            'leaseTtlMs=5000',
            '{"a":1} x',
          ),
        )
        .filter((text) => {
          try {
            JSON.parse(text);
            return false;
          } catch {
            return true;
          }
        });
      fc.assert(
        fc.property(validConfig, fc.constantFrom(...jsonVariables), notJson, (config, name, text) => {
          const env = { ...envOf(config), [name]: text };
          const error = thrown(ConfigError, () => serviceConfigFromEnv(env));
          expect({ field: error.field, message: error.message }).toEqual({
            field: name,
            message: expect.stringMatching(new RegExp(`^${name}: must be JSON; \\S`)),
          });
        }),
      );
    });

    it('reads back any valid configuration written to the environment', () => {
      fc.assert(
        fc.property(validConfig, (input) => {
          expect(serviceConfigFromEnv(envOf(input))).toEqual(parseServiceConfig(input));
          const parsed = parseServiceConfig(input);
          expect(serviceConfigFromEnv(envOf(parsed as unknown as Raw))).toEqual(parsed);
        }),
      );
    });
  });
});
