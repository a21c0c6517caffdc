import type { ApiResult } from '../../../../lib/domain/outcome/apiResult';
import { StateUnavailableError } from '../../../../lib/errors';
import type { Settlement } from '../../../../lib/domain/quota/ledger';
import type { BatchEvent } from '../../../../lib/ports/Invoker';
import type { JobResult, ResultHandler, UndeliveredResult } from '../../../../lib/ports/ResultHandler';
import { processBatch } from '../../../../lib/services/worker/processBatch';
import { processJob } from '../../../../lib/services/worker/processJob';
import type { WorkerDeps, WorkerReport } from '../../../../lib/services/worker/types';
import {
  LANE,
  START,
  receiveJobEvent,
  sendJob,
  testConfig,
  workerHarness,
  type WorkerHarness,
} from '../../../helpers/serviceFixtures';

/** A result handler that records what it is handed, and what the job's state was at that moment. */
class RecordingHandler implements ResultHandler {
  readonly delivered: JobResult[][] = [];
  /** What each call saw: whether the first result's success was recorded, and how many messages main held. */
  readonly seen: { recorded: boolean; mainDepth: number }[] = [];
  /** Refuses the results whose message ids are here, with this reason. */
  readonly refuse = new Map<string, string>();
  /** When set, every call throws it. */
  throws: Error | undefined;

  constructor(private readonly h: WorkerHarness) {}

  async deliver(results: readonly JobResult[]): Promise<readonly UndeliveredResult[]> {
    const first = results[0];
    const record =
      first === undefined
        ? undefined
        : await this.h.stores.idempotency.getIdempotency(first.idempotencyKey, this.h.clock.now());
    // In these tests the first result's job leads its batch, whose id is its dispatch id.
    const batchRecorded =
      first === undefined
        ? undefined
        : await this.h.stores.idempotency.batchSuccess(first.dispatchId, first.dispatchId);
    this.seen.push({
      recorded: record?.status === 'succeeded' || batchRecorded !== undefined,
      mainDepth: this.h.queues.depth('main'),
    });
    this.delivered.push([...results]);
    if (this.throws !== undefined) throw this.throws;
    return results.flatMap((result) => {
      const reason = this.refuse.get(result.messageId);
      return reason === undefined ? [] : [{ result, reason }];
    });
  }
}

function withResults(h: WorkerHarness): { deps: WorkerDeps; handler: RecordingHandler; reports: WorkerReport[] } {
  const handler = new RecordingHandler(h);
  const reports: WorkerReport[] = [];
  return { deps: { ...h.deps, results: handler, onEvent: (report) => reports.push(report) }, handler, reports };
}

/** A response of `status` with a JSON content type, any other `headers`, and `body`. */
const answer = (
  status: number,
  body: string,
  {
    headers,
    bodyTruncated,
  }: { readonly headers?: Readonly<Record<string, string>>; readonly bodyTruncated?: boolean } = {},
): ApiResult => ({
  kind: 'response',
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body,
  ...(bodyTruncated === undefined ? {} : { bodyTruncated }),
});

