import { RunAllowance } from '../../../../lib/services/orchestrator/runAllowance';

const NOTHING = { units: [0, 0], slots: 0 };

describe('RunAllowance', () => {
  describe('none', () => {
    it('lets nothing go', () => {
      const none = RunAllowance.none(2);
      expect(none.allows(0, [1, 1])).toEqual([false, false]);
      expect(none.allowsSlots(0, 1)).toBe(false);
    });
  });

  describe('next', () => {
    it('grants twice what was used, at least what is needed and at least one of each, none of it used', () => {
      const used = RunAllowance.none(2).next(1_000, NOTHING).use([1, 0]).use([2, 0]);
      const next = used.next(2_000, { units: [0, 4], slots: 5 });

      expect(next.until).toBe(2_000);
      expect(next.granted).toEqual({ units: [6, 4], slots: 5 });
      expect(next.used).toEqual(NOTHING);
    });
  });

  describe('allows and allowsSlots', () => {
    it('count what was used and given back, per tier and in call slots, up to `until`', () => {
      const allowance = RunAllowance.none(2)
        .next(1_000, { units: [3, 1], slots: 2 })
        .use([2, 1]);

      expect(allowance.allows(1_000, [1, 0])).toEqual([true, true]);
      expect(allowance.allows(1_000, [2, 1])).toEqual([false, false]);
      expect(allowance.allows(1_001, [0, 0])).toEqual([false, false]);
      expect(allowance.allowsSlots(1_000, 1)).toBe(true);
      expect(allowance.allowsSlots(1_000, 2)).toBe(false);
      expect(allowance.giveBack([2, 1]).allowsSlots(1_000, 2)).toBe(true);
    });
  });

  describe('boundBy', () => {
    it('keeps the smaller of what is left and what was attempted, up to the earlier end', () => {
      const current = RunAllowance.none(2)
        .next(1_000, { units: [10, 10], slots: 10 })
        .use([8, 1]);
      const attempted = current.next(3_000, NOTHING); // twice what was used: [16, 2], 2 slots

      const bound = current.boundBy(attempted);
      expect(bound.until).toBe(1_000);
      expect(bound.granted).toEqual({ units: [2, 2], slots: 2 });
      expect(bound.used).toEqual(NOTHING);
    });

    it('leaves nothing after a final save, which attempted no allowance', () => {
      const current = RunAllowance.none(1).next(1_000, { units: [10], slots: 10 });
      const bound = current.boundBy(undefined);
      expect(bound.allows(0, [1])).toEqual([false]);
      expect(bound.granted).toEqual({ units: [0], slots: 0 });
    });
  });
});
