import type { Clock } from '../../lib/ports/Clock';
import type { JobSpec } from './jobs';

/** The jobs in the backlog at the start: those without a later `atMs`. */
export function backlogOf(jobs: readonly JobSpec[]): JobSpec[] {
  return jobs.filter((job) => (job.atMs ?? 0) === 0);
}

/**
 * Sends the jobs that arrive later (`atMs` after 0) at their times from `start`, on `clock`: each wait ends at the
 * next one's time, and every job due by then goes in one call of `send`. Resolves once the last has been sent.
 */
export async function sendArrivals(
  jobs: readonly JobSpec[],
  start: number,
  clock: Pick<Clock, 'now' | 'sleep'>,
  send: (due: readonly JobSpec[]) => Promise<void>,
): Promise<void> {
  const later = jobs.filter((job) => (job.atMs ?? 0) > 0).sort((a, b) => (a.atMs ?? 0) - (b.atMs ?? 0));
  let next = 0;
  while (next < later.length) {
    const at = start + (later[next]?.atMs ?? 0);
    if (clock.now() < at) await clock.sleep(at - clock.now());
    const now = clock.now();
    let end = next;
    while (end < later.length && start + (later[end]?.atMs ?? 0) <= now) end++;
    await send(later.slice(next, end));
    next = end;
  }
}
