import { readJobRecord } from '../../../../lib/services/operator/jobRecord';
import { MemoryIdempotencyStore } from '../../../../tools/memory/MemoryStores';

const NOW = Date.UTC(2026, 10, 29, 12);
const LATER = NOW + 86_400_000;

describe('readJobRecord', () => {
  it('knows nothing of a key never written, or whose record expired', async () => {
    const store = new MemoryIdempotencyStore();
    expect(await readJobRecord(store, 'k', NOW)).toEqual({ state: 'none' });
    await store.putIdempotency('k', { status: 'succeeded', dispatchId: 'd-1', at: NOW - 10, expiresAt: NOW - 1 });
    expect(await readJobRecord(store, 'k', NOW)).toEqual({ state: 'none' });
  });

  it('reads a success, a dead letter with its reason, and a failed call with the attempts spent', async () => {
    const store = new MemoryIdempotencyStore();
    await store.putIdempotency('ok', {
      status: 'succeeded',
      dispatchId: 'd-1',
      at: NOW - 5,
      expiresAt: LATER,
      usage: { tokens: 420 },
      result: 'sqs arn:aws:sqs:us-east-1:123456789012:results',
    });
    await store.putIdempotency(
      'dead',
      { status: 'dead-lettered', dispatchId: 'd-2', at: NOW - 4, expiresAt: LATER, reason: 'permanent: 400' },
      { spentAttempt: true },
    );
    await store.putIdempotency(
      'again',
      { status: 'failed', dispatchId: 'd-3', at: NOW - 3, expiresAt: LATER },
      { spentAttempt: true },
    );

    expect(await readJobRecord(store, 'ok', NOW)).toEqual({
      state: 'succeeded',
      at: NOW - 5,
      dispatchId: 'd-1',
      usage: { tokens: 420 },
      result: 'sqs arn:aws:sqs:us-east-1:123456789012:results',
    });
    expect(await readJobRecord(store, 'dead', NOW)).toEqual({
      state: 'dead-lettered',
      at: NOW - 4,
      dispatchId: 'd-2',
      reason: 'permanent: 400',
      attemptsSpent: 1,
    });
    expect(await readJobRecord(store, 'again', NOW)).toEqual({
      state: 'retrying',
      at: NOW - 3,
      dispatchId: 'd-3',
      attemptsSpent: 1,
    });
  });

  it("reads a claim by its batch's record: in flight until its worker's time is up unless the batch lists it", async () => {
    const store = new MemoryIdempotencyStore();
    const claim = (dispatchId: string) => ({
      status: 'in-progress' as const,
      dispatchId,
      expiresAt: LATER,
      batch: { id: 'b-1', busyUntil: NOW + 1_000 },
    });
    await store.putIdempotency('a', claim('d-a'));
    await store.putIdempotency('b', claim('d-b'));
    await store.recordBatchSuccesses('b-1', {
      at: NOW + 500,
      expiresAt: LATER,
      jobs: [{ dispatchId: 'd-a', usage: { tokens: 9 } }],
      result: 'none',
    });

    expect(await readJobRecord(store, 'b', NOW)).toEqual({
      state: 'in-flight',
      until: NOW + 1_000,
      dispatchId: 'd-b',
      attemptsSpent: 0,
    });
    // The batch recorded the first job's success, whether or not its worker's time is up; not the second's, whose
    // message comes back once it is.
    const succeeded = { state: 'succeeded', at: NOW + 500, dispatchId: 'd-a', usage: { tokens: 9 }, result: 'none' };
    expect(await readJobRecord(store, 'a', NOW + 600)).toEqual(succeeded);
    expect(await readJobRecord(store, 'a', NOW + 2_000)).toEqual(succeeded);
    expect(await readJobRecord(store, 'b', NOW + 2_000)).toEqual({
      state: 'retrying',
      at: NOW + 1_000,
      dispatchId: 'd-b',
      attemptsSpent: 0,
    });
  });
});
