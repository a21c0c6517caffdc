import fc from 'fast-check';
import { LEARNING, LimitLearner, tierOfReading, zoneMargin } from '../../../../lib/domain/limits/limitLearner';
import { parseLimitSettings } from '../../../../lib/domain/limits/settings';
import { parseTiers } from '../../../../lib/domain/quota/tiers';

const T0 = Date.UTC(2026, 10, 29, 12);
const MINUTE = 60_000;
const HEADERS = parseLimitSettings({ headers: 'openai' }, undefined);
/** 10 requests a second, 500 a minute, 90 000 tokens a minute, 20 000 requests a day. */
const TIERS = parseTiers([
  { limit: 10, per: 'second' },
  { limit: 500, per: 'minute' },
  { limit: 90_000, per: 'minute', unit: 'tokens' },
  { limit: 20_000, per: 'day' },
]);
const IDLE = [0, 0, 0, 0];

const learner = () => new LimitLearner(TIERS, HEADERS);

describe('tierOfReading', () => {
  it("finds the tier of the family's unit and the configured window, or the window the reading names", () => {
    expect(tierOfReading({ family: 'requests' }, TIERS, HEADERS)).toBe(1);
    expect(tierOfReading({ family: 'tokens' }, TIERS, HEADERS)).toBe(2);
    expect(tierOfReading({ family: 'requests', windowMs: 1_000 }, TIERS, HEADERS)).toBe(0);
  });

  it('finds none for a family or a window the lane has no sliding tier of', () => {
    expect(tierOfReading({ family: 'input-tokens' }, TIERS, HEADERS)).toBe(-1);
    expect(tierOfReading({ family: 'requests', windowMs: 86_400_000 }, TIERS, HEADERS)).toBe(-1);
  });
});

