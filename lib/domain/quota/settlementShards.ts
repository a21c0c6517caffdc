/**
 * How a lane's pending settlements spread over the items that hold them: how many shards a lane's rate needs, and
 * which shard a settlement's id goes to. Workers and the orchestrator derive both from the same configuration, so
 * they agree; the store reads the union of every shard count it has seen (see `DynamoLedgerStore`), so that a change
 * of the count across a deploy loses nothing written under the old one.
 */
import { poolStateName } from './poolSettlements';
import { REQUESTS, type Tier } from './tiers';

/**
 * Appends a second one shard takes at the lane's steadiest pace at most. Each append is billed by the shard's size
 * (1 write unit per KB); a shard read every second or so stays a few KB, so this keeps every shard far below
 * DynamoDB's 1,000 write units a second per partition.
 */
export const SHARD_APPENDS_PER_SECOND = 25;

/** Most shards of a lane: a report read reads them all, and each read is billed at least half a read unit. */
export const MAX_SETTLEMENT_SHARDS = 64;

/**
 * Shards for a lane with `quotas`: enough that each takes at most {@link SHARD_APPENDS_PER_SECOND} appends a second at
 * the fastest pace its `requests` tiers allow (the slowest of their steady rates, a call a request). A lane without a
 * `requests` tier that sets a pace does not bound its calls a second, and takes {@link MAX_SETTLEMENT_SHARDS}.
 */
export function settlementShards(quotas: readonly Tier[]): number {
  const callsPerSecond = requestsPerSecond(quotas);
  if (!Number.isFinite(callsPerSecond)) return MAX_SETTLEMENT_SHARDS;
  return Math.min(MAX_SETTLEMENT_SHARDS, Math.max(1, Math.ceil(callsPerSecond / SHARD_APPENDS_PER_SECOND)));
}

/**
 * The fastest pace, in calls a second, that `quotas`' `requests` tiers allow: the slowest of their steady rates;
 * `Infinity` without a `requests` tier that sets a pace.
 */
export function requestsPerSecond(quotas: readonly Tier[]): number {
  return Math.min(
    ...quotas.flatMap((tier) => {
      const rate = tier.unit === REQUESTS ? tier.steadyRate() : undefined;
      return rate === undefined ? [] : [(rate.units * 1_000) / rate.perMs];
    }),
  );
}

/** The shard in `0..shards - 1` of a settlement named `id`: FNV-1a over its UTF-16 code units, so stable everywhere. */
export function shardOf(id: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return hash % shards;
}

/**
 * A lane's or pool's shard count, by state name: the shards of a deployment's states as {@link settlementShards}
 * derives each from its own tiers, a lane's (`quotas`) or each of its `pools`' (named `poolStateName`). Every worker
 * and orchestrator of a lane that draws from a pool derives the pool's from the pool's tiers alone, so they agree.
 */
export type ShardCounts = (state: string) => number;

/** The {@link ShardCounts} of a lane of `quotas` that draws from `pools`: a state not its pools' is the lane's. */
export function shardCounts(
  quotas: readonly Tier[],
  pools: readonly { readonly name: string; readonly quotas: readonly Tier[] }[] = [],
): ShardCounts {
  const lane = settlementShards(quotas);
  const ofPools = new Map(pools.map((pool) => [poolStateName(pool.name), settlementShards(pool.quotas)]));
  return (state) => ofPools.get(state) ?? lane;
}
