import type { JournalEntry } from '../../../tools/swarm/faultyPorts';
import { callsAfterEnded, callsWhilePaused } from '../../../tools/swarm/invariants';

describe("the swarm's ended-is-ended check", () => {
  it('finds a call after a success its worker recorded', () => {
    const journal: JournalEntry[] = [
      { jobId: 'job-1', at: 100, status: 200 },
      { jobId: 'job-1', at: 350, status: 200 },
    ];
    expect(callsAfterEnded(journal)).toEqual(['job-1 called at +250 ms after it succeeded']);
  });

  it('finds a call after the job landed in a dead-letter queue', () => {
    const journal: JournalEntry[] = [
      { jobId: 'job-1', at: 100, status: 400 },
      { jobId: 'job-1', at: 120, status: 'dead-lettered' },
      { jobId: 'job-1', at: 500, status: 400 },
    ];
    expect(callsAfterEnded(journal)).toEqual(['job-1 called at +380 ms after it dead-lettered']);
  });

  it('lets a job be called again after a success its worker died before recording, and after a 4xx that kept it', () => {
    const journal: JournalEntry[] = [
      { jobId: 'job-1', at: 100, status: 200, crashed: 'after-call' },
      { jobId: 'job-1', at: 200, status: 200 },
      { jobId: 'job-2', at: 100, status: 400 },
      { jobId: 'job-2', at: 300, status: 200 },
    ];
    expect(callsAfterEnded(journal)).toEqual([]);
  });
});

describe("the swarm's retry-after-binds check", () => {
  const pause = { jobId: undefined, at: 1_000, status: 'paused', until: 11_000 } as const;

  it('finds a call that arrives while a pause written before it runs', () => {
    const journal: JournalEntry[] = [pause, { jobId: 'job-2', at: 2_000, status: 200 }];
    expect(callsWhilePaused(journal)).toEqual(['job-2 called 1000 ms after a pause until +10000 ms was written']);
  });

  it('lets through a call within 60 ms of the write (its check was sent before), and calls once the pause is over', () => {
    const journal: JournalEntry[] = [
      pause,
      { jobId: 'job-2', at: 1_050, status: 429 },
      { jobId: 'job-3', at: 11_000, status: 200 },
    ];
    expect(callsWhilePaused(journal)).toEqual([]);
  });
});
