import { recoverySeconds } from '../../../tools/bench/measures';

const call = (at: number, status: number) => ({ at, id: `j${at}`, status });

describe('recoverySeconds', () => {
  it('is the time from the outage end to the first job call answered 200 after it', () => {
    const calls = [call(900, 200), call(1_000, 503), call(1_250, 429), call(1_420, 200), call(1_500, 200)];
    expect(recoverySeconds(calls, 1_000)).toBe(0.42);
  });

  it('counts a success arriving exactly at the end', () => {
    expect(recoverySeconds([call(2_000, 200)], 2_000)).toBe(0);
  });

  it('is -1 when nothing succeeded after the outage', () => {
    expect(recoverySeconds([call(500, 200), call(1_500, 503)], 1_000)).toBe(-1);
  });
});
