import type { Circuit, CircuitStatus, CircuitTransition, OperatorHold } from '../../domain/breaker/state';
import { tierUsageAt, type TierUsageReadout } from '../../domain/quota/tierUsage';
import { tierLabel, type Tier } from '../../domain/quota/tiers';
import { LimitLearner, type LearnedLimitsJSON, type LimitSource } from '../../domain/limits/limitLearner';
import type { LimitLearningMode, LimitSettings } from '../../domain/limits/settings';
import { overriddenTiers } from '../../domain/limits/limitOverride';
import type { CircuitStore } from '../../ports/CircuitStore';
import type { LimitStore } from '../../ports/LimitStore';
import type { Clock } from '../../ports/Clock';
import type { LeaseStore } from '../../ports/LeaseStore';
import type { LedgerStore } from '../../ports/LedgerStore';
import { loadCircuit } from '../circuitUpdates';
import { overrideView, type OverrideView } from './limitOverrides';

/** What {@link readLaneStatus} reads: the lane's stores, and the lane's settings (a `ServiceConfig` will do). */
export interface LaneStatusDeps {
  readonly circuits: CircuitStore;
  readonly ledgers: LedgerStore;
  readonly leases: LeaseStore;
  readonly clock: Clock;
  /** The lane (`ServiceConfig.lane`). */
  readonly lane: string;
  /** The lane's quota tiers (`ServiceConfig.quotas`). */
  readonly quotas: readonly Tier[];
  /** The time zone of its day and month tiers (`ServiceConfig.timeZone`). */
  readonly timeZone: string;
  /** How the lane learns its limits (`ServiceConfig.limits`). @default nothing learnt is shown */
  readonly limits?: LimitSettings;
  /**
   * Where the operator's override of the tiers' limits is read. @default the one the saved ledger comes with, so none
   * for a lane no run has saved yet
   */
  readonly overrides?: Pick<LimitStore, 'loadOverride'>;
}

/** A tier whose learned limit in force is not its configured one, for operators (see `LimitLearner`). */
export interface LearnedLimitView {
  /** The tier as events and logs name it (see `tierLabel`). */
  readonly tier: string;
  readonly configured: number;
  /** The limit in force: in shadow, what the lane would pace at. */
  readonly limit: number;
  readonly source: LimitSource;
  /** Since when (epoch ms). */
  readonly since: number;
}

/** The lane's circuit for operators: plain JSON, times in epoch ms. */
export interface CircuitView {
  readonly status: CircuitStatus;
  /** Why it opened (open and half-open). */
  readonly reason?: string;
  /** When it opened (open and half-open). */
  readonly openedAt?: number;
  /** When the next health check is due (open, unless forced open). */
  readonly nextCheckAt?: number;
  /** True when an operator forced it open: no health check goes until an operator closes it. */
  readonly byOperator?: boolean;
  /** Until when a 429 asked the lane to wait, while that is still ahead. */
  readonly rateLimitedUntil?: number;
  /** The last transitions (at most 10), oldest first. */
  readonly recentTransitions: readonly CircuitTransition[];
}

/** The lane's lease as stored: its holder, until when, and its fencing token. */
export interface LeaseView {
  readonly owner: string;
  readonly expiresAt: number;
  readonly fencingToken: number;
  /** Whether it had expired at the status's instant (the holder's run ended without releasing it, or is late renewing). */
  readonly expired: boolean;
}

