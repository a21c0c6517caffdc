import type { Classification } from '../../domain/outcome/classify';
import type { ApiResult } from '../../domain/outcome/apiResult';
import type { Settlement } from '../../domain/quota/ledger';
import type { Costs } from '../../domain/quota/tiers';
import type { ServiceConfig } from '../../config';
import type { ApiCaller } from '../../ports/ApiCaller';
import type { Clock } from '../../ports/Clock';
import type { JobEvent } from '../../ports/Invoker';
import type { QueueName, QueueReceiver } from '../../ports/QueueReceiver';
import type { CircuitStore } from '../../ports/CircuitStore';
import type { IdempotencyStore } from '../../ports/IdempotencyStore';
import type { LedgerStore } from '../../ports/LedgerStore';
import type { LimitStore } from '../../ports/LimitStore';
import type { JobResult, ResultHandler } from '../../ports/ResultHandler';
import type { LaneCircuitTransition } from '../circuitUpdates';
import type { MessageRef, Unconsumed } from '../queueOutcomes';
import type { CircuitReadTimes } from './circuitReadTimes';
import type { LimitReportMemory } from './limitReportMemory';

/** The stores a worker uses. */
export interface WorkerStores {
  readonly idempotency: IdempotencyStore;
  /** A worker only reports settlements; the orchestrator folds them into the ledger. */
  readonly ledger: Pick<LedgerStore, 'addSettlements'>;
  readonly circuit: CircuitStore;
  /** A worker only records what the API's answers say of its limits; the orchestrator learns from them. */
  readonly limits: Pick<LimitStore, 'recordReading' | 'recordRateLimited'>;
}

/** What a worker needs. */
export interface WorkerDeps {
  readonly clock: Clock;
  readonly stores: WorkerStores;
  readonly queues: QueueReceiver;
  readonly api: ApiCaller;
  readonly config: ServiceConfig;
  /** Randomness in [0, 1) for retry jitter. */
  readonly random: () => number;
  /**
   * Told the API's answer to each job whose call succeeded, once its success is recorded (see {@link ResultHandler}).
   * @default none: the answers are dropped
   */
  readonly results?: ResultHandler;
  /** Receives typed events for logs and metrics; the work never depends on it. */
  readonly onEvent?: (event: WorkerReport) => void;
  /**
   * How long the container's reads of the circuit have taken, which sets how early a job's check reads it (see
   * `CircuitReadTimes`): one for the container's life. @default each event's own, from 50 ms
   */
  readonly circuitReads?: CircuitReadTimes;
  /**
   * What the container last recorded of the API's limit headers, so that it records only news (see
   * `LimitReportMemory`): one for the container's life. @default each event's own: every reading is news
   */
  readonly limitReports?: LimitReportMemory;
}

/** The ids that follow one job through the logs: its message, its dispatch and its idempotency key. */
export interface JobKeys {
  readonly messageId: string;
  readonly dispatchId: string;
  readonly idempotencyKey: string;
}

/** What a worker reports as it goes (times are epoch ms). */
export type WorkerReport =
  /** This worker's circuit write recorded a transition (see `circuitTransitionsOf`): a change of status, with its reason. */
  | ({ readonly type: 'circuit-transition' } & LaneCircuitTransition)
  /** A job's API call ended at `at`, classified as `result` (`rate-limited` is a 429). */
  | ({
      readonly type: 'api-called';
      readonly lane: string;
      readonly at: number;
      readonly result: Classification['kind'];
    } & JobKeys)
  /**
   * The API caller could not get ready for a job's call or a health check's probe (`reason`: e.g. its key could not
   * be read from SSM): no request was made, no attempt spent, and nothing reported to the circuit.
   */
  | ({
      readonly type: 'caller-not-ready';
      readonly lane: string;
      readonly at: number;
      readonly reason: string;
    } & (JobKeys | { readonly checkId: string }))
  /** A job's message was sent to its dead-letter queue with `reason`. */
  | ({ readonly type: 'dead-lettered'; readonly lane: string; readonly at: number; readonly reason: string } & JobKeys)
  /**
   * A succeeded job's result could not be handed to {@link WorkerDeps.results} (the destination refused it or could
   * not be reached): it is dropped, and the job stays succeeded (its API call is never made again).
   */
  | ({
      readonly type: 'result-undelivered';
      readonly lane: string;
      readonly at: number;
      readonly reason: string;
    } & JobKeys);

/**
 * How a job of a batch ends a success: the batch records, deletes and reports its successes together, once all its
 * jobs have ended (see `processBatch`).
 */
export interface BatchEnding {
  /** The batch's id: the job's claim names it, and so points to where the batch records its successes. */
  readonly id: string;
  /**
   * Told of a success that owes no settlement, instead of writing the job's own success record: the batch records it
   * with the others (see {@link IdempotencyStore.recordBatchSuccesses}), with what its call counted (`used`).
   */
  readonly succeeded: (event: JobEvent, used: Costs) => void;
  /** Told of a succeeded job's message, instead of deleting it. */
  readonly deleteLater: (queue: QueueName, receiptHandle: string) => void;
  /** Told of a reservation given back by a job that started too late, instead of recording it. */
  readonly refundLater: (refund: Settlement) => void;
  /** Told of a job that started too late, instead of returning it to its queue (see `returnAllUnconsumed`). */
  readonly returnLater: (job: Unconsumed) => void;
  /** Told of a succeeded job's result, instead of handing it to {@link WorkerDeps.results}. */
  readonly resultLater: (result: JobResult) => void;
}

