/**
 * The persisted form of {@link CallSlots}: the calls known to be in progress as `[dispatch id, until]`, and slots
 * held for dispatches not known by id as `[count, until]` (see {@link CallSlots.toJSON}).
 */
export interface CallSlotsJSON {
  readonly a: readonly (readonly [string, number])[];
  readonly h?: readonly (readonly [number, number])[];
}

/** Slots held for a number of dispatches a run may have made after a save, each until `until`. */
interface HeldSlots {
  readonly count: number;
  readonly until: number;
}

/**
 * The cap on a lane's calls in progress (`maxInFlight`): a slot per dispatch, taken at dispatch and freed when its
 * worker reports that the call has ended (a settlement naming the dispatch), or else once the call can no longer be
 * running: `holdMs` (the arrival margin plus the worker's timeout) after its slot, since a worker calls by its slot
 * plus the arrival margin and runs no longer than its timeout. So a worker killed mid-call, or one whose report is
 * lost, never leaks a slot, and a second delivery of an event, which never calls again, takes none.
 *
 * Pure: time comes in as `now`. A run saves it with its ledger, holding slots for the dispatches it may make before
 * its next save (see {@link CallSlots.toJSON}), so that a successor after a crash counts every call that may still
 * be in progress.
 */
export class CallSlots {
  private readonly known = new Map<string, number>();
  private held: HeldSlots[] = [];

  constructor(
    /** The most calls in progress at once. */
    readonly cap: number,
    /** How long after its slot a call may still be in progress. */
    readonly holdMs: number,
    saved?: CallSlotsJSON,
  ) {
    for (const [id, until] of saved?.a ?? []) this.known.set(id, until);
    for (const [count, until] of saved?.h ?? []) this.held.push({ count, until });
  }

  /**
   * The slots of a cap that the calls in progress were never counted against (they were dispatched under a
   * configuration without it, and the saved state lists none of them): every slot is held as taken until the calls
   * slotted at or before `slot`, any number of them, can no longer be in progress.
   */
  static filledThrough(cap: number, holdMs: number, slot: number): CallSlots {
    return new CallSlots(cap, holdMs, { a: [], h: [[cap, slot + holdMs]] });
  }

  /** Calls that may be in progress at `now`; forgets those that no longer can be. */
  inFlight(now: number): number {
    for (const [id, until] of this.known) if (until <= now) this.known.delete(id);
    this.held = this.held.filter(({ until }) => until > now);
    return this.known.size + this.held.reduce((sum, { count }) => sum + count, 0);
  }

  /** Slots free at `now`: never below 0, even when a successor inherits more held slots than the cap. */
  free(now: number): number {
    return Math.max(0, this.cap - this.inFlight(now));
  }

  /** The earliest instant a slot frees by itself (one held runs out), or `Infinity` if none is held. */
  nextExpiry(): number {
    return Math.min(...this.known.values(), ...this.held.map(({ until }) => until));
  }

  /**
   * Takes a slot for dispatch `id`, whose call is slotted at `slotAt`.
   * @throws RangeError when no slot is free at `now`: the caller checks {@link CallSlots.free} first.
   */
  take(id: string, slotAt: number, now: number): void {
    if (this.free(now) === 0) throw new RangeError(`no call slot is free at ${now} (cap ${this.cap})`);
    this.known.set(id, slotAt + this.holdMs);
  }

  /**
   * Frees the slot of dispatch `id`, if it holds one: its call has ended, or never started. A dispatch not known by
   * id (made by a run that crashed before saving it, or freed already) frees nothing: its slot, if any, runs out.
   * @returns whether a slot was freed.
   */
  release(id: string): boolean {
    return this.known.delete(id);
  }

  /**
   * The form to persist. `allowance` holds `count` more slots for dispatches the run may make, slotted no later than
   * `until`, before it saves again: a successor that rehydrates this after a crash counts them in progress until
   * they can no longer be.
   */
  toJSON(allowance?: HeldSlots): CallSlotsJSON {
    const held =
      allowance === undefined || allowance.count === 0
        ? this.held
        : [...this.held, { count: allowance.count, until: allowance.until + this.holdMs }];
    const a = [...this.known].map(([id, until]) => [id, until] as const);
    return held.length === 0 ? { a } : { a, h: held.map(({ count, until }) => [count, until] as const) };
  }
}

const isInstant = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

/** Whether `json` has the shape of a {@link CallSlotsJSON}. */
export function isCallSlotsJSON(json: unknown): json is CallSlotsJSON {
  if (typeof json !== 'object' || json === null) return false;
  const { a, h } = json as { a?: unknown; h?: unknown };
  const pairs = (list: unknown, first: (v: unknown) => boolean) =>
    Array.isArray(list) &&
    list.every((pair) => Array.isArray(pair) && pair.length === 2 && first(pair[0]) && isInstant(pair[1]));
  return (
    pairs(a, (id) => typeof id === 'string') &&
    (h === undefined || pairs(h, (n) => Number.isInteger(n) && (n as number) > 0))
  );
}
