import { lanesFigures, sharedRoom, type LaneCalls } from '../../../tools/bench/lanesMeasures';
import type { VirtualApiCall } from '../../../tools/simulation/virtualApi';

const START = 1_000_000;

/** `perSecond` accepted calls spread over each second of `[from, to)` s, and one refused call per second if `refused`. */
function calls(from: number, to: number, perSecond: number, refused = false): VirtualApiCall[] {
  const out: VirtualApiCall[] = [];
  for (let s = from; s < to; s++) {
    for (let i = 0; i < perSecond; i++)
      out.push({ at: START + s * 1000 + (i * 1000) / perSecond, id: `j${s}-${i}`, status: 200, usage: { cost: 1 } });
    if (refused) out.push({ at: START + s * 1000 + 999, id: `r${s}`, status: 429 });
  }
  return out;
}

function lane(
  name: string,
  own: number,
  list: VirtualApiCall[],
  pools: string[] = [],
  outage?: [number, number],
): LaneCalls {
  return {
    lane: name,
    calls: list,
    perSecond: own,
    pools,
    ...(outage === undefined ? {} : { outage: { startMs: START + outage[0] * 1000, endMs: START + outage[1] * 1000 } }),
  };
}

describe('lanesFigures', () => {
  it('counts a lane alone against its own rate, only while it has a backlog', () => {
    const figures = lanesFigures([lane('solo', 8, [...calls(0, 10, 8), ...calls(10, 11, 1)])], [], START);
    expect(figures.lanes.solo).toEqual({ utilization: 1, rejectedByApi: 0 });
    const half = lanesFigures([lane('solo', 8, calls(0, 10, 4))], [], START);
    expect(half.lanes.solo?.utilization).toBe(0.5);
  });

  it("allows a lane of a pool what the pool's other lanes left it, and the pool the least of its rate and theirs", () => {
    // Pool 12/s; each lane 10/s of its own: they split the pool 6 and 6.
    const a = lane('a', 10, calls(0, 10, 6), ['org']);
    const b = lane('b', 10, calls(0, 10, 6), ['org']);
    const figures = lanesFigures([a, b], [{ pool: 'org', perSecond: 12 }], START);
    expect(figures.lanes.a?.utilization).toBe(1);
    expect(figures.pools.org?.utilization).toBe(1);
    // One lane takes 9 and leaves the other 3, which it uses: each used what it was allowed, and the pool is full.
    const greedy = lanesFigures(
      [lane('a', 10, calls(0, 10, 9), ['org']), lane('b', 10, calls(0, 10, 3), ['org'])],
      [{ pool: 'org', perSecond: 12 }],
      START,
    );
    expect([greedy.lanes.a?.utilization, greedy.lanes.b?.utilization, greedy.pools.org?.utilization]).toEqual([
      1, 1, 1,
    ]);
  });

  it('shares the room the lanes of a pool left among them: one call the pool fell short is not counted against each', () => {
    // 6 and 5 of a pool of 12: the one call left is half each lane's, so a is allowed 6.5 and b 5.5, 12 together.
    const figures = lanesFigures(
      [lane('a', 10, calls(0, 10, 6), ['org']), lane('b', 10, calls(0, 10, 5), ['org'])],
      [{ pool: 'org', perSecond: 12 }],
      START,
    );
    expect([figures.lanes.a?.utilization, figures.lanes.b?.utilization]).toEqual([0.923, 0.909]);
    expect(figures.pools.org?.utilization).toBe(0.917);
    // A lane at its own rate takes no part of the room: b, at 3 of its own 3, leaves all 4 calls left to a.
    const capped = lanesFigures(
      [lane('a', 10, calls(0, 10, 5), ['org']), lane('b', 3, calls(0, 10, 3), ['org'])],
      [{ pool: 'org', perSecond: 12 }],
      START,
    );
    expect([capped.lanes.a?.utilization, capped.lanes.b?.utilization]).toEqual([0.556, 1]);
  });

  it('sharedRoom: equal parts, none past its headroom, the rest to the others; nothing of no room', () => {
    expect(sharedRoom(1, [4, 5])).toEqual([0.5, 0.5]);
    expect(sharedRoom(6, [1, 10, 10])).toEqual([1, 2.5, 2.5]);
    expect(sharedRoom(3, [0, 0])).toEqual([0, 0]);
    expect(sharedRoom(-2, [4, 4])).toEqual([0, 0]);
  });

  it("measures what the others took of the pool during a lane's outage, and counts refused calls", () => {
    // 'down' is out from 3 s to 7 s; 'mate' takes its own 10/s then (the pool allows 12), and 6/s otherwise.
    const down = lane('down', 10, [...calls(0, 3, 6), ...calls(7, 12, 6, true)], ['org'], [3, 7]);
    const mate = lane('mate', 10, [...calls(0, 3, 6), ...calls(3, 7, 10), ...calls(7, 12, 6)], ['org']);
    const figures = lanesFigures([down, mate], [{ pool: 'org', perSecond: 12 }], START);
    expect(figures.outageTakenByOthers).toBe(1);
    expect(figures.rejectedByApi).toBe(5);
    expect(figures.lanes.down?.rejectedByApi).toBe(5);
    expect(figures.pools.org?.utilization).toBe(1);
    const idle = lanesFigures(
      [down, lane('mate', 10, [...calls(0, 3, 6), ...calls(3, 7, 5), ...calls(7, 12, 6)], ['org'])],
      [{ pool: 'org', perSecond: 12 }],
      START,
    );
    expect(idle.outageTakenByOthers).toBe(0.5);
  });
});
