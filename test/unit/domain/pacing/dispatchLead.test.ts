import {
  ChainGap,
  DispatchLead,
  INITIAL_CHAIN_GAP_MS,
  LEAD_SAMPLE_DISPATCHES,
} from '../../../../lib/domain/pacing/dispatchLead';

/** A lead of 250 ms growing up to 1500 ms, for workers that may start their call up to 20 ms after its slot. */
const lead = () => new DispatchLead({ baseMs: 250, maxMs: 1_500, callWindowMs: 20 });

/** Counts `n` dispatches. */
function dispatch(l: DispatchLead, n: number): void {
  for (let i = 0; i < n; i++) l.dispatched();
}

describe('DispatchLead', () => {
  it('is the configured lead while no worker starts late', () => {
    const l = lead();
    dispatch(l, 500);
    expect(l.ms).toBe(250);
  });

  it('grows at the first late start to what that worker would have needed, its start delay less the call window, with a quarter more', () => {
    const l = lead();
    dispatch(l, 10);
    l.startedLate(600);
    expect(l.ms).toBe(725); // (600 − 20) × 1.25
  });

  it('leaves the latest 1 % of the sample out once it holds enough dispatches: 2 of 200', () => {
    const l = lead();
    dispatch(l, 200);
    for (const delay of [900, 700, 500, 400]) l.startedLate(delay);
    expect(l.ms).toBe(600); // the third largest: (500 − 20) × 1.25
  });

  describe('typicalMs, where a run behind its schedule takes its earliest slot', () => {
    it('stays at the configured lead for a tail of late starts: a tenth of the dispatches', () => {
      const l = lead();
      dispatch(l, 100);
      for (let i = 0; i < 10; i++) l.startedLate(900);
      expect(l.ms).toBe(1_100); // (900 − 20) × 1.25
      expect(l.typicalMs).toBe(250);
    });

    it('grows while more than a fifth of the dispatches start late (a slow table makes every claim late)', () => {
      const l = lead();
      dispatch(l, 10);
      for (const delay of [700, 600, 500]) l.startedLate(delay);
      expect(l.typicalMs).toBe(600); // the third largest, past the 2 a fifth of 10 lets be late: (500 − 20) × 1.25
    });
  });

  it('never goes past the most, nor below the configured lead', () => {
    const l = lead();
    l.startedLate(5_000);
    expect(l.ms).toBe(1_500);
    const small = lead();
    small.startedLate(100);
    expect(small.ms).toBe(250);
  });

  it(`falls back once the late starts are ${LEAD_SAMPLE_DISPATCHES} dispatches old`, () => {
    const l = lead();
    for (let i = 0; i < 30; i++) {
      dispatch(l, 3);
      l.startedLate(600);
    }
    dispatch(l, LEAD_SAMPLE_DISPATCHES - 90);
    expect(l.ms).toBe(725); // 30 late starts in the latest 1000 dispatches: 10 left out, 20 still count
    dispatch(l, 80);
    expect(l.ms).toBe(250);
  });
});

describe('ChainGap', () => {
  it('starts at the initial gap and grows to what a message that waited too long needed, less the call window, with a quarter more', () => {
    const gap = new ChainGap(20);
    expect(gap.ms).toBe(INITIAL_CHAIN_GAP_MS);
    gap.dispatched();
    gap.waitedTooLong(340);
    expect(gap.ms).toBe(400);
    gap.waitedTooLong(60);
    expect(gap.ms).toBe(400);
  });
});
