import type { MessageAttribute } from '../../../lib/ports/QueueReceiver';
import { SOURCE_QUEUE_RETENTION_MS, DEAD_LETTER_QUEUE_RETENTION_MS } from '../../../lib/queueRetention';
import { processJob } from '../../../lib/services/worker/processJob';
import { dispatchNext, workerWorld, type WorkerWorld } from './harness';
import type { ConditionCheck, ConditionScenario } from './types';

/** The attributes of a job with idempotency key `key`. */
function keyed(key: string): Record<string, MessageAttribute> {
  return { idempotencyKey: { dataType: 'String', value: key } };
}

/**
 * A copy of job `order-7`'s message that comes back after the job succeeded, as late as a copy can: SQS moved it to
 * its dead-letter queue after its receives (its delete had failed), and an operator redrove it at the end of the
 * dead-letter queue's retention. @returns how the copy's dispatch ended, and the calls the job got.
 */
async function lateCopyOfSuccess(world: WorkerWorld): Promise<{ outcome: string; calls: number }> {
  const { clock, queues, api, deps } = world;
  await queues.send('main', { body: '{"id":"order-7"}', attributes: keyed('order-7') });
  await processJob(await dispatchNext(world, 'main', 'd-1'), deps);
  await clock.advance(SOURCE_QUEUE_RETENTION_MS + DEAD_LETTER_QUEUE_RETENTION_MS);
  await queues.send('main', { body: '{"id":"order-7"}', attributes: keyed('order-7') });
  const outcome = await processJob(await dispatchNext(world, 'main', 'd-2'), deps);
  return { outcome, calls: api.calls.filter((c) => c.idempotencyKey === 'order-7').length };
}

/**
 * Job `order-8` refused with 400 and dead-lettered; once the cause is fixed, an operator redrives its dead letter
 * from the SQS console, which moves it back to its source queue as it is, every attribute kept.
 * @returns how the redriven job's dispatch ended, and the calls the job got.
 */
async function consoleRedrive(world: WorkerWorld): Promise<{ outcome: string; calls: number }> {
  const { clock, queues, api, deps } = world;
  await queues.send('main', { body: '{"id":"order-8"}', attributes: keyed('order-8') });
  api.answers.push({ kind: 'response', status: 400, headers: {} });
  await processJob(await dispatchNext(world, 'main', 'd-3'), deps);
  await clock.advance(3_600_000);
  for (const letter of await queues.receive('main-dlq', { max: 10, visibilityMs: 30_000, waitMs: 0 })) {
    await queues.send('main', { body: letter.body, attributes: letter.attributes });
    await queues.delete('main-dlq', letter.receiptHandle);
  }
  const outcome = await processJob(await dispatchNext(world, 'main', 'd-4'), deps);
  return { outcome, calls: api.calls.filter((c) => c.idempotencyKey === 'order-8').length };
}

/** Condition 11: copies that outlive their job's record, and the console's redrive of a dead letter. */
export const copiesOutliveRecord: ConditionScenario = {
  name: 'copies-outliving-their-record',
  condition: 11,
  injects:
    'a copy of a succeeded job redriven 18 days later; a dead-lettered job with an idempotencyKey redriven by the SQS console, its attributes kept',
  breaks:
    'the copy finds the record expired after a day and calls again; the redriven job is deleted as already ended, never called',
  async run(): Promise<ConditionCheck> {
    const late = await lateCopyOfSuccess(workerWorld());
    const redriven = await consoleRedrive(workerWorld());
    const held = late.calls === 1 && redriven.outcome === 'succeeded' && redriven.calls === 2;
    return {
      held,
      detail:
        `the late copy of a succeeded job ended '${late.outcome}' (${late.calls} calls in all); ` +
        `the job the console redrove ended '${redriven.outcome}' (${redriven.calls} calls in all)`,
    };
  },
};