describe('processJob', () => {
  describe('results', () => {
    it("hands a succeeded job's answer and ids to the result handler once its success is recorded, before its message is deleted", async () => {
      const h = workerHarness();
      const { deps, handler } = withResults(h);
      await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'k-a' });
      h.api.answers.push(answer(200, '{"completion":"hello"}', { bodyTruncated: true }));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      await expect(processJob(event, deps)).resolves.toBe('succeeded');

      expect(handler.delivered).toEqual([
        [
          {
            lane: LANE,
            queue: 'main',
            messageId: 'm-1',
            dispatchId: 'd-1',
            idempotencyKey: 'k-a',
            attempt: 1,
            at: START,
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: '{"completion":"hello"}',
            bodyTruncated: true,
          },
        ],
      ]);
      expect(handler.seen).toEqual([{ recorded: true, mainDepth: 1 }]);
      expect(h.queues.depth('main')).toBe(0);
    });

    it("carries a FIFO job's group, and an empty body from a caller that keeps none", async () => {
      const h = workerHarness();
      const { deps, handler } = withResults(h);
      await sendJob(h.queues, 'fifo', { id: 'a' }, { groupId: 'g-1' });
      const event = await receiveJobEvent(h, 'fifo', 'd-1');

      await processJob(event, deps);

      expect(handler.delivered[0]?.[0]).toMatchObject({
        queue: 'fifo',
        groupId: 'g-1',
        body: '',
        bodyTruncated: false,
      });
    });

    it('hands on nothing for a job whose call failed, retried or dead-lettered', async () => {
      const h = workerHarness();
      const { deps, handler } = withResults(h);
      await sendJob(h.queues, 'main', { id: 'a' });
      await sendJob(h.queues, 'main', { id: 'b' });
      h.api.answers.push(answer(503, 'down'), answer(400, 'bad'));

      await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), deps)).resolves.toBe('retried');
      await expect(processJob(await receiveJobEvent(h, 'main', 'd-2'), deps)).resolves.toBe('dead-lettered');

      expect(handler.delivered).toEqual([]);
    });

    it('reports a result the destination refuses as result-undelivered, and the job stays succeeded and is not called again', async () => {
      const h = workerHarness();
      const { deps, handler, reports } = withResults(h);
      handler.refuse.set('m-1', 'SQS refused the result: AccessDenied');
      await sendJob(h.queues, 'main', { id: 'a' }, { idempotencyKey: 'k-a' });
      const event = await receiveJobEvent(h, 'main', 'd-1');

      await expect(processJob(event, deps)).resolves.toBe('succeeded');
      await expect(processJob(event, deps)).resolves.toBe('duplicate');

      expect(reports.filter((r) => r.type === 'result-undelivered')).toEqual([
        {
          type: 'result-undelivered',
          lane: LANE,
          at: START,
          reason: 'SQS refused the result: AccessDenied',
          messageId: 'm-1',
          dispatchId: 'd-1',
          idempotencyKey: 'k-a',
        },
      ]);
      expect(h.api.calls).toHaveLength(1);
      expect(h.queues.depth('main')).toBe(0);
    });

    it('reports every result as undelivered when the handler throws, and still deletes the message', async () => {
      const h = workerHarness();
      const { deps, handler, reports } = withResults(h);
      handler.throws = new Error('EventBridge unreachable');
      await sendJob(h.queues, 'main', { id: 'a' });

      await expect(processJob(await receiveJobEvent(h, 'main', 'd-1'), deps)).resolves.toBe('succeeded');

      expect(reports.filter((r) => r.type === 'result-undelivered').map((r) => 'reason' in r && r.reason)).toEqual([
        'EventBridge unreachable',
      ]);
      expect(h.queues.depth('main')).toBe(0);
    });

    it('hands the result on even when the settlement it owes cannot be recorded (the job has succeeded either way)', async () => {
      const h = workerHarness(
        testConfig({
          quotas: [
            { limit: 5, per: 'second' },
            { limit: 1_000, per: 'second', unit: 'cost' },
          ],
        }),
      );
      const { deps, handler } = withResults(h);
      const ledger = {
        addSettlements: async (_lane: string, ..._settlements: Settlement[]): Promise<boolean> =>
          Promise.reject(new Error('DynamoDB is down')),
      };
      await sendJob(h.queues, 'main', { id: 'a' }, { cost: 3 });
      h.api.answers.push(answer(200, 'done', { headers: { 'x-actual-cost': '7' } }));
      const event = await receiveJobEvent(h, 'main', 'd-1');

      const outcome = processJob(event, { ...deps, stores: { ...h.stores, ledger } });
      const settled = expect(outcome).rejects.toBeInstanceOf(StateUnavailableError);
      await h.clock.advance(5_000);
      await settled;

      expect(handler.delivered.map((results) => results.map((r) => r.body))).toEqual([['done']]);
    });
  });
});

describe('processBatch', () => {
  describe('results', () => {
    async function batchOf(h: WorkerHarness, ids: readonly string[]): Promise<BatchEvent> {
      for (const id of ids) await sendJob(h.queues, 'main', { id }, { idempotencyKey: `k-${id}` });
      const jobs = [];
      for (const id of ids) jobs.push(await receiveJobEvent(h, 'main', `d-${id}`));
      return { kind: 'batch', lane: LANE, jobs, sentAt: h.clock.now() };
    }

    it("hands its successes' results on together, once recorded, before its deletes", async () => {
      const h = workerHarness();
      const { deps, handler } = withResults(h);
      const event = await batchOf(h, ['a', 'b', 'c']);
      h.api.answers.push(answer(200, 'A'), answer(400, 'no'), answer(200, 'C'));

      await expect(processBatch(event, deps)).resolves.toEqual(['succeeded', 'dead-lettered', 'succeeded']);

      expect(handler.delivered.map((results) => results.map((r) => [r.dispatchId, r.body]))).toEqual([
        [
          ['d-a', 'A'],
          ['d-c', 'C'],
        ],
      ]);
      // The batch's record holds the successes, and the two succeeded messages were still there.
      expect(handler.seen).toEqual([{ recorded: true, mainDepth: 2 }]);
      expect(h.queues.depth('main')).toBe(0);
    });
  });
});
