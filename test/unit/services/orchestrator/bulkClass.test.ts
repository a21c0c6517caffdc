import { BULK_QUIET_MS, BulkClass, LOOK_UP_MS } from '../../../../lib/services/orchestrator/bulkClass';

const of = (queues: string) =>
  [...queues].map((q) => ({ message: { queue: q === 'b' ? ('bulk' as const) : ('main' as const) } }));
const letters = (buffer: ReturnType<typeof of>) => buffer.map(({ message }) => message.queue[0]).join('');

describe('BulkClass', () => {
  it("asks for as many bulk jobs as bulk's turns among the buffered jobs, less those buffered", () => {
    const bulk = new BulkClass(0.25);
    // With share 0.25 the credit reaches 1 after four jobs: one turn within 5, two within 9.
    expect(bulk.missing(of('mmmm'), 0)).toBe(0);
    expect(bulk.missing(of('mmmmmmmm'), 0)).toBe(1);
    expect(bulk.missing(of('mmmmmmmmmmmm'), 0)).toBe(2);
    expect(bulk.missing(of('mmmmmmmmbmmm'), 0)).toBe(1);
  });

  it('takes the bulk queue for empty for a while once a read finds nothing, and starts its credit again', () => {
    const bulk = new BulkClass(0.5);
    bulk.dispatched(of('m')[0]!, of('b'), 0);
    bulk.found(0, 1_000);
    expect(bulk.missing(of('mmmm'), 1_000 + BULK_QUIET_MS - 1)).toBe(0);
    // From a credit of 0 again: two jobs earn bulk the third.
    expect(bulk.missing(of('mm'), 1_000 + BULK_QUIET_MS)).toBe(0);
    expect(bulk.missing(of('mmm'), 1_000 + BULK_QUIET_MS)).toBe(1);
  });

  it('puts each bulk job where its turn falls: with share 0.5, every other job once the first turn is earned', () => {
    expect(letters(new BulkClass(0.5).arrange(of('mmmmbb')))).toBe('mmbmbm');
  });

  it('looks into the other queues again only while bulk jobs go alone, and not sooner than LOOK_UP_MS apart', () => {
    const bulk = new BulkClass(0.1);
    expect(bulk.lookUpDue(of('mb'), 0)).toBe(false);
    expect(bulk.lookUpDue(of('bb'), 0)).toBe(true);
    expect(bulk.lookUpDue(of('bb'), LOOK_UP_MS - 1)).toBe(false);
    expect(bulk.lookUpDue(of('bb'), LOOK_UP_MS)).toBe(true);
  });

  it('lets a batch hold bulk jobs that go alone only up to a limit, and any job before others', () => {
    const bulk = new BulkClass(0.1);
    const buffer = of('mbmbbbb');
    expect([1, 2, 3, 4, 5, 6].map((i) => bulk.joinsBatch(buffer, i, 4))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});
