import fc from 'fast-check';
import { BulkTurns } from '../../../../lib/domain/priorities/bulkTurns';

const isBulk = (item: string) => item.startsWith('b');

describe('BulkTurns', () => {
  it('is due after 1 / share dispatches while bulk waits, and again after each bulk job', () => {
    const turns = new BulkTurns(0.25);
    const seen: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      seen.push(turns.due);
      turns.dispatched(false, true);
    }
    expect(seen).toEqual([false, false, false, false]);
    expect(turns.due).toBe(true);
    turns.dispatched(true, true);
    expect(turns.due).toBe(false);
    for (let i = 0; i < 3; i++) turns.dispatched(false, true);
    expect(turns.due).toBe(true);
  });

  it('earns bulk nothing while it has no job waiting, and no debt for bulk jobs that went alone', () => {
    const turns = new BulkTurns(0.5);
    for (let i = 0; i < 10; i++) turns.dispatched(false, false);
    expect(turns.due).toBe(false);
    for (let i = 0; i < 10; i++) turns.dispatched(true, true);
    turns.dispatched(false, true);
    turns.dispatched(false, true);
    expect(turns.due).toBe(true);
  });

  it('keeps no more than one turn for bulk jobs that were not at hand: they earn no burst', () => {
    const turns = new BulkTurns(0.25);
    for (let i = 0; i < 20; i++) turns.dispatched(false, true);
    turns.dispatched(true, true);
    expect(turns.due).toBe(false);
  });

  it('starts again from nothing after a reset', () => {
    const turns = new BulkTurns(0.5);
    turns.dispatched(false, true);
    turns.dispatched(false, true);
    turns.reset();
    expect(turns.due).toBe(false);
    expect(turns.turnsWithin(4)).toBe(1);
  });

  it('counts the turns bulk has within the next dispatches: with 0.1, the 10th, 20th…, two in 20', () => {
    const turns = new BulkTurns(0.1);
    expect(turns.turnsWithin(9)).toBe(0);
    expect(turns.turnsWithin(11)).toBe(1);
    expect(turns.turnsWithin(21)).toBe(2);
  });

  it('orders a buffer as the turns fall: the others in their order, bulk where its turns are, leftovers last', () => {
    const turns = new BulkTurns(1 / 3);
    expect(turns.order(['m1', 'm2', 'm3', 'm4', 'm5', 'b1', 'b2', 'b3', 'b4'], isBulk)).toEqual([
      'm1',
      'm2',
      'm3',
      'b1',
      'm4',
      'm5',
      'b2',
      'b3',
      'b4',
    ]);
  });

  it('gives bulk at least its share of every prefix of the order, while it has items left', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 99 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 40 }),
        (percent, main, bulk) => {
          const share = percent / 100;
          const items = [
            ...Array.from({ length: main }, (_, i) => `m${i}`),
            ...Array.from({ length: bulk }, (_, i) => `b${i}`),
          ];
          const ordered = new BulkTurns(share).order(items, isBulk);
          expect([...ordered].sort()).toEqual([...items].sort());
          expect(ordered.filter((item) => !isBulk(item))).toEqual(items.filter((item) => !isBulk(item)));
          let bulkSoFar = 0;
          ordered.forEach((item, i) => {
            if (isBulk(item)) bulkSoFar++;
            // Within the first i + 1 dispatches bulk has had floor((i + 1) × share) turns, less the first one's wait.
            if (bulkSoFar < bulk) expect(bulkSoFar).toBeGreaterThanOrEqual(Math.floor((i + 1) * share + 1e-9) - 1);
          });
        },
      ),
    );
  });
});
