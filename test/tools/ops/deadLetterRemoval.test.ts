import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueues } from '../../../lib/adapters/sqs/SqsQueues';
import type { QueueName } from '../../../lib/ports/QueueReceiver';
import { deadLetter } from '../../../lib/services/queueOutcomes';
import { createLaneQueues } from '../../../tools/local/laneQueues';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryIdempotencyStore } from '../../../tools/memory/MemoryStores';
import { passes } from '../../../tools/ops/deadLetterFilter';
import { deleteDeadLetters, purgeDeadLetters } from '../../../tools/ops/deadLetterRemoval';
import { peekDeadLetters, type DeadLetter, type DeadLetterQueues } from '../../../tools/ops/deadLetters';
import { redrive } from '../../../tools/ops/redrive';
import { testSqsClient, uniqueName } from '../../helpers/awsClients';

describe('dead-letter housekeeping', () => {
  let sqs: SQSClient;
  let queueUrls: Record<QueueName, string>;
  let queues: SqsQueues;
  let deps: DeadLetterQueues;

  beforeEach(async () => {
    sqs = testSqsClient();
    queueUrls = await createLaneQueues(sqs, uniqueName('ops'));
    queues = new SqsQueues({ client: sqs, queueUrls });
    deps = { sqs, queueUrls, queues };
  });

  afterEach(() => sqs.destroy());

  /** Sends a job to the main queue and dead-letters it as a worker does, with `reason`. */
  async function deadLettered(body: string, reason: string): Promise<void> {
    await queues.send('main', { body });
    const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
    if (message === undefined) throw new Error(`the job ${body} was not received`);
    await deadLetter(queues, { ...message, queue: 'main' }, reason, 2);
  }

  /** Three letters: a permanent refusal, one that ran out of attempts, and one SQS moved (no reason). */
  async function threeLetters(): Promise<void> {
    await deadLettered('{"id":"refused"}', 'permanent: HTTP 400 Bad Request');
    await deadLettered('{"id":"tired"}', 'gave up after 2 attempts: HTTP 503');
    await queues.send('main-dlq', { body: '{"id":"moved"}' });
  }

  const bodies = (letters: readonly DeadLetter[]) => letters.map((l) => l.body).sort();
  const onlyReasons = (...reasons: ('permanent' | 'attempts-exhausted' | 'max-receives')[]) => ({
    chosen: (letter: DeadLetter) => passes(letter, { reasons }, Date.now()),
  });

  describe('peekDeadLetters with a filter', () => {
    it('shows only the letters that pass, and leaves every letter visible', async () => {
      await threeLetters();

      const shown = await peekDeadLetters(deps, { max: 10, ...onlyReasons('max-receives', 'permanent') });
      const all = await peekDeadLetters(deps, { max: 10 });

      expect(bodies(shown)).toEqual(['{"id":"moved"}', '{"id":"refused"}']);
      expect(bodies(all)).toEqual(['{"id":"moved"}', '{"id":"refused"}', '{"id":"tired"}']);
    });

    it('counts only the letters that pass toward max', async () => {
      await threeLetters();

      const shown = await peekDeadLetters(deps, { max: 1, ...onlyReasons('max-receives') });

      expect(bodies(shown)).toEqual(['{"id":"moved"}']);
    });
  });

  describe('deleteDeadLetters', () => {
    it('deletes the letters that pass, by reason class, and leaves the others visible', async () => {
      await threeLetters();

      const results = await deleteDeadLetters(deps, { max: 10, ...onlyReasons('attempts-exhausted') });

      expect(results).toEqual([
        expect.objectContaining({ from: 'main-dlq', reason: 'attempts-exhausted', outcome: 'deleted' }),
      ]);
      expect(bodies(await peekDeadLetters(deps, { max: 10 }))).toEqual(['{"id":"moved"}', '{"id":"refused"}']);
    });

    it('deletes the ids asked for, and only them', async () => {
      await threeLetters();
      const moved = (await peekDeadLetters(deps, { max: 10 })).find((l) => l.body === '{"id":"moved"}');

      const results = await deleteDeadLetters(deps, { max: 10, ids: [moved?.messageId ?? ''] });

      expect(results).toEqual([
        { messageId: moved?.messageId, from: 'main-dlq', reason: 'max-receives', outcome: 'deleted' },
      ]);
      expect(bodies(await peekDeadLetters(deps, { max: 10 }))).toEqual(['{"id":"refused"}', '{"id":"tired"}']);
    });

    it('keeps a letter whose delete failed, visible again, and says why', async () => {
      await deadLettered('{"id":"kept"}', 'permanent: HTTP 404');
      const failing: DeadLetterQueues = {
        ...deps,
        queues: {
          send: (q, m) => queues.send(q, m),
          delete: () => Promise.reject(new Error('SQS is down')),
          changeVisibility: (q, h, ms) => queues.changeVisibility(q, h, ms),
        },
      };

      const results = await deleteDeadLetters(failing, { max: 10 });

      expect(results).toEqual([expect.objectContaining({ outcome: 'failed', error: 'Error: SQS is down' })]);
      expect(bodies(await peekDeadLetters(deps, { max: 10 }))).toEqual(['{"id":"kept"}']);
    });
  });

  describe('redrive with a filter', () => {
    it('sends back only the letters that pass', async () => {
      await threeLetters();
      const clock = new FakeClock(Date.now());

      const results = await redrive(
        { ...deps, idempotency: new MemoryIdempotencyStore(), clock },
        { max: 10, ...onlyReasons('permanent') },
      );

      expect(results).toEqual([expect.objectContaining({ to: 'main', outcome: 'redriven' })]);
      expect(bodies(await peekDeadLetters(deps, { max: 10 }))).toEqual(['{"id":"moved"}', '{"id":"tired"}']);
      const [back] = await queues.receive('main', { max: 10, visibilityMs: 30_000, waitMs: 1_000 });
      expect(back?.body).toBe('{"id":"refused"}');
    });
  });

  describe('purgeDeadLetters', () => {
    it('empties the dead-letter queues asked for, says how many each held, and leaves the others', async () => {
      await threeLetters();
      await queues.send('requeue-dlq', { body: '{"id":"requeued"}' });

      const results = await purgeDeadLetters(deps, ['main-dlq', 'fifo-dlq']);

      expect(results).toEqual([
        { dlq: 'main-dlq', messages: 3, outcome: 'purged' },
        { dlq: 'fifo-dlq', messages: 0, outcome: 'purged' },
      ]);
      expect(bodies(await peekDeadLetters(deps, { max: 10 }))).toEqual(['{"id":"requeued"}']);
    });
  });
});
