import { READ_ORDER } from '../../lib/ports/QueueReceiver';
import type { Clock } from '../../lib/ports/Clock';
import { readJobRecord, type JobRecord } from '../../lib/services/operator/jobRecord';
import { idempotencyKeyOf, peekDeadLetters, type DeadLetter } from './deadLetters';
import { adaptersOf, readStatus, type OpsStatus } from './laneOps';
import type { OpsTarget } from './target';

/** What holds a lane's queued jobs back now, and how long its backlog takes at its pace. */
export interface LaneHold {
  /** Each thing that holds dispatch back now, for people; none when the lane dispatches. */
  readonly reasons: readonly string[];
  /** When the last of those that say when lifts (epoch ms); a pause lasts until an operator resumes. */
  readonly until?: number;
  /** Jobs in the lane's source queues that wait to be received (visible or delayed). */
  readonly queued: number;
  /** The tightest sliding tier's pace, jobs a second, as configured or as learnt. */
  readonly perSecond?: number;
  /** About how long the lane's backlog takes at that pace from when the hold lifts: a job queued now goes within it. */
  readonly backlogSeconds?: number;
}

/** A dead letter of the job, as `ops job` shows it. */
export interface JobDeadLetter {
  readonly queue: DeadLetter['dlq'];
  readonly messageId: string;
  readonly reason?: string;
  readonly attempt?: number;
  readonly deadLetteredAt: number;
}

/**
 * What `ops job` shows of one job: its state from the records (see `JobRecord`), its dead letter if one is in a
 * dead-letter queue, and for a job that waits (`retrying`, or `queued` when nothing was recorded of it) what holds
 * the lane back. `queued` also covers a key no job had, or one whose record has expired: SQS cannot be asked whether
 * it holds a message.
 */
export interface JobStatus {
  readonly target: string;
  readonly lane: string;
  /** The key or message id asked about. */
  readonly job: string;
  /** The job's idempotency key, when a dead letter named another one than `job`. */
  readonly key: string;
  readonly state: Exclude<JobRecord['state'], 'none'> | 'queued';
  readonly record: JobRecord;
  readonly deadLetter?: JobDeadLetter;
  readonly waiting?: LaneHold;
  readonly at: number;
}

/** The tightest sliding tier's pace in jobs a second, at its limit in force (learnt, or configured). */
function pace(status: OpsStatus): number | undefined {
  const learnt = new Map((status.limits?.learned ?? []).map((l) => [l.tier, l.limit]));
  const rates = status.tiers.flatMap((tier) => {
    const seconds = { second: 1, minute: 60, hour: 3_600 }[tier.per as 'second' | 'minute' | 'hour'];
    if (seconds === undefined || tier.unit !== 'requests') return [];
    return [(status.limits?.learn === 'enforce' ? (learnt.get(tier.tier) ?? tier.limit) : tier.limit) / seconds];
  });
  return rates.length === 0 ? undefined : Math.min(...rates);
}

/**
 * What holds `status`'s lane back at its instant: a pause, the circuit, a 429, a spent tier or pool, an operator's
 * lowered limit, a learnt one; and its backlog.
 */
