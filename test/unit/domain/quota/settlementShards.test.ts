import {
  MAX_SETTLEMENT_SHARDS,
  settlementShards,
  shardCounts,
  shardOf,
} from '../../../../lib/domain/quota/settlementShards';
import { parseTiers } from '../../../../lib/domain/quota/tiers';

describe('settlementShards', () => {
  it('gives a lane one shard per 25 calls a second its slowest requests tier sustains', () => {
    expect(settlementShards(parseTiers([{ limit: 120, per: 'minute' }]))).toBe(1);
    expect(settlementShards(parseTiers([{ limit: 100, per: 'second' }]))).toBe(4);
    expect(settlementShards(parseTiers([{ limit: 1_000, per: 'second' }]))).toBe(40);
    expect(
      settlementShards(
        parseTiers([
          { limit: 1_000, per: 'second' },
          { limit: 6_000, per: 'minute' },
        ]),
      ),
    ).toBe(4);
  });

  it('counts only requests tiers that set a pace, and caps the count', () => {
    expect(
      settlementShards(
        parseTiers([
          { limit: 60, per: 'minute' },
          { limit: 1_000_000, per: 'second', unit: 'tokens' },
          { limit: 10, per: 'day' },
        ]),
      ),
    ).toBe(1);
    expect(settlementShards(parseTiers([{ limit: 100_000, per: 'second' }]))).toBe(MAX_SETTLEMENT_SHARDS);
    expect(settlementShards(parseTiers([{ limit: 1_000, per: 'day' }]))).toBe(MAX_SETTLEMENT_SHARDS);
  });
});

describe('shardOf', () => {
  it('puts an id in the same shard every time, and spreads ids over every shard', () => {
    const ids = Array.from({ length: 1_000 }, (_, i) => `d-${i}`);
    expect(ids.map((id) => shardOf(id, 8))).toEqual(ids.map((id) => shardOf(id, 8)));
    const counts = Array.from({ length: 8 }, (_, shard) => ids.filter((id) => shardOf(id, 8) === shard).length);
    for (const count of counts) expect(count).toBeGreaterThan(80);
    expect(ids.every((id) => shardOf(id, 1) === 0)).toBe(true);
  });
});

describe('shardCounts', () => {
  it("gives each pool the shards of its own tiers, whichever lane asks, and every other state the lane's", () => {
    const pool = { name: 'org', quotas: parseTiers([{ limit: 100, per: 'second' }]) };
    const slow = shardCounts(parseTiers([{ limit: 10, per: 'second' }]), [pool]);
    const fast = shardCounts(parseTiers([{ limit: 1000, per: 'second' }]), [pool]);
    expect([slow('a'), fast('b')]).toEqual([1, 40]);
    expect([slow('pool:org'), fast('pool:org')]).toEqual([4, 4]);
    expect(slow('pool:other')).toBe(1);
  });
});
