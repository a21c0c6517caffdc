import fc from 'fast-check';
import { CallSlots, isCallSlotsJSON } from '../../../../lib/domain/inflight/callSlots';

const HOLD_MS = 30_025;

describe('CallSlots', () => {
  it('takes a slot per dispatch up to the cap, and frees it when its dispatch reports', () => {
    const slots = new CallSlots(2, HOLD_MS);
    slots.take('a', 1_000, 900);
    slots.take('b', 1_100, 900);
    expect(slots.free(900)).toBe(0);
    expect(() => slots.take('c', 1_200, 900)).toThrow(RangeError);
    expect(slots.release('a')).toBe(true);
    expect(slots.free(900)).toBe(1);
    expect(slots.release('a')).toBe(false);
    expect(slots.release('unknown')).toBe(false);
    expect(slots.free(900)).toBe(1);
  });

  it('frees a slot whose worker never reports once its call can no longer be running: its slot plus the hold', () => {
    const slots = new CallSlots(1, HOLD_MS);
    slots.take('killed', 1_000, 800);
    expect(slots.nextExpiry()).toBe(1_000 + HOLD_MS);
    expect(slots.free(1_000 + HOLD_MS - 1)).toBe(0);
    expect(slots.free(1_000 + HOLD_MS)).toBe(1);
    expect(slots.inFlight(1_000 + HOLD_MS)).toBe(0);
    expect(slots.nextExpiry()).toBe(Number.POSITIVE_INFINITY);
  });

  describe('filledThrough', () => {
    it('holds every slot until calls slotted by then can no longer be in progress, and saves them so', () => {
      const slots = CallSlots.filledThrough(4, HOLD_MS, 2_000);
      expect(slots.free(1_000)).toBe(0);
      expect(slots.free(2_000 + HOLD_MS - 1)).toBe(0);
      expect(slots.release('unknown')).toBe(false);
      const saved = JSON.parse(JSON.stringify(slots.toJSON())) as never;
      expect(new CallSlots(4, HOLD_MS, saved).free(2_000 + HOLD_MS - 1)).toBe(0);
      expect(slots.free(2_000 + HOLD_MS)).toBe(4);
    });
  });

  it('saves the calls in progress and the slots held for dispatches to come, and a successor counts both', () => {
    const slots = new CallSlots(5, HOLD_MS);
    slots.take('a', 1_000, 900);
    const json = JSON.parse(JSON.stringify(slots.toJSON({ count: 3, until: 5_000 }))) as unknown;
    expect(json).toEqual({ a: [['a', 1_000 + HOLD_MS]], h: [[3, 5_000 + HOLD_MS]] });
    expect(isCallSlotsJSON(json)).toBe(true);
    const successor = new CallSlots(5, HOLD_MS, json as never);
    expect(successor.inFlight(6_000)).toBe(4);
    // The report of a call the predecessor knew frees it; one of a dispatch it never saved frees nothing.
    expect(successor.release('a')).toBe(true);
    expect(successor.release('made-after-the-save')).toBe(false);
    expect(successor.inFlight(6_000)).toBe(3);
    expect(successor.inFlight(5_000 + HOLD_MS)).toBe(0);
    // Re-saved as they are, held slots and all.
    expect(successor.toJSON()).toEqual({ a: [] });
  });

  it('keeps inherited held slots in its own saves while they last, and never reports fewer than 0 free', () => {
    const successor = new CallSlots(2, HOLD_MS, { a: [['x', 50_000]], h: [[4, 40_000]] });
    expect(successor.free(1_000)).toBe(0);
    expect(successor.toJSON({ count: 1, until: 2_000 })).toEqual({
      a: [['x', 50_000]],
      h: [
        [4, 40_000],
        [1, 2_000 + HOLD_MS],
      ],
    });
  });

  it.each([
    [{ a: [['x', 1]] }, true],
    [{ a: [], h: [[2, 1]] }, true],
    [{ a: [[1, 1]] }, false],
    [{ a: [['x']] }, false],
    [{ a: [], h: [[0, 1]] }, false],
    [{ a: [], h: [[1.5, 1]] }, false],
    [{ h: [] }, false],
    [null, false],
  ])('tells a saved form %j from anything else', (json, ok) => {
    expect(isCallSlotsJSON(json)).toBe(ok);
  });

  /**
   * A model of the calls in progress: every dispatch calls at some point of its window and ends before its worker's
   * time is up; its report may come, come twice, come late or never come. Before each round of dispatches the run
   * saves, holding slots for the round (as `LedgerSync` does), and it may crash after the round: a successor then
   * rehydrates the last save, which does not know the round's dispatches by id. At no instant may the calls in
   * progress exceed the cap, and once every call has ended and its hold has run out, every slot is free again.
   */
  it('never lets more calls be in progress than the cap, and never leaks a slot (property, injected times)', () => {
    const step = fc.record({
      advanceMs: fc.integer({ min: 0, max: 20_000 }),
      tries: fc.integer({ min: 0, max: 4 }),
      callMs: fc.integer({ min: 0, max: HOLD_MS - 25 }),
      report: fc.constantFrom('once', 'twice', 'never', 'late'),
      crash: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { minLength: 1, maxLength: 60 }), (cap, steps) => {
        let slots = new CallSlots(cap, HOLD_MS);
        let now = 0;
        let next = 0;
        const calls: { readonly start: number; readonly end: number }[] = [];
        let reports: { readonly at: number; readonly id: string }[] = [];
        for (const s of steps) {
          now += s.advanceMs;
          for (const report of reports) if (report.at <= now) slots.release(report.id);
          reports = reports.filter((report) => report.at > now);
          const slotAt = now + 250;
          const saved = JSON.parse(JSON.stringify(slots.toJSON({ count: s.tries, until: slotAt }))) as unknown;
          for (let i = 0; i < s.tries && slots.free(now) > 0; i++) {
            const id = `d${next++}`;
            slots.take(id, slotAt, now);
            const start = slotAt + (s.callMs % 25);
            const end = start + s.callMs;
            calls.push({ start, end });
            const reportAt = s.report === 'never' ? undefined : s.report === 'late' ? end + 5_000 : end;
            if (reportAt !== undefined) reports.push({ at: reportAt, id });
            if (s.report === 'twice' && reportAt !== undefined) reports.push({ at: reportAt + 1, id });
          }
          if (s.crash) slots = new CallSlots(cap, HOLD_MS, saved as never);
          for (const { start } of calls)
            if (calls.filter((c) => c.start <= start && c.end > start).length > cap) return false;
        }
        const allOver = Math.max(now + 250, ...calls.map((c) => c.end)) + HOLD_MS;
        return slots.free(allOver) === cap;
      }),
    );
  });
});
