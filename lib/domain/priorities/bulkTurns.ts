/** Below 1 by less than this, a credit counts as 1: sums of shares such as 0.1 fall short of whole numbers. */
const ROUNDING = 1e-9;

/**
 * Whose turn it is between a lane's two classes of work (see `PrioritySettings`): the main class goes first, and a
 * bulk job goes ahead of it whenever bulk's share is due, so that bulk gets at least `share` of the dispatches while
 * it has jobs waiting.
 *
 * It keeps a credit. Each job dispatched while bulk has jobs waiting adds `share`; each bulk job dispatched takes 1
 * away. Bulk is due when the credit reaches 1: with share 0.1, one bulk job after every nine others; with 0.4, two
 * in every five. The credit never goes below 0, so bulk jobs that go while the main class has none (and take the
 * whole quota) earn the main class no debt; it never goes above `1 + share`, the most it reaches while bulk jobs go
 * at their turns, so turns bulk could not take (none of its jobs was at hand) earn it no burst.
 */
export class BulkTurns {
  private credit = 0;

  constructor(private readonly share: number) {}

  /** Counts one job dispatched: a bulk job (`bulk`), or another while bulk has jobs waiting (`bulkWaiting`). */
  dispatched(bulk: boolean, bulkWaiting: boolean): void {
    this.credit = this.after(this.credit, bulk, bulkWaiting);
  }

  /** Whether a bulk job goes next, ahead of the main class's. */
  get due(): boolean {
    return isDue(this.credit);
  }

  /** Bulk has no job waiting: its credit starts again from 0 when it has. */
  reset(): void {
    this.credit = 0;
  }

  /** How many of the next `dispatches` are bulk's turns, bulk having jobs waiting throughout. */
  turnsWithin(dispatches: number): number {
    let credit = this.credit;
    let turns = 0;
    for (let i = 0; i < dispatches; i++) {
      const due = isDue(credit);
      if (due) turns++;
      credit = this.after(credit, due, true);
    }
    return turns;
  }

  /**
   * `items` in the order they go from now: the others in their order, each bulk item (in theirs) where a turn of bulk
   * falls as {@link BulkTurns.dispatched} would count them, and the bulk items left over once the others are gone.
   */
  order<T>(items: readonly T[], isBulk: (item: T) => boolean): T[] {
    const bulk = items.filter(isBulk);
    const others = items.filter((item) => !isBulk(item));
    const ordered: T[] = [];
    let credit = this.credit;
    while (bulk.length > 0 || others.length > 0) {
      const bulkGoes = bulk.length > 0 && (isDue(credit) || others.length === 0);
      const next = bulkGoes ? bulk.shift() : others.shift();
      if (next !== undefined) ordered.push(next);
      credit = this.after(credit, bulkGoes, bulk.length > 0);
    }
    return ordered;
  }

  private after(credit: number, bulk: boolean, bulkWaiting: boolean): number {
    if (bulk) return Math.max(0, credit + this.share - 1);
    return bulkWaiting ? Math.min(1 + this.share, credit + this.share) : credit;
  }
}

function isDue(credit: number): boolean {
  return credit >= 1 - ROUNDING;
}
