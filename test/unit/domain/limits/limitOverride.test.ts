import {
  limitChanges,
  overriddenTiers,
  overrideProblem,
  OverrideInForce,
} from '../../../../lib/domain/limits/limitOverride';
import { isLimitOverrideJSON, type LimitOverrideJSON } from '../../../../lib/domain/limits/limitOverrideJSON';
import { settlementShards } from '../../../../lib/domain/quota/settlementShards';
import { parseTiers, tierLabel, type TierKey } from '../../../../lib/domain/quota/tiers';

const T0 = Date.UTC(2026, 10, 29, 12);
/** 10 requests a second, 500 a minute, 90 000 tokens a minute, 20 000 requests a day: one settlement shard. */
const TIERS = parseTiers([
  { limit: 10, per: 'second' },
  { limit: 500, per: 'minute' },
  { limit: 90_000, per: 'minute', unit: 'tokens' },
  { limit: 20_000, per: 'day' },
]);

const override = (tiers: Partial<Record<TierKey, number>>): LimitOverrideJSON => ({ v: 1, tiers, by: 'alice', at: T0 });
const labels = (tiers: ReturnType<typeof overriddenTiers>) => tiers.map(tierLabel);

describe('limitChanges', () => {
  it('lists the tiers whose limit differs between two overrides, with both limits, in the configured order', () => {
    const before = overriddenTiers(TIERS, override({ 'second:requests': 5, 'day:requests': 100 }));
    const after = overriddenTiers(TIERS, override({ 'minute:tokens': 120_000, 'day:requests': 100 }));

    expect(limitChanges(TIERS, before, after).map(({ tier, from, to }) => [tierLabel(tier), from, to])).toEqual([
      ['10/second', 5, 10],
      ['90000 tokens/minute', 90_000, 120_000],
    ]);
    expect(limitChanges(TIERS, after, after)).toEqual([]);
  });
});

describe('overriddenTiers', () => {
  it('gives each tier the override names its limit, lower or higher, and keeps the kind and order of every tier', () => {
    const tiers = overriddenTiers(
      TIERS,
      override({ 'minute:requests': 300, 'minute:tokens': 120_000, 'day:requests': 5 }),
    );

    expect(labels(tiers)).toEqual(['10/second', '300/minute', '120000 tokens/minute', '5/day']);
    expect(tiers.map((t) => t.kind)).toEqual(['sliding', 'sliding', 'sliding', 'calendar']);
  });

  it('leaves the configured tiers as they are without an override, and ignores a tier no longer configured', () => {
    expect(overriddenTiers(TIERS, undefined)).toBe(TIERS);
    expect(labels(overriddenTiers(TIERS, override({ 'hour:requests': 1 })))).toEqual(labels(TIERS));
  });

  it('drops the raises, keeping the lowered limits, when a deploy left them faster than its settlement shards carry', () => {
    // 10 a second for one shard of 25 appends a second: a raise to 100 a second would need four.
    expect(settlementShards(TIERS)).toBe(1);
    const tiers = overriddenTiers(
      TIERS,
      override({ 'second:requests': 100, 'minute:requests': 6_000, 'day:requests': 9 }),
    );

    expect(labels(tiers)).toEqual(['10/second', '500/minute', '90000 tokens/minute', '9/day']);
  });
});

describe('overrideProblem', () => {
  it('accepts whole limits of configured tiers, lower or higher within what the shards carry', () => {
    expect(
      overrideProblem(TIERS, { 'second:requests': 25, 'minute:requests': 1_500, 'day:requests': 1 }),
    ).toBeUndefined();
  });

  it('names a tier that is not configured, and the tiers that are', () => {
    expect(overrideProblem(TIERS, { 'hour:requests': 5 })).toBe(
      'no tier hour:requests is configured; the tiers are second:requests, minute:requests, minute:tokens, day:requests',
    );
  });

  it.each([0, -1, 2.5, 1e13, Number.NaN])('refuses the limit %p, naming the range', (limit) => {
    expect(overrideProblem(TIERS, { 'minute:requests': limit })).toBe(
      `the limit of minute:requests must be a whole number from 1 to 1000000000000; got ${String(limit)}`,
    );
  });

  it('refuses a raise whose pace of requests the deployed settlement shards do not carry, and says what they carry', () => {
    expect(overrideProblem(TIERS, { 'second:requests': 100, 'minute:requests': 6_000 })).toBe(
      'these limits allow 100 requests a second, and the settlement shards deployed for the configured tiers ' +
        '(10/second, 500/minute, 90000 tokens/minute, 20000/day) carry 25 a second: raise them so far in the ' +
        'configuration and deploy',
    );
  });
});

describe('isLimitOverrideJSON', () => {
  it('accepts what an operator sets, and refuses a limit that is no whole number or a missing name or time', () => {
    expect(isLimitOverrideJSON(override({ 'minute:requests': 5 }))).toBe(true);
    expect(isLimitOverrideJSON({ ...override({}), tiers: { 'minute:requests': '5' } })).toBe(false);
    expect(isLimitOverrideJSON({ ...override({}), tiers: { 'minute:requests': 0 } })).toBe(false);
    expect(isLimitOverrideJSON({ v: 1, tiers: {}, at: T0 })).toBe(false);
    expect(isLimitOverrideJSON({ v: 1, tiers: {}, by: 'alice' })).toBe(false);
    expect(isLimitOverrideJSON({ v: 2, tiers: {}, by: 'alice', at: T0 })).toBe(false);
    expect(isLimitOverrideJSON(null)).toBe(false);
  });
});

describe('OverrideInForce', () => {
  it('starts the run on the tiers the override sets, and caps them at once when a lower limit comes', () => {
    const inForce = new OverrideInForce(TIERS, override({ 'minute:requests': 800 }));
    expect(labels(inForce.tiers)).toEqual(['10/second', '800/minute', '90000 tokens/minute', '20000/day']);
    expect(inForce.limits()).toEqual([10, 800, 90_000, 20_000]);

    const changes = inForce.update(override({ 'minute:requests': 200, 'second:requests': 5 }));

    expect(changes.map(({ tier, from, to, when }) => [tierLabel(tier), from, to, when])).toEqual([
      ['10/second', 10, 5, 'now'],
      ['500/minute', 800, 200, 'now'],
    ]);
    expect(inForce.limits()).toEqual([5, 200, 90_000, 20_000]);
  });

  it('leaves a higher limit to the next run: the run keeps the tiers it started with', () => {
    const inForce = new OverrideInForce(TIERS, override({ 'minute:requests': 200 }));

    const changes = inForce.update(undefined);

    expect(changes.map(({ from, to, when, meanwhile }) => [from, to, when, meanwhile])).toEqual([
      [200, 500, 'next-run', 200],
    ]);
    expect(inForce.limits()).toEqual([10, 200, 90_000, 20_000]);
    expect(inForce.override).toBeUndefined();
  });

  it('holds a limit lowered during the run until it is raised past the run’s own again', () => {
    const inForce = new OverrideInForce(TIERS, undefined);
    inForce.update(override({ 'minute:requests': 100 }));

    const changes = inForce.update(override({ 'minute:requests': 400 }));

    expect(changes.map(({ from, to, when }) => [from, to, when])).toEqual([[100, 400, 'now']]);
    expect(inForce.limits()).toEqual([10, 400, 90_000, 20_000]);
    expect(inForce.update(override({ 'minute:requests': 400 }))).toEqual([]);
  });
});
