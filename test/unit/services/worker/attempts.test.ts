import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { ATTRIBUTES } from '../../../../lib/ports/QueueReceiver';
import { applyCircuitEvent } from '../../../../lib/services/circuitUpdates';
import { processJob } from '../../../../lib/services/worker/processJob';
import {
  httpStatus,
  LANE,
  receiveJobEvent,
  sendJob,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';

/** Receives the FIFO queue's head and hands it straight back, as the orchestrator hands back a group's later messages. */
async function handBack(h: WorkerHarness): Promise<void> {
  const [message] = await h.queues.receive('fifo', { max: 1, visibilityMs: 30_000, waitMs: 0 });
  if (message === undefined) throw new Error('nothing to hand back');
  await h.queues.changeVisibility('fifo', message.receiptHandle, 0);
}

/** Dispatches the FIFO queue's head once it is visible again (a retry's delay is at most a minute here). */
async function dispatch(h: WorkerHarness, dispatchId: string) {
  await h.clock.advance(60_000);
  return processJob(await receiveJobEvent(h, 'fifo', dispatchId), h.deps);
}

describe('processJob: a FIFO job’s attempts', () => {
  it('counts only the calls that spent an attempt, not the receives of hand-backs, stand-downs and pauses', async () => {
    const h = workerHarness();
    h.api.fallback = httpStatus(503);
    await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g' });

    await expect(dispatch(h, 'd-1')).resolves.toBe('retried');
    await h.clock.advance(60_000);
    await handBack(h);
    await handBack(h);
    // Received for the fourth time, its second attempt: 3 allowed, so it is retried, not given up.
    await expect(dispatch(h, 'd-2')).resolves.toBe('retried');
    await expect(dispatch(h, 'd-3')).resolves.toBe('dead-lettered');

    expect(h.api.calls).toHaveLength(3);
    const [letter] = h.queues.messages('fifo-dlq');
    expect(letter?.attributes[ATTRIBUTES.reason]?.value).toMatch(/^gave up after 3 attempts/);
    expect(letter?.attributes[ATTRIBUTES.attempt]?.value).toBe('3');
  });

  it('spends no attempt on a call whose job is kept (the API refused the caller)', async () => {
    const h = workerHarness();
    h.api.answers.push(httpStatus(401), httpStatus(401), httpStatus(503));
    h.api.fallback = httpStatus(503);
    await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g' });

    // Each 401 opens the circuit, and no job calls until it closes: an operator closes it each time.
    const close = () =>
      applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'operator-closed', by: 'ops' },
        h.clock.now(),
        circuitPolicyFrom(h.config.circuit),
      );
    await expect(dispatch(h, 'd-1')).resolves.toBe('kept');
    await close();
    await expect(dispatch(h, 'd-2')).resolves.toBe('kept');
    await close();
    await expect(dispatch(h, 'd-3')).resolves.toBe('retried');
    await expect(h.stores.idempotency.attemptsSpent('m-1')).resolves.toBe(1);
  });

  it('reads no count on its first receive', async () => {
    const h = workerHarness();
    await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g' });
    const count = jest.spyOn(h.stores.idempotency, 'attemptsSpent');

    await expect(dispatch(h, 'd-1')).resolves.toBe('succeeded');
    expect(count).not.toHaveBeenCalled();
  });
});
