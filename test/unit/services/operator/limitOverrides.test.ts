import type { LimitOverrideJSON } from '../../../../lib/domain/limits/limitOverrideJSON';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { StateFormatError } from '../../../../lib/errors';
import type { ExpectedOverride } from '../../../../lib/ports/LimitStore';
import {
  resetLimits,
  setLimits,
  type LimitOverrideDeps,
  type OverrideTarget,
} from '../../../../lib/services/operator/limitOverrides';
import { FakeClock } from '../../../../tools/memory/FakeClock';
import { MemoryLimitStore, MemoryState } from '../../../../tools/memory/MemoryStores';

const T0 = Date.UTC(2026, 10, 29, 12);
const LANE: OverrideTarget = {
  kind: 'lane',
  name: 'default',
  state: 'default',
  quotas: parseTiers([
    { limit: 10, per: 'second' },
    { limit: 500, per: 'minute' },
    { limit: 20_000, per: 'day' },
  ]),
};

function deps(limits = new MemoryLimitStore(new MemoryState())): LimitOverrideDeps & {
  readonly limits: MemoryLimitStore;
  readonly clock: FakeClock;
} {
  return { limits, clock: new FakeClock(T0) };
}

describe('setLimits', () => {
  it('stores the override with who set it and when, and says how it takes effect', async () => {
    const d = deps();

    const result = await setLimits(d, LANE, { 'minute:requests': 300, 'day:requests': 30_000 }, ' alice ');

    const override = { by: 'alice', at: T0 };
    expect(result).toEqual({
      kind: 'lane',
      name: 'default',
      action: 'set',
      at: T0,
      changed: true,
      message:
        "lane 'default': limits overridden by alice: minute:requests 300 (configured 500), day:requests 30000 " +
        '(configured 20000); the orchestrator paces at a lower limit from its next save, at a higher one from its next run',
      override: {
        ...override,
        tiers: [
          { tier: 'minute:requests', configured: 500, limit: 300 },
          { tier: 'day:requests', configured: 20_000, limit: 30_000 },
        ],
      },
    });
    await expect(d.limits.loadOverride('default')).resolves.toEqual({
      v: 1,
      tiers: { 'minute:requests': 300, 'day:requests': 30_000 },
      ...override,
    });
  });

  it("keeps the override's other tiers, drops a tier set back to its configured limit, and writes nothing twice", async () => {
    const d = deps();
    await setLimits(d, LANE, { 'minute:requests': 300, 'day:requests': 30_000 }, 'alice');
    await d.clock.advance(1_000);

    const result = await setLimits(d, LANE, { 'second:requests': 5, 'day:requests': 20_000 }, 'bob');
    const again = await setLimits(d, LANE, { 'second:requests': 5 }, 'carol');

    expect(result.override).toEqual({
      by: 'bob',
      at: T0 + 1_000,
      tiers: [
        { tier: 'second:requests', configured: 10, limit: 5 },
        { tier: 'minute:requests', configured: 500, limit: 300 },
      ],
    });
    expect(again).toMatchObject({ changed: false, override: result.override });
    expect(again.message).toMatch(/^lane 'default': limits already overridden by bob: /);
  });

  it('refuses a tier that is not configured, a limit out of range and a raise the shards do not carry, writing nothing', async () => {
    const d = deps();
    await expect(setLimits(d, LANE, { 'hour:requests': 5 }, 'alice')).rejects.toThrow(
      "lane 'default': no tier hour:requests is configured; the tiers are second:requests, minute:requests, day:requests",
    );
    await expect(setLimits(d, LANE, { 'minute:requests': 0 }, 'alice')).rejects.toThrow(/whole number from 1/);
    await expect(setLimits(d, LANE, { 'second:requests': 60, 'minute:requests': 3_600 }, 'alice')).rejects.toThrow(
      /carry 25 a second/,
    );
    await expect(setLimits(d, LANE, { 'minute:requests': 5 }, '  ')).rejects.toThrow(/operator's name/);
    await expect(d.limits.loadOverride('default')).resolves.toBeUndefined();
  });

  it("refuses a raise that passes alone but not with the override's other tiers", async () => {
    const d = deps();
    await setLimits(d, LANE, { 'minute:requests': 3_000 }, 'alice');

    await expect(setLimits(d, LANE, { 'second:requests': 50 }, 'bob')).rejects.toThrow(
      /with the override's other tiers: these limits allow 50 requests a second/,
    );
  });

  it('sets each override later than the one it replaces, so that two set within a millisecond are told apart', async () => {
    const d = deps();
    await setLimits(d, LANE, { 'minute:requests': 300 }, 'alice');

    const second = await setLimits(d, LANE, { 'minute:requests': 200 }, 'bob');

    expect(second.override?.at).toBe(T0 + 1);
    await expect(d.limits.loadOverride('default')).resolves.toMatchObject({ at: T0 + 1, by: 'bob' });
  });

  it('merges into a change another operator made between its read and its write', async () => {
    const store = new RacingStore(new MemoryState(), async (self) => {
      await self.replaceOverride('default', { v: 1, tiers: { 'day:requests': 100 }, by: 'bob', at: T0 - 1 }, 'any');
    });
    const d = deps(store);

    const result = await setLimits(d, LANE, { 'minute:requests': 300 }, 'alice');

    expect(result.override?.tiers.map((t) => [t.tier, t.limit])).toEqual([
      ['minute:requests', 300],
      ['day:requests', 100],
    ]);
  });

  it('counts a write that landed, whose answer was lost (its retry refused), as done', async () => {
    const store = new LostAnswerStore(new MemoryState());
    const d = deps(store);

    const result = await setLimits(d, LANE, { 'minute:requests': 300 }, 'alice');

    expect(result).toMatchObject({ changed: true, override: { by: 'alice' } });
    expect(store.writes).toBe(1);
  });

  it('replaces an override stored malformed: that is how an operator mends it', async () => {
    const store = new MalformedStore(new MemoryState());
    const d = deps(store);

    await expect(setLimits(d, LANE, { 'minute:requests': 300 }, 'alice')).resolves.toMatchObject({ changed: true });
    expect(store.expectedSeen).toEqual(['any']);
  });
});

describe('resetLimits', () => {
  it('ends the override of the tiers named, then of every tier, so that the configured limits stand again', async () => {
    const d = deps();
    await setLimits(d, LANE, { 'second:requests': 5, 'minute:requests': 300 }, 'alice');

    const one = await resetLimits(d, LANE, ['second:requests'], 'bob');
    const all = await resetLimits(d, LANE, [], 'bob');
    const none = await resetLimits(d, LANE, [], 'bob');

    expect(one.override?.tiers).toEqual([{ tier: 'minute:requests', configured: 500, limit: 300 }]);
    expect(all).toMatchObject({ action: 'reset', changed: true, override: null });
    expect(all.message).toBe(
      "lane 'default': limits reset by bob: the configured limits stand; the orchestrator paces at a lower limit " +
        'from its next save, at a higher one from its next run',
    );
    expect(none).toMatchObject({
      changed: false,
      message: "lane 'default': no limit is overridden: the configured limits stand",
    });
    await expect(d.limits.loadOverride('default')).resolves.toBeUndefined();
  });

  it('refuses a tier that is not configured', async () => {
    await expect(resetLimits(deps(), LANE, ['hour:requests'], 'bob')).rejects.toThrow(/no tier hour:requests/);
  });

  it('drops what the override set for a tier a deploy removed, and the override with it when nothing else is left', async () => {
    const d = deps();
    const stale = { v: 1, tiers: { 'hour:requests': 5, 'minute:requests': 300 }, by: 'alice', at: T0 - 1 } as const;
    await d.limits.replaceOverride('default', stale, 'none');

    await resetLimits(d, LANE, ['minute:requests'], 'bob');

    await expect(d.limits.loadOverride('default')).resolves.toBeUndefined();
  });
});

/** A store where `between` runs once, between the first read of the override and the write that follows it. */
class RacingStore extends MemoryLimitStore {
  private pending: ((self: MemoryLimitStore) => Promise<void>) | undefined;

  constructor(state: MemoryState, between: (self: MemoryLimitStore) => Promise<void>) {
    super(state);
    this.pending = between;
  }

  override async replaceOverride(
    state: string,
    next: LimitOverrideJSON | undefined,
    expected: ExpectedOverride,
  ): Promise<boolean> {
    const between = this.pending;
    this.pending = undefined;
    if (between !== undefined) await between(this);
    return super.replaceOverride(state, next, expected);
  }
}

/** A store whose first write lands and answers as its retry would: refused, the override being the new one already. */
class LostAnswerStore extends MemoryLimitStore {
  writes = 0;

  override async replaceOverride(
    state: string,
    next: LimitOverrideJSON | undefined,
    expected: ExpectedOverride,
  ): Promise<boolean> {
    this.writes++;
    await super.replaceOverride(state, next, expected);
    return false;
  }
}

/** A store whose override reads as malformed until it is replaced whatever it holds. */
class MalformedStore extends MemoryLimitStore {
  readonly expectedSeen: ExpectedOverride[] = [];
  private mended = false;

  override async loadOverride(state: string): Promise<LimitOverrideJSON | undefined> {
    if (!this.mended) throw new StateFormatError('stored limit override is malformed');
    return super.loadOverride(state);
  }

  override async replaceOverride(
    state: string,
    next: LimitOverrideJSON | undefined,
    expected: ExpectedOverride,
  ): Promise<boolean> {
    this.expectedSeen.push(expected);
    if (expected !== 'any') return false;
    this.mended = true;
    return super.replaceOverride(state, next, expected);
  }
}
