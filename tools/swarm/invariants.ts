import { ATTRIBUTES, READ_ORDER } from '../../lib/ports/QueueReceiver';
import { jobIdOf } from '../simulation/jobs';
import type { SimulationResult } from '../simulation/runSimulation';
import { MAX_CIRCUIT_CHECK_AHEAD_MS } from '../../lib/services/worker/circuitReadTimes';
import { SLOW_TABLE, type SwarmCase } from './drawCase';
import { isCall, type JournalEntry } from './faultyPorts';
import { tiersAtArrival } from './tiersAtArrival';

/** The invariants the swarm checks, by name, with what each promises. */
export const INVARIANTS = {
  'tiers-at-arrival':
    'no call arrives at the API while one of its tiers is full, as the API counts it (but what it allows below the configuration and has not yet said, or lies about), and no window of a configured tier ever holds more',
  'max-in-flight': "no more calls in progress at the API than the lane's maxInFlight",
  'one-probe': 'at most one health check at the API at a time',
  'ended-is-ended':
    'no call for a job after it succeeded or was dead-lettered, unless its worker died before recording the success',
  'fifo-order': "a FIFO group's jobs are handled one at a time, in order",
  'retry-after-binds':
    "no call arrives while a 429's Retry-After the service has written is running (but a call whose check was sent in the 50 ms before, up to 1 s with a slow table, and the workers' clock skew)",
  'attempts-honoured': 'a job given up after its attempts made that many calls that could count as one',
  'nothing-lost': 'every job is somewhere: succeeded, in a dead-letter queue, or still in a queue',
  'dead-letters-have-reasons': 'every message in a dead-letter queue carries its reason',
  'orchestrator-survives': 'an orchestrator run throws only for a fault injected into it',
} as const;

/** The name of one invariant. */
export type InvariantName = keyof typeof INVARIANTS;

/** One breach of an invariant, with what was seen. */
export interface Breach {
  readonly invariant: InvariantName;
  readonly detail: string;
}

/** What one seed's run gives the checks. */
export interface RunRecord {
  readonly swarmCase: SwarmCase;
  readonly run: SimulationResult;
  /** The job calls the workers made and the dead letters they sent, in order (see `FaultyApi`). */
  readonly journal: readonly JournalEntry[];
  readonly peakProbes: number;
}

/** Checks every invariant of {@link INVARIANTS} on a finished run. */
export function checkInvariants(record: RunRecord): Breach[] {
  const breaches: Breach[] = [];
  const breach = (invariant: InvariantName, detail: string) => breaches.push({ invariant, detail });
  const { run, swarmCase, journal } = record;
  const { config } = swarmCase.scenario;
  const { report } = run;
  for (const detail of tiersAtArrival(swarmCase, run)) breach('tiers-at-arrival', detail);
  const peak = run.api.peakCallsInFlight();
  if (config.maxInFlight !== undefined && peak > config.maxInFlight)
    breach('max-in-flight', `${peak} calls in progress at once, maxInFlight ${config.maxInFlight}`);
  if (record.peakProbes > 1) breach('one-probe', `${record.peakProbes} health checks in progress at once`);
  for (const detail of callsAfterEnded(journal)) breach('ended-is-ended', detail);
  const knownAfterMs = swarmCase.families.includes(SLOW_TABLE) ? SLOW_TABLE_PAUSE_KNOWN_AFTER_MS : undefined;
  for (const detail of callsWhilePaused(journal, knownAfterMs)) breach('retry-after-binds', detail);
  if (report.fifoOrderViolations > 0)
    breach('fifo-order', `${report.fifoOrderViolations} FIFO jobs handled out of order or together`);
  const deadLetters = READ_ORDER.flatMap((q) => run.queues.messages(`${q}-dlq`));
  const lost = lostJobs(record, deadLetters);
  if (lost.length > 0) breach('nothing-lost', `${lost.length} of ${report.jobs} jobs are nowhere: ${lost.join(', ')}`);
  const withoutReason = deadLetters.filter((m) => m.attributes[ATTRIBUTES.reason] === undefined);
  if (withoutReason.length > 0)
    breach(
      'dead-letters-have-reasons',
      `${withoutReason.length} without a reason: ${withoutReason.map((m) => jobIdOf(m.body) ?? m.body).join(', ')}`,
    );
  for (const m of deadLetters) {
    const reason = m.attributes[ATTRIBUTES.reason]?.value ?? '';
    const gaveUp = /^gave up after (\d+)/.exec(reason);
    if (gaveUp === null) continue;
    const jobId = jobIdOf(m.body);
    const made = journal.filter((c) => isCall(c) && c.jobId === jobId && c.crashed !== 'before-call').length;
    if (made < config.retry.maxAttempts)
      breach(
        'attempts-honoured',
        `${jobId} given up (${reason}) after ${made} calls, maxAttempts ${config.retry.maxAttempts}`,
      );
  }
  for (const error of run.orchestratorErrors)
    if (!error.includes('injected')) breach('orchestrator-survives', `a run threw: ${error}`);
  return breaches;
}

