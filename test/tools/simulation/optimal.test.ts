import { parseTiers, type Costs } from '../../../lib/domain/quota/tiers';
import { optimalSeconds } from '../../../tools/simulation/optimal';

/** A Monday, 00:00 UTC. */
const START = Date.UTC(2026, 0, 5);

const ones = (n: number): Costs[] => Array.from({ length: n }, () => ({}));
const costs = (...amounts: number[]): Costs[] => amounts.map((cost) => ({ cost }));

describe('optimalSeconds', () => {
  it('sends a whole window at once, then the next as soon as the first leaves it', () => {
    // 10 at 0 s, 10 at 1 s (the window (T − 1 s, T] no longer holds 0 s), 5 at 2 s.
    expect(optimalSeconds(parseTiers([{ limit: 10, per: 'second' }]), ones(25), { start: START })).toBe(2);
  });

  it('spends a longer tier at the shorter tier’s pace, then waits for its window', () => {
    const tiers = parseTiers([
      { limit: 10, per: 'second' },
      { limit: 30, per: 'minute' },
    ]);
    // 30 calls in the first 3 s; the 31st and 32nd once the first ten leave the minute window.
    expect(optimalSeconds(tiers, ones(30), { start: START })).toBe(2);
    expect(optimalSeconds(tiers, ones(32), { start: START })).toBe(60);
  });

  it('sends nothing while the API is down', () => {
    const downTimes = [{ startMs: START + 500, endMs: START + 3_000 }];
    expect(optimalSeconds(parseTiers([{ limit: 10, per: 'second' }]), ones(15), { start: START, downTimes })).toBe(3);
  });

  it('counts calendar tiers in their zone: a spent day waits for the next local midnight', () => {
    const tiers = parseTiers([{ limit: 5, per: 'day' }]);
    const start = Date.parse('2026-01-05T18:00:00Z'); // 23:30 in Kolkata, 18:00 in UTC
    expect(optimalSeconds(tiers, ones(7), { start, timeZone: 'Asia/Kolkata' })).toBe(1_800);
    expect(optimalSeconds(tiers, ones(7), { start })).toBe(6 * 3_600);
  });

  it('counts cost units on a cost tier, and leaves out a call no tier could ever take', () => {
    const tiers = parseTiers([{ limit: 100, per: 'second', unit: 'cost' }]);
    // 60 + 40 fill the first second; 70 waits for the next; 500 can never go and does not hold the rest back.
    expect(optimalSeconds(tiers, costs(60, 40, 500, 70), { start: START })).toBe(1);
    expect(optimalSeconds(tiers, costs(500), { start: START })).toBe(0);
  });

  it('holds each call to every tier of the units it uses', () => {
    const tiers = parseTiers([
      { limit: 100, per: 'second', unit: 'input_tokens' },
      { limit: 10, per: 'second', unit: 'output_tokens' },
    ]);
    // The second call's input fits the first second, its output does not.
    expect(
      optimalSeconds(
        tiers,
        [
          { input_tokens: 10, output_tokens: 6 },
          { input_tokens: 10, output_tokens: 6 },
        ],
        { start: START },
      ),
    ).toBe(1);
  });
});
