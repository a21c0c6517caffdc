import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import { CallMeter } from '../../../tools/faults/callMeter';
import { WorkerCrash, WorkerFaultInjector } from '../../../tools/faults/workerFaults';
import { workerHarness } from '../../helpers/serviceFixtures';

/** The fields of a job event the injector reads. */
const jobEvent = (id: string) => ({ kind: 'job', body: JSON.stringify({ id }), idempotencyKey: `key-${id}` });

describe('WorkerFaultInjector', () => {
  describe('killMidCall', () => {
    /** A worker whose handler calls the API once for its event, behind the injector, and an API counted by a meter. */
    function killing(plan: { readonly killMidCall: readonly string[] }) {
      const h = workerHarness();
      const meter = new CallMeter(() => h.clock.now());
      h.api.latencyMs = 300;
      const injector = new WorkerFaultInjector(plan, (key) => meter.arrival(key));
      const api: ApiCaller = injector.deps({ ...h.deps, api: meter.around(h.api) }).api;
      // Calls the API for the event's job, or for each job of a batch in turn, and answers with the last result.
      const handler = injector.handler(async (event) => {
        const { jobs = [event] } = event as { jobs?: unknown[] };
        let result: unknown;
        for (const job of jobs) {
          const { body, idempotencyKey } = job as { body: string; idempotencyKey: string };
          result = await api.call(body, { idempotencyKey });
        }
        return result;
      });
      return { h, meter, injector, handler };
    }

    it('kills the first delivery once its call is at the API, and the API goes on with the call', async () => {
      const { h, meter, injector, handler } = killing({ killMidCall: ['j-1'] });

      await expect(handler(jobEvent('j-1'))).rejects.toEqual(new WorkerCrash('j-1', 'mid-call'));

      expect(meter.report()).toMatchObject({ calls: 1, inProgress: 1 });
      await h.clock.advance(300);
      expect(meter.report()).toMatchObject({ calls: 1, inProgress: 0 });
      expect(h.api.calls).toHaveLength(1);
      expect(injector.injected()).toMatchObject({ 'worker:killed-mid-call': 1 });
      expect([...injector.crashes('mid-call')]).toEqual(['j-1']);
    });

    it('lets the next dispatch of the job, and every other job, call and answer', async () => {
      const { h, injector, handler } = killing({ killMidCall: ['j-1'] });
      await handler(jobEvent('j-1')).catch(() => undefined);

      const next = handler(jobEvent('j-1'));
      const other = handler(jobEvent('j-2'));
      await h.clock.advance(300);

      await expect(next).resolves.toMatchObject({ status: 200 });
      await expect(other).resolves.toMatchObject({ status: 200 });
      expect(injector.injected()).toMatchObject({ 'worker:killed-mid-call': 1 });
    });

    it('kills a batch’s worker at its job’s call: the jobs after it are never called', async () => {
      const { h, handler } = killing({ killMidCall: ['j-2'] });

      const batch = handler({ kind: 'batch', jobs: [jobEvent('j-1'), jobEvent('j-2'), jobEvent('j-3')] });
      const ended = expect(batch).rejects.toEqual(new WorkerCrash('j-2', 'mid-call'));
      await h.clock.advance(300);
      await ended;

      expect(h.api.calls.map((c) => c.idempotencyKey)).toEqual(['key-j-1', 'key-j-2']);
    });
  });
});