/** What a job asks of the circuit around its call (see `CircuitView`), shared by a batch's jobs. */
export interface CircuitCheck {
  /** How long before a job's slot its check reads the circuit. */
  aheadMs(): number;
  /** Told that another request to the state table (the job's claim of its key) took `ms`, as a read may. */
  tableRequestTook(ms: number): void;
  /**
   * Whether the job may still call at its slot `slotAt`, as the circuit is read just before it; the job checks its
   * `callBy` once this answers.
   */
  allows(job: Pick<JobEvent, 'slotAt'>): Promise<boolean>;
  /**
   * Told when the job's call learned that the lane may not call now: a 429 (told before it is reported), or a circuit
   * that no longer lets dispatch through after the report. A batch's later jobs then hold back at once, without
   * waiting for their reads of the circuit.
   */
  stop(): void;
  /** The run of 4xx refusals as the last read before a call found it, if one did (see `endRefusalRun`). */
  refusalRun(): number | undefined;
}

/** How `processJob` handles a job: alone by default, or as one of a batch. */
export interface JobOptions {
  readonly batch?: BatchEnding;
  /** The job's view of the circuit. @default the job's own `CircuitView` */
  readonly circuit?: CircuitCheck;
  /**
   * The slot of the message before this one of its FIFO group in the same batch, which ended just now: this job
   * waited for it. If it is then too late to call, its refund says how long after that slot it could start (see
   * `Settlement.chainGapMs`), not its start delay: the worker did not start late.
   */
  readonly chainedAfter?: number;
}

/** How one job event ended for this delivery. */
export type JobOutcome =
  | 'succeeded'
  | 'retried'
  | 'dead-lettered'
  /** The job already ended (a success or a dead-lettering is recorded for this key): the API was not called again. */
  | 'duplicate'
  /** Another delivery is calling the API for this key right now: this one stood back. */
  | 'busy-elsewhere'
  /** This very dispatch was delivered before and its call failed (the message was requeued or kept): nothing to do. */
  | 'already-failed'
  /** This very dispatch was delivered before and dead-lettered its message: nothing to do. */
  | 'already-ended'
  /**
   * This very dispatch was delivered before and spent its reservation there: it claimed the key (it called, or gave
   * its reservation back without calling) or stood back and gave it back. No record of the key keeps it out any more
   * (a later dispatch's call failed, say), but it neither calls nor gives anything back, and leaves the message to
   * the delivery that handled it.
   */
  | 'already-spent'
  /** The API refused the caller, not the job: the job went back to its queue without consuming an attempt. */
  | 'kept'
  /**
   * The worker started after the event's `callBy`: no call; the reservation was given back and the job went back to
   * its queue, without consuming an attempt (a FIFO message's receive is counted all the same), to be dispatched again.
   */
  | 'too-late'
  /**
   * The circuit opened (or a 429 paused the lane) while the job waited for its slot: no call; the reservation was
   * given back and the job went back to its queue as a job that started too late does.
   */
  | 'held-back'
  /**
   * The API caller could not get ready (its key could not be read; see `ApiCaller.prepare`): no call, and nothing
   * reported to the circuit, since the API said nothing; the reservation was given back and the job went back to its
   * queue as a job that started too late does.
   */
  | 'not-ready'
  /**
   * An earlier message of its FIFO group in the same batch did not end (it will be tried again, or another delivery
   * has it): no call, so that the group keeps its order; the reservation was given back and the job went back to its
   * queue as a job that started too late does.
   */
  | 'behind-unfinished'
  /**
   * The job's key could not be claimed: the state table failed every try of the claim. No call; the job went back to
   * its queue without consuming an attempt, as a job that started too late does, receivable again after 10 s, so that
   * its FIFO group goes on within seconds rather than after the message's visibility. Its reservation was given back
   * when its refund could be marked (see `IdempotencyStore.claimRefund`): a claim that landed with its answer lost
   * marked the dispatch already, and its quota goes unused.
   */
  | 'unclaimed';

/** How a health-check event ended. */
export type HealthCheckOutcome =
  | 'healthy'
  | 'unhealthy'
  /** The check was no longer current (replaced, already started, timed out, or the circuit moved on): no call. */
  | 'not-current'
  /**
   * The API caller could not get ready (its key could not be read): the check was not claimed and no probe made. It
   * times out unclaimed and the orchestrator sends another; the circuit is told nothing, as the API said nothing.
   */
  | 'not-ready';

/** How a worker event ended: a job's outcome, each job's of a batch in its order, or a health check's. */
export type WorkerOutcome = JobOutcome | readonly JobOutcome[] | HealthCheckOutcome;

/**
 * What a dispatch whose call ended owes the orchestrator: `owed`, a settlement, when the call used other than its
 * estimates (it also frees the call slot); else, on a lane with `maxInFlight`, a settlement that changes no count and
 * only frees the slot (`release`).
 */
export interface Owed {
  readonly owed?: Settlement;
  readonly release?: Settlement;
}

/** One job as its worker handles it: its event, the message it dispatches, when the worker started, and how. */
export interface JobContext {
  readonly event: JobEvent;
  readonly message: MessageRef;
  /** When this worker started on the job (epoch ms). */
  readonly start: number;
  readonly deps: WorkerDeps;
  readonly options: JobOptions;
  /** The job's view of the circuit: its batch's, or its own. */
  readonly circuit: CircuitCheck;
}

/**
 * A job's call once the API answered: its result at `now`, how it classifies, what the call owes (see {@link Owed}),
 * and what it counted of each of its units (`used`: as the answer reports it, else the job's estimate).
 */
export interface AnsweredCall extends Owed {
  readonly result: ApiResult;
  readonly now: number;
  readonly classification: Classification;
  readonly used: Costs;
}
