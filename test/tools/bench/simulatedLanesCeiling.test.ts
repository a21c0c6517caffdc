import { ceilingScenario } from '../../../tools/bench/scenarios';
import { simulatedLanesCeiling } from '../../../tools/bench/simulatedLanesCeiling';

describe('simulatedLanesCeiling', () => {
  it("costs lanes little of their rate when they all share a pool, and the pool's items few writes (virtual time)", async () => {
    const alone = await simulatedLanesCeiling(ceilingScenario('quick'), 4, 1_500, false);
    const pooled = await simulatedLanesCeiling(ceilingScenario('quick'), 4, 1_500);
    expect(alone.dispatchesPerSecond).toBeGreaterThanOrEqual(4_000);
    // Before a fast tier restarted from the ms before, a lane's tier and its pool's pushed each other a ms on at each
    // dispatch, and the pool cut the lanes to about a tenth of this.
    expect(pooled.dispatchesPerSecond).toBeGreaterThanOrEqual(0.9 * alone.dispatchesPerSecond);
    expect(pooled.poolItemPeakWritesPerSecond).toBeGreaterThan(0);
    expect(pooled.poolItemPeakWritesPerSecond).toBeLessThan(100);
    expect(alone.poolItemPeakWritesPerSecond).toBe(0);
  });
});
