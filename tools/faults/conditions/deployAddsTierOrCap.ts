import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import { killedAtFirstSave, LANE_START, laneConfig, LaneWorld, type ApiCall } from './laneRuns';
import type { ConditionCheck, ConditionScenario } from './types';

const OK: ApiResult = { kind: 'response', status: 200, headers: {} };

/** The most calls that arrived within any `windowMs` (every window `(T − W, T]` ending at a call). */
function mostInWindow(calls: readonly ApiCall[], windowMs: number): number {
  return Math.max(
    0,
    ...calls.map(({ from }) => calls.filter((c) => c.from <= from && c.from > from - windowMs).length),
  );
}

/** The most calls in progress at the start of any call that started from `since` on, that call included. */
function mostInProgressAtStarts(calls: readonly ApiCall[], since: number): number {
  const starts = calls.filter((c) => c.from >= since).map((c) => c.from);
  return Math.max(0, ...starts.map((t) => calls.filter((c) => c.from <= t && c.to > t).length));
}

/**
 * Plays a deploy between runs of one lane: run 1 under `before`, run 2 under `after` killed during its first save
 * (it never saves what it rehydrated), and run 3 under `after`, once run 2's lease has expired.
 * @returns every call the API saw, and when run 3 began.
 */
async function deployBetweenRuns(
  world: LaneWorld,
  before: Readonly<Record<string, unknown>>,
  after: Readonly<Record<string, unknown>>,
): Promise<{ readonly calls: readonly ApiCall[]; readonly thirdFrom: number }> {
  await world.run(laneConfig(before), { deadline: LANE_START + 500 });
  const deployedAt = world.clock.now();
  void world.start(laneConfig(after), { deadline: deployedAt + 3_000, ledger: killedAtFirstSave });
  await world.clock.advanceTo(deployedAt + 6_000); // past the killed run's 5 s lease
  const thirdFrom = world.clock.now();
  await world.run(laneConfig(after), { deadline: thirdFrom + 100_000 });
  return { calls: world.calls, thirdFrom };
}

/** A tier of 10 calls a minute added to a lane that has just sent 10 calls within a second. */
async function tierAdded(): Promise<ConditionCheck> {
  const world = new LaneWorld({ latencyMs: 50, answer: () => OK });
  await world.send(30);
  const second = { limit: 10, per: 'second' };
  const { calls, thirdFrom } = await deployBetweenRuns(
    world,
    { quotas: [second] },
    { quotas: [second, { limit: 10, per: 'minute' }] },
  );
  const most = mostInWindow(calls, 60_000);
  const later = calls.filter((c) => c.from >= thirdFrom).length;
  return {
    held: most <= 10 && later > 0,
    detail: `tier 10/minute added after 10 calls: at most ${most} calls in a minute; ${later} calls after the deploy`,
  };
}

/**
 * `maxInFlight: 4` turned on while 24 calls of 15 s made without a cap are in progress (a worker of 20 s), still when
 * the run after the killed one starts.
 */
async function capTurnedOn(): Promise<ConditionCheck> {
  const world = new LaneWorld({ latencyMs: 15_000, answer: () => OK });
  await world.send(40);
  const lane = { quotas: [{ limit: 24, per: 'second' }], orchestrator: { workerTimeoutMs: 20_000 } };
  const { calls, thirdFrom } = await deployBetweenRuns(world, lane, { ...lane, maxInFlight: 4 });
  const most = mostInProgressAtStarts(calls, thirdFrom);
  const later = calls.filter((c) => c.from >= thirdFrom).length;
  return {
    held: most <= 4 && later > 0,
    detail: `maxInFlight 4 turned on with 24 calls in progress: at most ${most} in progress when a later call started; ${later} calls after the deploy`,
  };
}

/** Condition 10: a deploy that adds a tier or turns `maxInFlight` on, while the calls made before it still count. */
export const deployAddsTierOrCap: ConditionScenario = {
  name: 'deploy-adds-tier-or-cap',
  condition: 10,
  injects:
    'a deploy that adds a 10/minute tier after 10 calls within a second, and one that turns maxInFlight 4 on while 24 calls are in progress; the first run after each is killed during its first save',
  breaks:
    'the new tier starts empty and the cap counts from zero, so the next run sends 10 more calls within the minute and starts 4 more calls beside the 24',
  async run(): Promise<ConditionCheck> {
    const checks = [await tierAdded(), await capTurnedOn()];
    return { held: checks.every((c) => c.held), detail: checks.map((c) => c.detail).join('; ') };
  },
};
