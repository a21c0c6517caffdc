import type { JournalEntry } from '../../../tools/swarm/faultyPorts';
import { callsAfterEnded } from '../../../tools/swarm/invariants';

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
