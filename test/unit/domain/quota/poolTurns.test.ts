import { PoolTurns } from '../../../../lib/domain/quota/poolTurns';

describe('PoolTurns', () => {
  it('lets a lane take any slot while no other lane claims one', () => {
    const turns = new PoolTurns();
    expect(turns.bound('a', 0)).toBe(Number.POSITIVE_INFINITY);
    turns.claim('a', 500);
    expect(turns.bound('a', 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it("keeps a lane whose turn comes later from the slots at and after an earlier lane's claim, until it is used", () => {
    const turns = new PoolTurns();
    turns.reserved('fast', 0.1);
    turns.claim('slow', 1_000);
    // 'slow' has reserved nothing yet: its start is before 'fast''s finish, so its claim stands against 'fast'.
    expect(turns.bound('fast', 0)).toBe(1_000);
    expect(turns.bound('slow', 0)).toBe(Number.POSITIVE_INFINITY);
    turns.reserved('slow', 0.1);
    expect(turns.bound('fast', 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('lets a claim lapse at its slot, and a withdrawn one at once', () => {
    const turns = new PoolTurns();
    turns.reserved('fast', 0.1);
    turns.claim('slow', 1_000);
    expect(turns.bound('fast', 1_001)).toBe(Number.POSITIVE_INFINITY);
    turns.claim('slow', 2_000);
    turns.withdraw('slow');
    expect(turns.bound('fast', 0)).toBe(Number.POSITIVE_INFINITY);
  });

  it('shares the pool by weight between lanes that both wait: the one whose start is earlier goes first', () => {
    const turns = new PoolTurns();
    const taken = { a: 0, b: 0 };
    // Both always wait for the pool; each reservation takes a tenth of it. 'a' weighs 3, 'b' 1.
    for (let i = 0; i < 40; i++) {
      turns.claim('a', 10_000);
      turns.claim('b', 10_000);
      const next = turns.bound('a', 0) > 10_000 ? 'a' : 'b';
      expect(turns.bound(next === 'a' ? 'b' : 'a', 0)).toBe(10_000);
      turns.reserved(next, 0.1, next === 'a' ? 3 : 1);
      taken[next]++;
    }
    expect(taken).toEqual({ a: 30, b: 10 });
  });

  it('settles whenChanged once a claim is made, withdrawn or used', async () => {
    const turns = new PoolTurns();
    const changes: string[] = [];
    const watch = (what: string) => void turns.whenChanged().then(() => changes.push(what));
    watch('claim');
    turns.claim('a', 100);
    await Promise.resolve();
    watch('same claim');
    turns.claim('a', 100);
    await Promise.resolve();
    expect(changes).toEqual(['claim']);
    turns.reserved('a', 0.5);
    await Promise.resolve();
    expect(changes).toEqual(['claim', 'same claim']);
  });
});
