import { runOrchestrator } from '../../../../lib/services/orchestrator/runOrchestrator';
import { LOOK_UP_MS } from '../../../../lib/services/orchestrator/bulkClass';
import {
  START,
  dispatchedEvents,
  drive,
  jobsOf,
  orchestratorHarness,
  rel,
  sendJob,
  testConfig,
} from '../../../helpers/serviceFixtures';

/** Sends `n` jobs `<prefix>-1`… to `queue`. */
async function send(
  h: ReturnType<typeof orchestratorHarness>,
  queue: 'main' | 'bulk',
  prefix: string,
  n: number,
): Promise<void> {
  for (let i = 1; i <= n; i++) await sendJob(h.queues, queue, { id: `${prefix}-${i}` });
}

describe('runOrchestrator: the bulk class', () => {
  it('gives bulk jobs their share ahead of main ones while both wait: with bulkShare 0.25, one after every three', async () => {
    const h = orchestratorHarness({ config: testConfig({ priorities: { bulkShare: 0.25 } }) });
    await send(h, 'main', 'm', 12);
    await send(h, 'bulk', 'b', 6);

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 10_000 }), START + 11_000);

    // The credit starts at 0: four main jobs earn bulk its first turn, three each of the next ones. Once the main
    // queue is empty, the bulk jobs left take the whole quota.
    expect(dispatchedEvents(h.events).map((e) => e.queue)).toEqual([
      ...['main', 'main', 'main', 'main', 'bulk'],
      ...['main', 'main', 'main', 'bulk'],
      ...['main', 'main', 'main', 'bulk'],
      ...['main', 'main', 'bulk', 'bulk', 'bulk'],
    ]);
  });

  it('keeps each class in its own order, and the requeue queue first', async () => {
    const h = orchestratorHarness({ config: testConfig({ priorities: { bulkShare: 0.5 } }) });
    await send(h, 'main', 'm', 4);
    await send(h, 'bulk', 'b', 4);
    await sendJob(h.queues, 'requeue', { id: 'r-1' }, { attempt: 2 });

    await drive(h.clock, runOrchestrator(h.deps, { deadline: START + 5_000 }), START + 6_000);

    const ids = h.workerEvents.flatMap(({ event }) => jobsOf(event).map((job) => JSON.parse(job.body).id as string));
    expect(ids[0]).toBe('r-1');
    expect(ids.filter((id) => id.startsWith('m-'))).toEqual(['m-1', 'm-2', 'm-3', 'm-4']);
    expect(ids.filter((id) => id.startsWith('b-'))).toEqual(['b-1', 'b-2', 'b-3', 'b-4']);
  });

  it('lets bulk jobs take the whole quota while the main queue is empty, and a main job sent meanwhile go next', async () => {
    const h = orchestratorHarness();
    await send(h, 'bulk', 'b', 20);
    const run = runOrchestrator(h.deps, { deadline: START + 10_000 });
    await h.clock.advanceTo(START + 1_100);
    await sendJob(h.queues, 'main', { id: 'm-1' });

    await drive(h.clock, run, START + 11_000);

    const dispatched = dispatchedEvents(h.events);
    const main = dispatched.find((e) => e.queue === 'main');
    // 5 a second from the start, bulk alone; the main job waits no more than a look into the queues and a slot.
    expect(rel(dispatched.slice(0, 5).map((e) => e.at))).toEqual([0, 200, 400, 600, 800]);
    expect(rel([main?.at ?? 0])[0]).toBeLessThanOrEqual(1_100 + LOOK_UP_MS + 200);
    expect(dispatched.filter((e) => e.queue === 'bulk')).toHaveLength(20);
  });
});
