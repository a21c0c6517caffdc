import type { ServiceConfig } from '../../config';
import type { CircuitStatus } from '../../domain/breaker/state';
import type { CallSlots } from '../../domain/inflight/callSlots';
import type { LimitLearner, LimitSource } from '../../domain/limits/limitLearner';
import type { OverrideInForce } from '../../domain/limits/limitOverride';
import type { Pacer } from '../../domain/pacing/pacer';
import type { QuotaLedger } from '../../domain/quota/ledger';
import type { Costs, TierKind } from '../../domain/quota/tiers';
import type { CircuitStore } from '../../ports/CircuitStore';
import type { Clock } from '../../ports/Clock';
import type { Invoker } from '../../ports/Invoker';
import type { LeaseStore } from '../../ports/LeaseStore';
import type { LedgerStore } from '../../ports/LedgerStore';
import type { LimitStore } from '../../ports/LimitStore';
import type { QueueReceiver } from '../../ports/QueueReceiver';
import type { LaneCircuitTransition } from '../circuitUpdates';

/** The stores the orchestrator uses. */
export interface OrchestratorStores {
  readonly lease: LeaseStore;
  readonly ledger: LedgerStore;
  readonly circuit: CircuitStore;
  /** The orchestrator only reads what the workers recorded of the API's limits, and learns from it. */
  readonly limits: Pick<LimitStore, 'loadObservations'>;
}

/** What the orchestrator needs. */
export interface OrchestratorDeps {
  readonly clock: Clock;
  readonly stores: OrchestratorStores;
  readonly queues: QueueReceiver;
  readonly invoker: Invoker;
  readonly config: ServiceConfig;
  /** Randomness in [0, 1) for pause jitter. */
  readonly random: () => number;
  /** Unique name of this orchestrator instance (the lease owner). */
  readonly owner: string;
  /** A fresh unique id (dispatch and health-check ids). */
  readonly newId: () => string;
  /** Receives typed events for logs, metrics and reports; the loop never depends on it. */
  readonly onEvent?: (event: OrchestratorEvent) => void;
}

/** The brand of a guarded port: a type only, which no value outside `guardedPorts` carries. */
declare const guardedPort: unique symbol;

/**
 * `Port` with its failures translated so that the run can tell them from its own bugs: a store's become
 * `StateUnavailableError` (all but a lost lease and a corrupt item), the queues' `QueueUnavailableError`. Only
 * `guardedPorts` makes one (`guardStores`, `guardQueues`), so a room typed to take it cannot be handed a raw adapter.
 */
export type Guarded<Port> = Port & { readonly [guardedPort]: true };

/** The orchestrator's stores, guarded (see {@link Guarded}). */
export interface GuardedStores {
  readonly lease: Guarded<LeaseStore>;
  readonly ledger: Guarded<LedgerStore>;
  readonly circuit: Guarded<CircuitStore>;
  readonly limits: Guarded<Pick<LimitStore, 'loadObservations'>>;
}

/** The queues, guarded (see {@link Guarded}). */
export type GuardedQueues = Guarded<QueueReceiver>;

/**
 * What one run reaches beyond itself: the stores and the queues guarded, the invoker (its failures are typed already:
 * see `Invoker`), and where its ids and its randomness come from. The run hands each room only the part it uses.
 */
export interface RunPorts {
  readonly stores: GuardedStores;
  readonly queues: GuardedQueues;
  readonly invoker: Invoker;
  /** A fresh unique id (dispatch and health-check ids). */
  readonly newId: () => string;
  /** Randomness in [0, 1) for pause jitter. */
  readonly random: () => number;
}

/**
 * The run's quota in memory, rehydrated from the saved ledger: the ledger, the call slots on a lane with
 * `maxInFlight`, and the pacer over both (it was built on them).
 */
export interface RunQuota {
  readonly ledger: QuotaLedger;
  readonly slots: CallSlots | undefined;
  readonly pacer: Pacer;
  /** What the lane learnt of the API's limits, unless it learns nothing (`limits.learn: off`) or is a pool's. */
  readonly limits?: LimitLearner;
  /** The operator's override of the tiers' limits the run started with, and the one it last read. */
  readonly override: OverrideInForce;
}

/** One tier's usage as a flush saw it: `used` units of `limit` in the window that holds the instant. */
export interface FlushedTierUsage {
  /** The tier as events name it (see `tierLabel`): `10/second`, `20000/day`. */
  readonly tier: string;
  readonly kind: TierKind;
  readonly used: number;
  readonly limit: number;
  /**
   * The limit in force the lane learnt, when it is not `limit` (see `LimitLearner`): in shadow, what it would pace at.
   */
  readonly learned?: { readonly limit: number; readonly source: LimitSource; readonly since: number };
}

