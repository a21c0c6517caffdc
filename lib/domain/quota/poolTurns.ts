/** A lane's standing in a pool's turns. */
interface LaneTurn {
  /** The virtual time its last reservation in the pool finished at (see {@link PoolTurns}). */
  finish: number;
  /** The slot it waits to reserve at, while it waits; its claim lapses once that instant has passed. */
  waitingFor?: number;
  /** Whether the pool is what holds it back (its own tiers would let it go sooner), or would be if it were sooner. */
  heldByPool?: boolean;
  /** How far ahead of its slots it dispatches. */
  leadMs: number;
}

/**
 * Whose turn it is to reserve in a pool that several lanes draw from (see `ServiceConfig.pools`): start-time fair
 * queuing by weight, on the pool's share of each reservation.
 *
 * Each reservation of a lane is tagged with a start `S = max(v, F)`, where `v` is the start of the reservation the
 * pool took last and `F` the lane's last finish, and finishes at `S + share / weight`; its share is the largest part
 * of a tier's limit it takes. A lane whose head waits for its slot claims that slot, and says whether the pool holds
 * it back there. While a claim the pool holds back stands, another lane whose start is later (or equal, and whose
 * name sorts after) may only take slots far enough before it not to push it back (see `LanePools`). So a lane is never
 * overtaken for ever by a lane that has more to send, lanes that compete share the pool by weight, and what a lane
 * leaves unused (its own tiers hold it, or it has nothing to send) goes to the others: a claim its own tiers hold
 * blocks nobody, nor does a lane that claims nothing, and a claim lapses at its slot.
 *
 * Turns follow the order of the slots only if the lanes reserve as far ahead of their slots: a lane whose workers
 * start late dispatches (and so reserves) further ahead (its lead, see `DispatchLead`), and would take the pool's
 * slots before a lane of a shorter lead came to them. So every lane of the pool dispatches at the longest lead of
 * them (see {@link PoolTurns.commonLead}).
 *
 * It lives in memory for one orchestrator invocation: each starts the turns afresh (and a lane's lead, once noted,
 * stays the invocation's).
 */
export class PoolTurns {
  private virtualNow = 0;
  private readonly lanes = new Map<string, LaneTurn>();
  private changed: { promise: Promise<void>; resolve: () => void } = deferred();

  /**
   * Notes that lane `lane` dispatches `leadMs` ahead of its slots. @returns the longest lead of the lanes of the pool:
   * how far ahead each dispatches (see the class's comment).
   */
  commonLead(lane: string, leadMs: number): number {
    this.turnOf(lane).leadMs = leadMs;
    let longest = leadMs;
    for (const turn of this.lanes.values()) longest = Math.max(longest, turn.leadMs);
    return longest;
  }

  /**
   * Lane `lane` waits to reserve at `slot` (its claim, see the class's comment, until `slot`), held back by the pool
   * or not (`heldByPool`: its own tiers would let it go sooner). Only a claim the pool holds back stands against
   * other lanes: a lane its own tiers hold leaves the pool's room to them.
   */
  claim(lane: string, slot: number, heldByPool = true): void {
    const turn = this.turnOf(lane);
    if (turn.waitingFor === slot && turn.heldByPool === heldByPool) return;
    turn.waitingFor = slot;
    turn.heldByPool = heldByPool;
    this.notify();
  }

  /** Lane `lane` no longer waits for the pool (its head went elsewhere, or its run ends). */
  withdraw(lane: string): void {
    const turn = this.lanes.get(lane);
    if (turn?.waitingFor === undefined) return;
    delete turn.waitingFor;
    this.notify();
  }

  /**
   * The earliest slot standing claims leave `lane` at `now`: those of lanes whose turn comes before its own (see the
   * class's comment) bound it; `Infinity` when none does.
   */
  bound(lane: string, now: number): number {
    const start = this.start(lane);
    let bound = Number.POSITIVE_INFINITY;
    for (const [other, turn] of this.lanes) {
      if (other === lane || turn.waitingFor === undefined || turn.waitingFor < now || turn.heldByPool !== true)
        continue;
      const otherStart = this.start(other);
      if (otherStart < start || (otherStart === start && other < lane)) bound = Math.min(bound, turn.waitingFor);
    }
    return bound;
  }

  /** Counts a reservation of `lane` taking `share` of the pool (see the class's comment), at `weight`; its claim ends. */
  reserved(lane: string, share: number, weight = 1): void {
    const turn = this.turnOf(lane);
    const start = this.start(lane);
    this.virtualNow = start;
    turn.finish = start + share / weight;
    delete turn.waitingFor;
    this.notify();
  }

  /** Settles once a claim is made, withdrawn or used: a lane that gave way looks again then. */
  whenChanged(): Promise<void> {
    return this.changed.promise;
  }

  private start(lane: string): number {
    return Math.max(this.virtualNow, this.lanes.get(lane)?.finish ?? 0);
  }

  private turnOf(lane: string): LaneTurn {
    let turn = this.lanes.get(lane);
    if (turn === undefined) {
      turn = { finish: 0, leadMs: 0 };
      this.lanes.set(lane, turn);
    }
    return turn;
  }

  private notify(): void {
    const { resolve } = this.changed;
    this.changed = deferred();
    resolve();
  }
}

/** A promise, and what settles it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}
