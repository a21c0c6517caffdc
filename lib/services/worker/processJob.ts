import { classify } from '../../domain/outcome/classify';
import { decideRetry } from '../../domain/outcome/retryPolicy';
import type { ServiceConfig } from '../../config';
import { StateFormatError } from '../../errors';
import type { ReadyCaller } from '../../ports/ApiCaller';
import type { Clock } from '../../ports/Clock';
import type { JobEvent } from '../../ports/Invoker';
import { attemptOf } from './attempts';
import { claimJob, standBack } from './claims';
import { CircuitView } from './circuitView';
import { endFailed, endSucceeded, giveBack, giveBackUnclaimed, type GiveBackReason } from './jobEndings';
import { keysOf, messageOf } from './jobMessage';
import { reportLimits } from './limitReports';
import { endedRecord, inProgress } from './keyRecords';
import { readyCaller } from './readyCaller';
import { owedBy, usageOf } from './settlements';
import { claimTrial, reportTrial } from './trialJobs';
import type { AnsweredCall, CircuitCheck, JobContext, JobOptions, JobOutcome, WorkerDeps } from './types';

/**
 * Handles one job: calls the API at most once per dispatch, and never again after a recorded success; then deletes,
 * retries, keeps or dead-letters the message, reports every result that concerns the circuit (transient failures,
 * 429s, 4xx refusals, and a success ending a run of refusals), and settles the reservation when the actual cost
 * differs from the reserved one (or nothing reached the API).
 *
 * A job refused with 401 or 403 is kept (see `returnUnconsumed`), and so is one refused with another 4xx once
 * the circuit is open after its report: the refusal then says the caller may be wrong, not the job.
 */
export async function processJob(event: JobEvent, deps: WorkerDeps, options: JobOptions = {}): Promise<JobOutcome> {
  const { config } = deps;
  const circuit = options.circuit ?? new CircuitView(event.lane, deps);
  const job: JobContext = { event, message: messageOf(event), start: deps.clock.now(), deps, options, circuit };
  const { start } = job;
  // The key is claimed before the wait for the slot, so that nothing but the call itself follows the slot: the call
  // leaves within the timer's lateness of it. A worker already late claims the key as this dispatch's failure: no
  // other delivery of this event can call after it (a 'failed' record of a dispatch keeps out only that dispatch),
  // and one that already claimed it keeps it.
  const lateAtStart = start > event.callBy;
  const claim = lateAtStart
    ? endedRecord('failed', event.dispatchId, start, config)
    : inProgress(event, start, config, options.batch);
  let held: Awaited<ReturnType<typeof claimJob>>;
  try {
    held = await claimJob(event, claim, start, deps);
  } catch (error) {
    // The table's errors reach here as the SDK throws them, after its retries (throttling, a timeout, a write whose
    // answer was lost): the key is not known to be claimed, so no call, and the job goes back. A record that cannot be
    // read is no passing failure: that one is thrown.
    if (error instanceof StateFormatError) throw error;
    return giveBackUnclaimed(job);
  }
  circuit.tableRequestTook(deps.clock.now() - start);
  if (held !== null) return standBack(held, event, job.message, start, deps);
  if (lateAtStart) return giveBack(job, 'late-start');
  const counting = attemptOf(event, deps);
  const ready = await waitForSlot(job);
  if (typeof ready === 'string') return giveBack(job, ready);
  const call = await callApi(job, ready);
  // What the answer says of the API's limits is recorded beside the job's ending, and never changes it.
  const reporting = reportLimits(call.result, call.classification, call.now, event.lane, deps);
  if (event.trial !== undefined) await reportTrial(event.lane, event.trial, call, deps);
  // From here on, the job's attempt is the service's own count: it is what the retry policy judges, what a dead
  // letter and a result carry.
  const counted: JobContext = { ...job, event: { ...event, attempt: await counting } };
  const decision = decideRetry(
    {
      classification: call.classification,
      attempt: counted.event.attempt,
      refillMs: refillMs(config),
      random: deps.random,
    },
    config.retry,
  );
  const outcome = await (decision.action === 'succeed'
    ? endSucceeded(counted, call)
    : endFailed(counted, call, decision));
  await reporting;
  return outcome;
}

