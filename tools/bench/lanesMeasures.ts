import type { VirtualApiCall } from '../simulation/virtualApi';

/** One lane of a `lanes` bench run, as its API saw it. */
export interface LaneCalls {
  readonly lane: string;
  /** Every job call its API saw. */
  readonly calls: readonly VirtualApiCall[];
  /** The calls a second its own tiers allow. */
  readonly perSecond: number;
  /** The pools it draws from. */
  readonly pools: readonly string[];
  /** Its API's outage, epoch ms. */
  readonly outage?: { readonly startMs: number; readonly endMs: number };
}

/** A pool of a `lanes` bench run: the calls a second it allows its lanes together. */
export interface PoolRate {
  readonly pool: string;
  readonly perSecond: number;
}

/** What the `lanes` scenario measures of one strategy (see {@link lanesFigures}). */
export interface LanesFigures {
  /**
   * Per lane: the share of what it was allowed that it used while it had a backlog (see {@link lanesFigures}), and
   * what its API refused.
   */
  readonly lanes: Readonly<Record<string, { readonly utilization: number; readonly rejectedByApi: number }>>;
  /** Per pool: the share of what it allowed its lanes that they used while one of them had a backlog. */
  readonly pools: Readonly<Record<string, { readonly utilization: number }>>;
  /**
   * During the outage of a lane of a pool: the share of what the pool left the pool's other lanes (their own rates,
   * within the pool's) that they used. 1: the down lane's share went to the others. `undefined` without such an outage.
   */
  readonly outageTakenByOthers?: number;
  /** Calls the APIs refused in all (429s), over every lane. */
  readonly rejectedByApi: number;
}

/**
 * The `lanes` scenario's figures, on whole seconds from `start`: a call counts in the second it arrived, if its API
 * accepted it. A lane has a backlog from the first whole second after its first call to the last whole second
 * before its last accepted call, and is *up* in a second that its outage does not touch.
 * - A lane is allowed, in a second it has a backlog and is up, what it used, and within each of its pools its part of
 *   the room the pool's lanes left that second (the pool's rate less what they all used), up to its own rate: the
 *   lanes of the pool that have a backlog, are up and are below their own rates share that room equally (see
 *   {@link sharedRoom}). Its utilization is what it used over what it was allowed, summed. A lane alone in its pool
 *   that second is allowed the whole room; lanes that share it are not each allowed all of it, which would count one
 *   call the pool fell short against every one of them.
 * - A pool allows, in a second one of its lanes has a backlog and is up, its rate or the own rates of those lanes,
 *   whichever is less; its utilization is what all its lanes used over that.
 */
export function lanesFigures(lanes: readonly LaneCalls[], pools: readonly PoolRate[], start: number): LanesFigures {
  const seconds = lanes.map((lane) => secondsOf(lane, start));
  const accepted = (i: number, k: number) => seconds[i]?.accepted.get(k) ?? 0;
  const active = (i: number, k: number) => seconds[i]?.backlog.has(k) === true && !(seconds[i]?.down.has(k) ?? false);
  const rateOf = (pool: string) => pools.find((p) => p.pool === pool)?.perSecond ?? Number.POSITIVE_INFINITY;
  const members = (pool: string) => lanes.flatMap((lane, i) => (lane.pools.includes(pool) ? [i] : []));

  // Lane i's part of the room pool `pool` left in second k: shared among its lanes that were active then.
  const partOfRoom = (pool: string, i: number, k: number): number => {
    const of = members(pool).filter((j) => active(j, k));
    const room = rateOf(pool) - members(pool).reduce((sum, j) => sum + accepted(j, k), 0);
    const headroom = of.map((j) => Math.max(0, (lanes[j]?.perSecond ?? 0) - accepted(j, k)));
    return sharedRoom(room, headroom)[of.indexOf(i)] ?? 0;
  };

  const laneFigures = Object.fromEntries(
    lanes.map((lane, i) => {
      let [used, allowed] = [0, 0];
      for (const k of seconds[i]?.backlog ?? []) {
        if (!active(i, k)) continue;
        const own = Math.max(0, lane.perSecond - accepted(i, k));
        used += accepted(i, k);
        allowed += accepted(i, k) + Math.min(own, ...lane.pools.map((pool) => partOfRoom(pool, i, k)));
      }
      const rejectedByApi = lane.calls.filter((call) => call.status === 429).length;
      return [lane.lane, { utilization: ratio(used, allowed), rejectedByApi }];
    }),
  );

  const poolFigures = Object.fromEntries(
    pools.map(({ pool, perSecond }) => {
      const of = members(pool);
      let [used, allowed] = [0, 0];
      for (const k of new Set(of.flatMap((i) => [...(seconds[i]?.backlog ?? [])]))) {
        const up = of.filter((i) => active(i, k));
        if (up.length === 0) continue;
        used += of.reduce((sum, i) => sum + accepted(i, k), 0);
        allowed += Math.min(
          perSecond,
          up.reduce((sum, i) => sum + (lanes[i]?.perSecond ?? 0), 0),
        );
      }
      return [pool, { utilization: ratio(used, allowed) }];
    }),
  );

  return {
    lanes: laneFigures,
    pools: poolFigures,
    ...outageFigure(lanes, seconds, pools, start),
    rejectedByApi: Object.values(laneFigures).reduce((sum, lane) => sum + lane.rejectedByApi, 0),
  };
}

