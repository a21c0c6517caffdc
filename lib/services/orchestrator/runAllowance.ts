/** Units per tier (in the configured order) and call slots: what dispatches take of a {@link RunAllowance}. */
export interface Amount {
  readonly units: readonly number[];
  /** Call slots; they bound a run only on a lane with `maxInFlight`. */
  readonly slots: number;
}

/**
 * What the last saved ledger lets this run still dispatch before it saves again, and what the run has used of it
 * since: per tier at most `granted.units[i]` units, and at most `granted.slots` calls, all slotted no later than
 * `until`. The ledger holds the units as if they had all gone at `until` (see the ledger's `Allowance`), the call
 * slots as calls in progress from then on (see `CallSlots.toJSON`), so a successor that rehydrates it after a crash
 * counts whatever the run dispatched within it. An immutable value: each change makes a new one.
 */
export class RunAllowance {
  private constructor(
    readonly until: number,
    readonly granted: Amount,
    readonly used: Amount,
  ) {}

  /** No allowance, over `tiers` tiers: nothing may go before a save has granted one. */
  static none(tiers: number): RunAllowance {
    const nothing = nothingOf(tiers);
    return new RunAllowance(Number.NEGATIVE_INFINITY, nothing, nothing);
  }

  /** For each tier, whether `units` fit what is left of it at `at`. */
  allows(at: number, units: readonly number[]): boolean[] {
    return units.map((u, i) => at <= this.until && (this.used.units[i] ?? 0) + u <= (this.granted.units[i] ?? 0));
  }

  /** Whether `count` more call slots, slotted at `at`, fit what is left of it. */
  allowsSlots(at: number, count: number): boolean {
    return at <= this.until && this.used.slots + count <= this.granted.slots;
  }

  /** This allowance with one dispatch of `units` per tier, and its call slot, counted as used. */
  use(units: readonly number[]): RunAllowance {
    return this.withUsed(units, 1);
  }

  /** This allowance with what {@link RunAllowance.use} counted for a dispatch that never started given back. */
  giveBack(units: readonly number[]): RunAllowance {
    return this.withUsed(units, -1);
  }

  /**
   * The allowance a save granting it up to `until` holds: twice what the run used of this one (so a steady run rarely
   * flushes early), at least `need`, at least one unit of each tier and one call slot; none of it used.
   */
  next(until: number, need: Amount): RunAllowance {
    const { used } = this;
    const granted = {
      units: this.granted.units.map((_, i) => Math.max(1, 2 * (used.units[i] ?? 0), need.units[i] ?? 0)),
      slots: Math.max(1, 2 * used.slots, need.slots),
    };
    return new RunAllowance(until, granted, nothingOf(granted.units.length));
  }

  /**
   * After a save of `attempted` (none for a final save) that failed, whose write may nonetheless have landed (its
   * answer lost), the bound of what either outcome leaves a successor: from now on at most the smaller of what is
   * left of this allowance and `attempted`, per tier and in call slots, and no later than the earlier of their ends.
   *
   *   save S1 lands (allowance A1) ── run uses u ── save S2 (A2): answer lost ── run dispatches x more ── crash
   *   S2 did not land: the successor counts S1's ledger, holding A1:  safe while x <= A1 − u
   *   S2 landed:       the successor counts S2's ledger, holding A2:  safe while x <= A2
   *
   * Only a save known to have landed lifts the bound: it grants a fresh allowance.
   */
  boundBy(attempted: RunAllowance | undefined): RunAllowance {
    const { granted, used } = this;
    const left = (had: number, spent: number, other: number | undefined) =>
      Math.max(0, Math.min(had - spent, other ?? 0));
    return new RunAllowance(
      Math.min(this.until, attempted?.until ?? Number.NEGATIVE_INFINITY),
      {
        units: granted.units.map((g, i) => left(g, used.units[i] ?? 0, attempted?.granted.units[i])),
        slots: left(granted.slots, used.slots, attempted?.granted.slots),
      },
      nothingOf(granted.units.length),
    );
  }

  private withUsed(units: readonly number[], sign: 1 | -1): RunAllowance {
    const used = {
      units: this.granted.units.map((_, i) => (this.used.units[i] ?? 0) + sign * (units[i] ?? 0)),
      slots: this.used.slots + sign,
    };
    return new RunAllowance(this.until, this.granted, used);
  }
}

/** Nothing of `tiers` tiers: 0 units each, and no call slot. */
function nothingOf(tiers: number): Amount {
  return { units: Array.from({ length: tiers }, () => 0), slots: 0 };
}