/** What the orchestrator reports as it goes. */
export type OrchestratorEvent =
  /**
   * A job went to a worker at `at`; `waitedMs` since this run received its message (the wait for its pacing slot,
   * less the lead).
   */
  | {
      readonly type: 'dispatched';
      readonly at: number;
      readonly messageId: string;
      readonly dispatchId: string;
      readonly idempotencyKey: string;
      readonly queue: string;
      /** The estimates reserved, per named unit. */
      readonly costs: Costs;
      readonly waitedMs: number;
    }
  | { readonly type: 'dead-lettered'; readonly at: number; readonly messageId: string; readonly reason: string }
  | { readonly type: 'health-check-sent'; readonly at: number; readonly checkId: string }
  | { readonly type: 'invoke-failed'; readonly at: number; readonly error: string }
  /**
   * The ledger was saved (and the lease renewed, when due); `settlements` were folded into the ledger since the last
   * `flushed`, handing back `handedBack` units of each named unit (what calls that reached the API had reserved and
   * did not use); `usage` is each tier's, in the order of the configuration, as the run's ledger counts it at `at`;
   * `inFlight`, on a lane with `maxInFlight`, the calls that may be in progress.
   */
  | {
      readonly type: 'flushed';
      readonly at: number;
      readonly settlements: number;
      readonly handedBack: Costs;
      readonly usage: readonly FlushedTierUsage[];
      readonly inFlight?: number;
    }
  /**
   * A tier's learned limit in force changed at a flush (see `LimitLearner`), from what the API's answers said:
   * `from` and `to`, and what binds it now (`source`). In shadow (`limits.learn: shadow`) the lane still paces at the
   * configured limit.
   */
  | {
      readonly type: 'limit-changed';
      readonly at: number;
      readonly tier: string;
      readonly from: number;
      readonly to: number;
      readonly source: LimitSource;
      readonly configured: number;
    }
  /**
   * The operator's override of the tiers' limits (`ops limits set`, `reset`): at the run's start, the tiers it
   * changed (`when: now`); then at each save that finds it changed, the tiers whose limit moved: one no higher than
   * the run's tier holds `now`, a higher one from the `next-run` (the run's own tier `meanwhile`). `by` and `setAt`
   * say who set it and when; absent after a reset.
   */
  | {
      readonly type: 'limits-overridden';
      readonly at: number;
      readonly by?: string;
      readonly setAt?: number;
      readonly tiers: readonly {
        readonly tier: string;
        readonly configured: number;
        readonly from: number;
        readonly to: number;
        readonly when: 'now' | 'next-run';
        /** With `next-run`, the limit the run paces at until then. */
        readonly meanwhile?: number;
      }[];
    }
  /** A flush could not read what the workers recorded of the API's limits (`error`): it learnt nothing this time. */
  | { readonly type: 'limits-unread'; readonly at: number; readonly error: string }
  /** This run's circuit write changed the lane's circuit status (a health check sent: open to half-open). */
  | ({ readonly type: 'circuit-transition' } & LaneCircuitTransition)
  /**
   * The circuit as this run read it has status `status`: at its first read (no `previous`), then each time the status
   * read changes from `previous`.
   */
  | {
      readonly type: 'circuit-seen';
      readonly at: number;
      readonly status: CircuitStatus;
      readonly previous?: CircuitStatus;
    }
  /** A state-store call failed (see the state-outage policy of `StateLink`); the next try is at `retryAt`. */
  | {
      readonly type: 'state-unavailable';
      readonly at: number;
      readonly operation: string;
      readonly error: string;
      readonly retryAt: number;
    }
  /** The ledger was saved and the circuit read again after `unavailableMs` of failed state calls. */
  | { readonly type: 'state-recovered'; readonly at: number; readonly unavailableMs: number }
  /** A queue call failed; a failed receive or dead-letter send is tried again at `retryAt`. */
  | {
      readonly type: 'queue-unavailable';
      readonly at: number;
      readonly operation: string;
      readonly queue: string;
      readonly error: string;
      readonly retryAt: number;
    }
  /**
   * Not one unit could be sent before a message received now would have to be (its visibility less a worker's run):
   * `tier` (`20000/day`, or `429` for a `Retry-After` pause) holds the quota until `until`, and nothing is received
   * meanwhile. Reported once per episode (again if what holds it, or until when, changes). `kind` is the tier's
   * (`calendar` for a day or month tier), or `pause`.
   */
  | {
      readonly type: 'quota-exhausted';
      readonly at: number;
      readonly tier: string;
      readonly kind: TierKind | 'pause';
      readonly until: number;
    }
  /** The exhaustion `tier` reported has ended after `exhaustedMs`: receiving resumes. */
  | { readonly type: 'quota-available'; readonly at: number; readonly tier: string; readonly exhaustedMs: number }
  /**
   * A received message of `cost` could not be sent while its visibility covers a worker's run (or before the run's
   * end): `tier` holds it until `until`. It is hidden until then, so no run receives it again before it could go.
   */
  | {
      readonly type: 'message-held';
      readonly at: number;
      readonly messageId: string;
      readonly queue: string;
      readonly costs: Costs;
      readonly tier: string;
      readonly until: number;
    };

/** Bounds of one run. */
export interface RunOptions {
  /** Epoch ms at which the run stops dispatching, flushes and exits (shortly before the Lambda timeout). */
  readonly deadline: number;
  /** Checked every step; true stops the run early (e.g. a simulation that is done). */
  readonly shouldStop?: () => boolean;
}

/** How a run went. */
export interface RunSummary {
  /**
   * `held-elsewhere`: another orchestrator holds the lease, nothing was done; `lost`: the lease was taken over
   * mid-run; `unavailable`: the state store failed until the deadline before the run could start (take the lease,
   * read the ledger and the circuit), nothing was dispatched; `idle`: a lane of a deployment of several found its
   * source queues empty and took no lease (see `queuesHoldWork`).
   */
  readonly lease: 'acquired' | 'held-elsewhere' | 'lost' | 'unavailable' | 'idle';
  readonly dispatched: number;
  readonly deadLettered: number;
  readonly healthChecks: number;
  readonly invokeFailures: number;
}

/** What a run has done so far; each room counts its own outcomes into it, and it becomes the run's summary. */
export interface Tally {
  dispatched: number;
  deadLettered: number;
  healthChecks: number;
  invokeFailures: number;
}
