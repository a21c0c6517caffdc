import { ConfigError } from '../../../lib/errors';
import { seededRandom } from '../../../tools/simulation/random';
import {
  fixedTiming,
  InvokeTiming,
  NO_DUPLICATES,
  parseDuplicateDeliveries,
  parseStartDelays,
  REALISTIC_START_DELAYS,
  REALISTIC_TIMING,
} from '../../../tools/simulation/startDelays';
import { parseScenario } from '../../../tools/simulation/scenario';
import { thrown } from '../../helpers/thrown';

/** Draws `n` plans, one every 10 ms of clock time. */
function draw(timing: InvokeTiming, n: number) {
  return Array.from({ length: n }, (_, i) => ({ at: i * 10, plan: timing.plan(i * 10) }));
}

describe('InvokeTiming', () => {
  describe('plan', () => {
    it('draws a fixed delay and a single delivery for the fixed model', () => {
      const plans = draw(new InvokeTiming(fixedTiming(30), seededRandom(1)), 100);
      expect(new Set(plans.map((p) => p.plan.startDelayMs))).toEqual(new Set([30]));
      expect(plans.some((p) => p.plan.duplicate !== undefined)).toBe(false);
    });

    it('draws mostly warm starts, some cold, some throttled and released together, and a few holds, within their ranges', () => {
      const timing = new InvokeTiming(REALISTIC_TIMING, seededRandom(7));
      const plans = draw(timing, 4_000);
      const of = (kind: string) => plans.filter((p) => p.plan.start === kind);
      const d = REALISTIC_START_DELAYS;
      for (const p of of('warm')) expect(p.plan.startDelayMs).toBeGreaterThanOrEqual(d.warmMinMs);
      for (const p of of('warm')) expect(p.plan.startDelayMs).toBeLessThanOrEqual(d.warmMaxMs);
      for (const p of of('cold')) expect(p.plan.startDelayMs).toBeGreaterThanOrEqual(d.coldMinMs);
      for (const p of of('cold')) expect(p.plan.startDelayMs).toBeLessThanOrEqual(d.coldMaxMs);
      for (const p of of('held')) expect(p.plan.startDelayMs).toBeGreaterThanOrEqual(d.holdMinMs);
      // Throttled events start on a release instant, at least throttleMinMs later.
      for (const p of of('throttled')) {
        expect((p.at + p.plan.startDelayMs) % d.throttleReleaseEveryMs).toBe(0);
        expect(p.plan.startDelayMs).toBeGreaterThanOrEqual(d.throttleMinMs);
      }
      expect(of('warm').length / plans.length).toBeGreaterThan(0.88);
      expect(of('cold').length / plans.length).toBeGreaterThan(0.03);
      expect(of('throttled').length).toBeGreaterThan(40);
      expect(of('held').length).toBeGreaterThan(5);
      expect(timing.counts()).toMatchObject({ warm: of('warm').length, cold: of('cold').length });
    });

    it('delivers a small share twice, some while the first runs and some after it ended', () => {
      const plans = draw(new InvokeTiming(REALISTIC_TIMING, seededRandom(3)), 4_000).map((p) => p.plan.duplicate);
      const running = plans.filter((d) => d?.when === 'while-running');
      const ended = plans.filter((d) => d?.when === 'after-end');
      expect(running.length).toBeGreaterThan(10);
      expect(ended.length).toBeGreaterThan(10);
      expect((running.length + ended.length) / plans.length).toBeLessThan(0.04);
    });

    it('never delivers twice with the duplicates off', () => {
      const timing = new InvokeTiming({ ...REALISTIC_TIMING, duplicates: NO_DUPLICATES }, seededRandom(3));
      expect(draw(timing, 2_000).some((p) => p.plan.duplicate !== undefined)).toBe(false);
    });

    it('is deterministic for a seed', () => {
      expect(draw(new InvokeTiming(REALISTIC_TIMING, seededRandom(5)), 200)).toEqual(
        draw(new InvokeTiming(REALISTIC_TIMING, seededRandom(5)), 200),
      );
    });
  });
});

describe('parseStartDelays', () => {
  it('reads a fixed delay, and realistic overrides over the defaults', () => {
    expect(parseStartDelays({ kind: 'fixed', ms: 25 })).toEqual({ kind: 'fixed', ms: 25 });
    expect(parseStartDelays({ kind: 'realistic', coldShare: 0.5 })).toEqual({
      ...REALISTIC_START_DELAYS,
      coldShare: 0.5,
    });
  });

  it('refuses an unknown kind, a missing ms, shares above 1 and a min above its max, naming the field', () => {
    expect(thrown(ConfigError, () => parseStartDelays({ kind: 'slow' })).message).toMatch(/startDelays\.kind/);
    expect(thrown(ConfigError, () => parseStartDelays({ kind: 'fixed' })).message).toMatch(/startDelays\.ms/);
    expect(
      thrown(ConfigError, () => parseStartDelays({ kind: 'realistic', coldShare: 0.7, throttledShare: 0.4 })).message,
    ).toMatch(/must not exceed 1/);
    expect(thrown(ConfigError, () => parseStartDelays({ kind: 'realistic', coldMinMs: 2_000 })).message).toMatch(
      /startDelays\.coldMinMs/,
    );
  });
});

describe('parseDuplicateDeliveries', () => {
  it('turns duplicates off with share 0 and refuses a share above 1', () => {
    expect(parseDuplicateDeliveries({ share: 0 }).share).toBe(0);
    expect(thrown(ConfigError, () => parseDuplicateDeliveries({ share: 2 })).message).toMatch(
      /duplicateDeliveries\.share/,
    );
  });
});

describe('parseScenario timing', () => {
  const quotas = [{ limit: 10, per: 'second' }];

  it('defaults to realistic start delays and a small share of duplicate deliveries', () => {
    expect(parseScenario({ quotas }).invokeTiming).toEqual(REALISTIC_TIMING);
  });

  it("reads an older scenario's invokeLatencyMs as a fixed delay", () => {
    expect(parseScenario({ quotas, invokeLatencyMs: 30 }).invokeTiming.start).toEqual({ kind: 'fixed', ms: 30 });
  });

  it('takes startDelays and duplicateDeliveries, and refuses invokeLatencyMs beside startDelays', () => {
    const scenario = parseScenario({
      quotas,
      startDelays: { kind: 'fixed', ms: 5 },
      duplicateDeliveries: { share: 0 },
    });
    expect(scenario.invokeTiming).toEqual(fixedTiming(5));
    expect(
      thrown(ConfigError, () => parseScenario({ quotas, invokeLatencyMs: 5, startDelays: { kind: 'fixed', ms: 5 } }))
        .message,
    ).toMatch(/invokeLatencyMs/);
  });
});