export function laneHold(status: OpsStatus): LaneHold {
  const { at, circuit, paused } = status;
  const holds: { readonly reason: string; readonly until?: number }[] = [];
  if (paused !== null) holds.push({ reason: `paused by ${paused.by}` });
  if (circuit.status !== 'closed')
    holds.push({
      reason: `the circuit is ${circuit.status}${circuit.reason === undefined ? '' : ` (${circuit.reason})`}`,
      ...(circuit.nextCheckAt === undefined || circuit.byOperator === true ? {} : { until: circuit.nextCheckAt }),
    });
  if (circuit.rateLimitedUntil !== undefined)
    holds.push({ reason: 'a 429 asked the lane to wait', until: circuit.rateLimitedUntil });
  const spent = (owner: string, tiers: OpsStatus['tiers']) =>
    tiers
      .filter((tier) => tier.remaining === 0)
      .map((tier) => ({
        reason: `${owner}tier ${tier.tier} is spent (${tier.used} of ${tier.limit})`,
        ...(tier.resetsAt === undefined ? {} : { until: tier.resetsAt }),
      }));
  const lowered = (owner: string, override: OpsStatus['override']) =>
    (override?.tiers ?? [])
      .filter((tier) => tier.limit < tier.configured)
      .map((tier) => ({
        reason: `${owner}tier ${tier.tier} is held to ${tier.limit} by ${override?.by ?? 'an operator'}'s override (configured ${tier.configured})`,
      }));
  holds.push(...spent('', status.tiers), ...lowered('', status.override));
  for (const pool of status.pools) {
    holds.push(...spent(`pool '${pool.pool}' `, pool.tiers), ...lowered(`pool '${pool.pool}' `, pool.override));
    if (pool.rateLimitedUntil !== undefined)
      holds.push({ reason: `a 429 holds pool '${pool.pool}'`, until: pool.rateLimitedUntil });
  }
  for (const learnt of status.limits?.learn === 'enforce' ? status.limits.learned : [])
    holds.push({ reason: `tier ${learnt.tier} paces at ${learnt.limit}, learnt from the API (${learnt.source})` });
  const queued = READ_ORDER.reduce((n, q) => n + status.queues[q].visible + status.queues[q].delayed, 0);
  const perSecond = pace(status);
  const until = holds.flatMap((hold) => (hold.until === undefined || hold.until <= at ? [] : [hold.until]));
  return {
    reasons: holds.map((hold) => hold.reason),
    ...(until.length === 0 ? {} : { until: Math.max(...until) }),
    queued,
    ...(perSecond === undefined ? {} : { perSecond, backlogSeconds: Math.ceil(queued / perSecond) }),
  };
}

/** The dead letter of `letter`, as `ops job` shows it. */
function deadLetterView(letter: DeadLetter): JobDeadLetter {
  return {
    queue: letter.dlq,
    messageId: letter.messageId,
    deadLetteredAt: letter.deadLetteredAt,
    ...(letter.reason === undefined ? {} : { reason: letter.reason }),
    ...(letter.attempt === undefined ? {} : { attempt: letter.attempt }),
  };
}

/**
 * Reads what became of the job `job` (its idempotency key, or a message id: a job sent without a key has its message
 * id for one, and a dead letter names both) on `target`: its record, then, unless it succeeded or is in flight, the
 * dead-letter queues (up to `maxLetters` letters looked at, each made visible again at once), and for a job that waits
 * the lane's status.
 */
export async function readJob(target: OpsTarget, clock: Clock, job: string, maxLetters: number): Promise<JobStatus> {
  const adapters = adaptersOf(target);
  const store = adapters.stores.idempotency;
  let key = job;
  let record = await readJobRecord(store, key, clock.now());
  let letter: DeadLetter | undefined;
  if (record.state !== 'succeeded' && record.state !== 'in-flight') {
    const named = (l: DeadLetter) => idempotencyKeyOf(l) === job || l.messageId === job || l.originalMessageId === job;
    // Every letter looked at counts toward `maxLetters`: the peek stops there, or at the job's letter.
    letter = (await peekDeadLetters(adapters, { max: maxLetters, until: named })).find(named);
    const letterKey = letter === undefined ? undefined : idempotencyKeyOf(letter);
    if (record.state === 'none' && letterKey !== undefined && letterKey !== job) {
      key = letterKey;
      record = await readJobRecord(store, key, clock.now());
    }
  }
  const state = letter !== undefined ? 'dead-lettered' : record.state === 'none' ? 'queued' : record.state;
  const waits = state === 'queued' || state === 'retrying';
  return {
    target: target.label,
    lane: target.lane,
    job,
    key,
    state,
    record,
    ...(letter === undefined ? {} : { deadLetter: deadLetterView(letter) }),
    ...(waits ? { waiting: laneHold(await readStatus(target, clock)) } : {}),
    at: clock.now(),
  };
}