describe('LimitLearner', () => {
  describe('a limit header', () => {
    it('takes a limit below the configured one at once, and says where it came from', () => {
      const l = learner();

      const changes = l.observe(T0, { readings: [{ family: 'requests', limit: 300, at: T0 - 200 }] }, IDLE);

      expect(l.limits(T0)).toEqual([10, 300, 90_000, 20_000]);
      expect(changes).toEqual([{ tier: TIERS[1], from: 500, to: 300, source: 'header' }]);
      expect(l.describe(T0)[1]).toEqual({ tier: TIERS[1], configured: 500, limit: 300, source: 'header', since: T0 });
    });

    it('never rises above the configured limit, whatever the header says', () => {
      const l = learner();

      l.observe(T0, { readings: [{ family: 'requests', limit: 5_000, at: T0 }] }, IDLE);

      expect(l.limits(T0)[1]).toBe(500);
      expect(l.describe(T0)[1]?.source).toBe('configured');
    });

    it('stands until a later header says otherwise, and gives way to one at or above the configured limit', () => {
      const l = learner();
      l.observe(T0, { readings: [{ family: 'requests', limit: 300, at: T0 }] }, IDLE);

      l.observe(T0 + 10 * MINUTE, { readings: [{ family: 'requests', limit: 300, at: T0 }] }, IDLE);
      const held = l.limits(T0 + 10 * MINUTE)[1];
      l.observe(T0 + 11 * MINUTE, { readings: [{ family: 'requests', limit: 600, at: T0 + 11 * MINUTE }] }, IDLE);

      expect(held).toBe(300);
      expect(l.limits(T0 + 11 * MINUTE)[1]).toBe(500);
    });

    it('ignores a reading older than one it already folded', () => {
      const l = learner();
      l.observe(T0, { readings: [{ family: 'requests', limit: 300, at: T0 }] }, IDLE);

      l.observe(T0 + 1_000, { readings: [{ family: 'requests', limit: 100, at: T0 - 1 }] }, IDLE);

      expect(l.limits(T0 + 1_000)[1]).toBe(300);
    });
  });

  describe('a remaining header', () => {
    it("leaves another caller's share (the API's count less the service's own) until the reset", () => {
      const l = learner();
      // The API counts 500 − 100 = 400 used; the service used 250 of them: another caller spent 150.
      const reading = { family: 'requests' as const, limit: 500, remaining: 100, resetAt: T0 + 20_000, at: T0 };

      const changes = l.observe(T0, { readings: [reading] }, [0, 250, 0, 0]);

      // A fifth of the limit remains: the yellow zone, where a quarter of it (25) is left to the other caller too.
      expect(l.limits(T0)[1]).toBe(325);
      expect(changes).toEqual([{ tier: TIERS[1], from: 500, to: 325, source: 'remaining' }]);
      expect(l.limits(T0 + 20_000)[1]).toBe(500);
    });

    it('slows as what remains falls while another caller spends: green, yellow, then red', () => {
      // The service used 100 of 500 each time; the other caller spent the rest of what the API counts.
      const limitWith = (remaining: number) => {
        const l = learner();
        l.observe(T0, { readings: [{ family: 'requests', limit: 500, remaining, at: T0 }] }, [0, 100, 0, 0]);
        return l.limits(T0)[1];
      };

      expect(limitWith(300)).toBe(400); // green: 100 spent by the other caller, left to it
      expect(limitWith(200)).toBe(250); // yellow: 200 spent, and a quarter of the 200 remaining
      expect(limitWith(40)).toBe(120); // red: 360 spent, and half of the 40 remaining
      expect(zoneMargin(249, 500)).toBe(63);
      expect(zoneMargin(250, 500)).toBe(0);
    });

    it('leaves no margin on a key the service has to itself, however little remains', () => {
      const l = learner();

      l.observe(T0, { readings: [{ family: 'requests', limit: 500, remaining: 10, at: T0 }] }, [0, 490, 0, 0]);

      expect(l.limits(T0)[1]).toBe(500);
    });

    it('leaves nothing when its own usage explains the count, and clears an earlier share', () => {
      const l = learner();
      l.observe(T0, { readings: [{ family: 'requests', remaining: 100, at: T0 }] }, [0, 250, 0, 0]);

      l.observe(T0 + 1_000, { readings: [{ family: 'requests', remaining: 100, at: T0 + 1_000 }] }, [0, 400, 0, 0]);

      expect(l.limits(T0 + 1_000)[1]).toBe(500);
    });

    it('does not take calls that left the window since the answer was read for another caller’s', () => {
      const l = learner();
      // Read 6 s before the flush: up to a tenth of the minute's 500 may have left the window since.
      const reading = { family: 'requests' as const, limit: 500, remaining: 100, at: T0 - 6_000 };

      l.observe(T0, { readings: [reading] }, [0, 350, 0, 0]);

      expect(l.limits(T0)[1]).toBe(500);
    });

    it('keeps a share no longer than a window, whatever reset the header claims', () => {
      const l = learner();
      const reading = { family: 'requests' as const, remaining: 0, resetAt: T0 + 30 * MINUTE, at: T0 };

      l.observe(T0, { readings: [reading] }, IDLE);

      expect(l.limits(T0 + MINUTE - 1)[1]).toBe(0);
      expect(l.limits(T0 + MINUTE)[1]).toBe(500);
    });

    it('takes the share from the lower limit the header gave before', () => {
      const l = learner();
      l.observe(T0, { readings: [{ family: 'requests', limit: 300, at: T0 }] }, IDLE);

      l.observe(T0 + 500, { readings: [{ family: 'requests', remaining: 200, at: T0 + 500 }] }, [0, 50, 0, 0]);

      // 300 − 200 = 100 counted, 50 of them the service's.
      expect(l.limits(T0 + 500)[1]).toBe(250);
    });
  });

  describe('a 429 without headers', () => {
    it('cuts each tier at least half used to a share of the lower of its limit and its usage', () => {
      const l = learner();

      const changes = l.observe(T0, { readings: [], rateLimitedAt: T0 - 100 }, [4, 400, 10_000, 900]);

      // The second tier is 40 % used, the token tier 11 %: only the minute request tier is cut, to 0.8 × 400.
      expect(l.limits(T0)).toEqual([10, 320, 90_000, 20_000]);
      expect(changes).toEqual([{ tier: TIERS[1], from: 500, to: 320, source: 'rate-limited' }]);
    });

    it('folds each 429 once, and cuts a tier once per window', () => {
      const l = learner();
      l.observe(T0, { readings: [], rateLimitedAt: T0 }, [0, 400, 0, 0]);
      l.observe(T0 + 1_000, { readings: [], rateLimitedAt: T0 }, [0, 320, 0, 0]);
      l.observe(T0 + 2_000, { readings: [], rateLimitedAt: T0 + 2_000 }, [0, 320, 0, 0]);
      const withinWindow = l.limits(T0 + 2_000)[1];

      l.observe(T0 + MINUTE, { readings: [], rateLimitedAt: T0 + MINUTE }, [0, 320, 0, 0]);

      expect(withinWindow).toBe(320);
      expect(l.limits(T0 + MINUTE)[1]).toBe(256);
    });

    it('grows back a window at a time while the tier is at least half used, up to the usage the 429 came at', () => {
      const l = learner();
      l.observe(T0, { readings: [], rateLimitedAt: T0 }, [0, 400, 0, 0]);
      const grown: number[] = [];
      for (let w = 1; w <= 5; w++) {
        l.observe(T0 + w * MINUTE, { readings: [] }, [0, l.limits(T0)[1] ?? 0, 0, 0]);
        grown.push(l.limits(T0 + w * MINUTE)[1] ?? 0);
      }

      // 320, then +50 a window (a tenth of 500), held at 0.95 × 400 = 380 while the cut is remembered.
      expect(grown).toEqual([370, 380, 380, 380, 380]);
    });

    it('does not grow back while the tier is less than half used', () => {
      const l = learner();
      l.observe(T0, { readings: [], rateLimitedAt: T0 }, [0, 400, 0, 0]);

      l.observe(T0 + 5 * MINUTE, { readings: [] }, [0, 100, 0, 0]);

      expect(l.limits(T0 + 5 * MINUTE)[1]).toBe(320);
    });

    it('tries the configured limit again once the cut is forgotten', () => {
      const l = learner();
      l.observe(T0, { readings: [], rateLimitedAt: T0 }, [0, 400, 0, 0]);
      for (let w = 1; w <= LEARNING.ceilingWindows + 3; w++)
        l.observe(T0 + w * MINUTE, { readings: [] }, [0, l.limits(T0 + w * MINUTE)[1] ?? 0, 0, 0]);

      expect(l.limits(T0 + (LEARNING.ceilingWindows + 3) * MINUTE)[1]).toBe(500);
      expect(l.describe(T0 + (LEARNING.ceilingWindows + 3) * MINUTE)[1]?.source).toBe('configured');
    });
  });

  describe('toJSON', () => {
    it('keeps what was learnt across a restart', () => {
      const l = learner();
      l.observe(T0, { readings: [{ family: 'requests', limit: 300, at: T0 }], rateLimitedAt: T0 }, [0, 250, 80_000, 0]);

      const again = new LimitLearner(TIERS, HEADERS, JSON.parse(JSON.stringify(l.toJSON())));
      again.observe(T0 + 1_000, { readings: [{ family: 'requests', limit: 300, at: T0 }], rateLimitedAt: T0 }, IDLE);

      expect(again.limits(T0 + 1_000)).toEqual(l.limits(T0 + 1_000));
      // The header's 300, then the 429's cut of the two tiers at least half used: 0.8 × 250 and 0.8 × 80 000.
      expect(again.limits(T0 + 1_000)).toEqual([10, 200, 64_000, 20_000]);
    });
  });

  describe('whatever the headers say', () => {
    it('never gives a tier a limit above its configured one, nor below 0, and leaves calendar tiers alone', () => {
      const reading = fc.record({
        family: fc.constantFrom('requests' as const, 'tokens' as const),
        limit: fc.option(fc.integer({ min: 1, max: 1e12 }), { nil: undefined }),
        remaining: fc.option(fc.integer({ min: 0, max: 1e12 }), { nil: undefined }),
        resetAt: fc.option(fc.integer({ min: T0, max: T0 + 31 * 86_400_000 }), { nil: undefined }),
        at: fc.integer({ min: T0, max: T0 + 10 * MINUTE }),
      });
      fc.assert(
        fc.property(
          fc.array(
            fc.record({
              readings: fc.array(reading, { maxLength: 3 }),
              rateLimitedAt: fc.option(fc.integer({ min: T0, max: T0 + 10 * MINUTE }), { nil: undefined }),
              usage: fc.tuple(fc.nat(10), fc.nat(500), fc.nat(90_000), fc.nat(20_000)),
            }),
            { maxLength: 20 },
          ),
          (steps) => {
            const l = learner();
            steps.forEach((step, k) => {
              const now = T0 + k * 30_000;
              l.observe(now, { readings: step.readings, rateLimitedAt: step.rateLimitedAt }, step.usage);
              l.limits(now).forEach((limit, i) => {
                expect(limit).toBeGreaterThanOrEqual(0);
                expect(limit).toBeLessThanOrEqual(TIERS[i]?.limit ?? 0);
              });
              expect(l.limits(now)[3]).toBe(20_000);
            });
          },
        ),
      );
    });
  });
});