/**
 * Gets the API caller ready while it waits until just before the job's slot (see {@link readyCaller}), checks that
 * the circuit still allows the call (see {@link CircuitView}; the job of a circuit's trial claims the check instead,
 * see `claimTrial`), then holds the worker to the slot (see {@link holdToSlot}). `callBy` is checked once the caller
 * is ready, and again just before the call leaves.
 * @returns the caller to call through now, or why the job gives its key back without calling.
 */
async function waitForSlot({ event, deps, circuit }: JobContext): Promise<ReadyCaller | GiveBackReason> {
  const { clock } = deps;
  // The claim itself took this worker past `callBy`: it was ready too late, as with a slow key read, and says so, so
  // that the lead grows while claims are slow (DynamoDB throttling), rather than every dispatch being given back.
  if (clock.now() > event.callBy) return 'late-ready';
  // The key is read (SSM and KMS, on a new container and whenever its cache has expired) during the lead, and before
  // the checks: nothing slow comes between the last check and the call.
  const preparing = readyCaller(deps, event.lane, keysOf(event));
  // The lead and a batch's span can be long: the circuit is read again just before the slot, so that a pause or an
  // open written since the dispatch, by any worker, binds this call too.
  const ahead = event.slotAt - checkAheadMs(event, circuit) - clock.now();
  if (ahead > 0) await clock.sleep(ahead);
  const ready = await preparing;
  if (ready === undefined) return 'not-ready';
  if (clock.now() > event.callBy) return 'late-ready';
  const allowed = event.trial === undefined ? circuit.allows(event) : claimTrial(event.lane, event.trial, deps);
  if (!(await allowed)) return 'held-back';
  // The circuit's read, or the trial's claim, took this worker past `callBy`: ready too late as well. It says how late,
  // so that the dispatch lead grows while DynamoDB is slow (and the container's next reads of the circuit go earlier).
  if (!(await holdToSlot(event, clock))) return 'late-ready';
  return ready;
}

/**
 * The requests a trial's claim makes (see `claimTrial`): it reads the circuit, then writes it, where a job's check
 * only reads it.
 */
const TRIAL_CLAIM_REQUESTS = 2;

/**
 * How long before the job's slot its check of the circuit starts: the read's lead (see {@link CircuitView}), or for
 * the job of a circuit's trial, long enough for its claim's read and write.
 */
function checkAheadMs(event: JobEvent, circuit: CircuitCheck): number {
  return event.trial === undefined ? circuit.aheadMs() : TRIAL_CLAIM_REQUESTS * circuit.aheadMs();
}

/**
 * Holds the worker to the event's slot: waits for `slotAt` if it is still ahead, then tells whether the call may
 * start, which it may until `callBy` (later, it could reach the API after the arrival margin).
 */
async function holdToSlot(event: JobEvent, clock: Clock): Promise<boolean> {
  const early = event.slotAt - clock.now();
  if (early > 0) await clock.sleep(early);
  return clock.now() <= event.callBy;
}

/** Makes the job's call through `caller`, reports it (`api-called`), and says what it came to and what it owes. */
async function callApi({ event, deps }: JobContext, caller: ReadyCaller): Promise<AnsweredCall> {
  const { clock, config } = deps;
  const result = await caller.call(event.body, { idempotencyKey: event.idempotencyKey });
  const now = clock.now();
  const classification = classify(result, now);
  deps.onEvent?.({ type: 'api-called', lane: event.lane, at: now, result: classification.kind, ...keysOf(event) });
  return { result, now, classification, ...owedBy(event, usageOf(result, config), config) };
}

/** Backoff cap: the longest a tier takes to give its whole limit back at its steady rate; else the retry settings cap. */
function refillMs(config: ServiceConfig): number {
  const windows = config.quotas.flatMap((t) => t.steadyRate()?.perMs ?? []);
  return windows.length === 0 ? Number.POSITIVE_INFINITY : Math.max(...windows);
}