/** The jobs that neither succeeded nor sit in a queue (a source queue, in flight or not, or a dead-letter queue). */
function lostJobs({ run }: RunRecord, deadLetters: readonly { readonly body: string }[]): string[] {
  const succeeded = new Set(run.api.succeededIds());
  const queued = new Set([...READ_ORDER.flatMap((q) => run.queues.messages(q)), ...deadLetters].map((m) => m.body));
  return run.jobs
    .filter((job) => !queued.has(job.body) && !succeeded.has(jobIdOf(job.body) ?? ''))
    .map((job) => jobIdOf(job.body) ?? job.body);
}

/**
 * A line per job called again after it succeeded (a 200 whose worker lived to record it) or after its message landed
 * in a dead-letter queue. A 4xx alone does not end a job: while the circuit is not closed the job is kept.
 */
export function callsAfterEnded(journal: readonly JournalEntry[]): string[] {
  const ended = new Map<string, { readonly at: number; readonly how: string }>();
  const found: string[] = [];
  for (const entry of journal) {
    if (entry.jobId === undefined) continue;
    if (entry.status === 'dead-lettered') {
      if (!ended.has(entry.jobId)) ended.set(entry.jobId, { at: entry.at, how: 'dead-lettered' });
      continue;
    }
    if (entry.crashed === 'before-call') continue;
    const before = ended.get(entry.jobId);
    if (before !== undefined) found.push(`${entry.jobId} called at +${entry.at - before.at} ms after it ${before.how}`);
    if (entry.status === 200 && entry.crashed === undefined) ended.set(entry.jobId, { at: entry.at, how: 'succeeded' });
  }
  return found;
}

/** How long after a pause is written a call may still leave: its worker read the circuit up to 50 ms before its slot. */
const PAUSE_KNOWN_AFTER_MS = 60;
/** The same with a slow table: the read goes as far ahead as the table's requests took, up to 1 s. */
const SLOW_TABLE_PAUSE_KNOWN_AFTER_MS = MAX_CIRCUIT_CHECK_AHEAD_MS + 10;
/** The workers' clocks may run up to 40 ms ahead, and the pause's end with them. */
const PAUSE_END_SKEW_MS = 50;

/**
 * A line per job call that arrived while a pause written before it was still running, more than `knownAfterMs` after it
 * was written.
 */
export function callsWhilePaused(
  journal: readonly JournalEntry[],
  knownAfterMs: number = PAUSE_KNOWN_AFTER_MS,
): string[] {
  const pauses: { readonly at: number; readonly until: number }[] = [];
  const found: string[] = [];
  for (const entry of journal) {
    if (entry.status === 'paused') pauses.push(entry);
    else if (isCall(entry) && entry.crashed !== 'before-call') {
      const pause = pauses.find((p) => entry.at > p.at + knownAfterMs && entry.at < p.until - PAUSE_END_SKEW_MS);
      if (pause !== undefined)
        found.push(
          `${entry.jobId ?? '?'} called ${entry.at - pause.at} ms after a pause until +${pause.until - pause.at} ms was written`,
        );
    }
  }
  return found;
}