/**
 * `room` shared among lanes whose own rates leave them `headroom` each, in equal parts, none past its headroom: what
 * one cannot take goes to the others in equal parts. Nothing when `room` is not positive.
 */
export function sharedRoom(room: number, headroom: readonly number[]): number[] {
  const parts = headroom.map(() => 0);
  let left = Math.max(0, room);
  const byHeadroom = headroom.map((h, i) => ({ h, i })).sort((a, b) => a.h - b.h);
  byHeadroom.forEach(({ h, i }, n) => {
    const part = Math.min(h, left / (byHeadroom.length - n));
    parts[i] = part;
    left -= part;
  });
  return parts;
}

/** A lane's calls by whole second: the accepted ones, its backlog's seconds, and its outage's. */
interface LaneSeconds {
  readonly accepted: ReadonlyMap<number, number>;
  readonly backlog: ReadonlySet<number>;
  readonly down: ReadonlySet<number>;
}

function secondsOf(lane: LaneCalls, start: number): LaneSeconds {
  const second = (at: number) => (at - start) / 1000;
  const accepted = new Map<number, number>();
  for (const call of lane.calls) {
    if (call.usage === undefined) continue;
    const k = Math.floor(second(call.at));
    accepted.set(k, (accepted.get(k) ?? 0) + 1);
  }
  const first = Math.min(...lane.calls.map((call) => call.at));
  const last = Math.max(...lane.calls.filter((call) => call.usage !== undefined).map((call) => call.at));
  const backlog = new Set<number>();
  for (let k = Math.ceil(second(first)); k < Math.floor(second(last)); k++) backlog.add(k);
  const down = new Set<number>();
  if (lane.outage !== undefined)
    for (let k = Math.floor(second(lane.outage.startMs)); k < Math.ceil(second(lane.outage.endMs)); k++) down.add(k);
  return { accepted, backlog, down };
}

/** {@link LanesFigures.outageTakenByOthers}, for the first lane of a pool whose API had an outage. */
function outageFigure(
  lanes: readonly LaneCalls[],
  seconds: readonly LaneSeconds[],
  pools: readonly PoolRate[],
  start: number,
): Pick<LanesFigures, 'outageTakenByOthers'> {
  const down = lanes.findIndex((lane) => lane.outage !== undefined && lane.pools.length > 0);
  const lane = lanes[down];
  if (lane?.outage === undefined) return {};
  const [pool] = lane.pools;
  const rate = pools.find((p) => p.pool === pool)?.perSecond ?? Number.POSITIVE_INFINITY;
  const others = lanes.flatMap((other, i) =>
    i !== down && pool !== undefined && other.pools.includes(pool) ? [i] : [],
  );
  let [used, allowed] = [0, 0];
  for (
    let k = Math.ceil((lane.outage.startMs - start) / 1000);
    k < Math.floor((lane.outage.endMs - start) / 1000);
    k++
  ) {
    const busy = others.filter((i) => seconds[i]?.backlog.has(k) === true);
    if (busy.length === 0) continue;
    used += busy.reduce((sum, i) => sum + (seconds[i]?.accepted.get(k) ?? 0), 0);
    allowed += Math.min(
      rate,
      busy.reduce((sum, i) => sum + (lanes[i]?.perSecond ?? 0), 0),
    );
  }
  return { outageTakenByOthers: ratio(used, allowed) };
}

/** `used / allowed`, to 3 decimals; 0 when nothing was allowed. */
function ratio(used: number, allowed: number): number {
  return allowed === 0 ? 0 : Math.round((used / allowed) * 1000) / 1000;
}