/** A lane's status for operators, as `ops status --json` prints it: plain JSON, times in epoch ms. */
export interface LaneStatus {
  readonly lane: string;
  /** When it was read. */
  readonly at: number;
  /** The operator's hold, or `null` when the lane is not paused. */
  readonly paused: OperatorHold | null;
  readonly circuit: CircuitView;
  /** Each tier's usage against its limit, in configured order. */
  readonly tiers: readonly TierUsageReadout[];
  /** The lease, or `null` when no orchestrator holds it (never taken, or released). */
  readonly lease: LeaseView | null;
  /**
   * How the lane learns its limits (`shadow`: it paces at the configured ones), and each tier whose learned limit in
   * force differs from the configured one, as the orchestrator last saved them. Absent for a pool.
   */
  readonly limits?: { readonly learn: LimitLearningMode; readonly learned: readonly LearnedLimitView[] };
  /**
   * The operator's override of the tiers' limits (`ops limits set`), or `null` when the configured limits stand. The
   * tiers' usage above is against the limits it sets; a learned limit is below them.
   */
  readonly override: OverrideView | null;
}

/**
 * Reads the lane's circuit, ledger, lease and limits override (reads at once) into a {@link LaneStatus} at `clock.now()`. The
 * tiers' usage is the stored ledger's (see `tierUsageAt`): what the orchestrator last saved.
 * @throws StateFormatError when a stored item is malformed; the stores' own errors as they come.
 */
export async function readLaneStatus(deps: LaneStatusDeps): Promise<LaneStatus> {
  const { lane } = deps;
  const at = deps.clock.now();
  const [circuit, ledger, lease, override] = await Promise.all([
    loadCircuit(deps.circuits, lane),
    deps.ledgers.loadLedger(lane),
    deps.leases.readLease(lane),
    deps.overrides?.loadOverride(lane),
  ]);
  const overridden = override ?? ledger?.override;
  const quotas = overriddenTiers(deps.quotas, overridden);
  return {
    lane,
    at,
    paused: holdView(circuit),
    circuit: circuitView(circuit, at),
    tiers: tierUsageAt(quotas, ledger, at, deps.timeZone),
    lease:
      lease === null
        ? null
        : { owner: lease.owner, expiresAt: lease.expiresAt, fencingToken: lease.token, expired: at >= lease.expiresAt },
    ...(deps.limits === undefined ? {} : { limits: learnedView(quotas, deps.limits, ledger?.learned, at) }),
    override: overrideView(deps.quotas, overridden),
  };
}

/** The learned limits `saved` holds at `now` that differ from the configured ones, under `settings`. */
function learnedView(
  quotas: readonly Tier[],
  settings: LimitSettings,
  saved: LearnedLimitsJSON | undefined,
  now: number,
): NonNullable<LaneStatus['limits']> {
  const learned =
    settings.learn === 'off' || saved === undefined
      ? []
      : new LimitLearner(quotas, settings, saved)
          .describe(now)
          .filter(({ limit, configured }) => limit !== configured)
          .map(({ tier, configured, limit, source, since }) => ({
            tier: tierLabel(tier),
            configured,
            limit,
            source,
            since,
          }));
  return { learn: settings.learn, learned };
}

/** The operator's hold on `circuit`, as {@link LaneStatus.paused} shows it. */
export function holdView(circuit: Circuit): OperatorHold | null {
  return circuit.hold === null ? null : { since: circuit.hold.since, by: circuit.hold.by };
}

/** `circuit` as {@link LaneStatus.circuit} shows it at `now`. */
export function circuitView(circuit: Circuit, now: number): CircuitView {
  const { state } = circuit;
  const common = {
    ...(circuit.pausedUntil > now ? { rateLimitedUntil: circuit.pausedUntil } : {}),
    recentTransitions: circuit.transitions.map((t) => ({ at: t.at, from: t.from, to: t.to, reason: t.reason })),
  };
  switch (state.status) {
    case 'closed':
      return { status: 'closed', ...common };
    case 'open':
      return {
        status: 'open',
        reason: state.reason,
        openedAt: state.openedAt,
        ...(state.byOperator === true ? { byOperator: true } : { nextCheckAt: state.nextCheckAt }),
        ...common,
      };
    case 'half-open':
      return { status: 'half-open', reason: state.reason, openedAt: state.openedAt, ...common };
  }
}
