import { QuotaLedger } from '../../lib/domain/quota/ledger';
import type { OrchestratorEvent } from '../../lib/services/orchestrator/types';
import {
  createServiceStack,
  LANE,
  SimulatedCrash,
  type OrchestratorRun,
  type ServiceStack,
  type TestMessage,
} from '../helpers/serviceStack';
import type { ApiCaller } from '../../lib/ports/ApiCaller';
import { waitFor } from '../../tools/local/waitFor';
import { awkwardBody } from '../helpers/serviceFixtures';

// The service end to end on the emulators: real handlers and adapters, SQS on fauxqs, DynamoDB on dynalite (or on
// DynamoDB Local, through `npm run test:dynamodb-local`), workers behind a local Lambda Invoke endpoint, and the
// simulated API (the quota referee) over HTTP, all on the wall clock.

let stack: ServiceStack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

function ids(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i + 1}`);
}

function jobs(idList: readonly string[]): TestMessage[] {
  return idList.map((id) => ({ body: { id } }));
}

/** Every job called the API with success exactly once, and nothing else succeeded. */
function expectEachSucceededOnce(s: ServiceStack, expected: readonly string[]): void {
  const successes = s.api.successesById();
  expect([...successes.keys()].sort()).toEqual([...expected].sort());
  expect([...successes.entries()].filter(([, n]) => n !== 1)).toEqual([]);
  expect(s.api.report().duplicates).toBe(0);
}

/** No source queue or dead-letter queue holds anything, and no worker invocation failed for good. */
async function expectAllQueuesEmpty(s: ServiceStack): Promise<void> {
  expect(await s.counts()).toEqual({
    requeue: 0,
    fifo: 0,
    main: 0,
    bulk: 0,
    'requeue-dlq': 0,
    'fifo-dlq': 0,
    'main-dlq': 0,
    'bulk-dlq': 0,
  });
  expect(s.workerFailures).toEqual([]);
}

/** Every job succeeded and the source queues are empty, with no worker still running. */
function allSucceeded(s: ServiceStack, n: number): () => Promise<boolean> {
  return async () => s.api.succeededIds().length >= n && (await s.drained());
}

function dispatches(events: readonly OrchestratorEvent[]): Extract<OrchestratorEvent, { type: 'dispatched' }>[] {
  return events.filter((e): e is Extract<OrchestratorEvent, { type: 'dispatched' }> => e.type === 'dispatched');
}

/**
 * Starts orchestrator runs as `owner`, 250 ms apart, until one gets the lease (within 15 s: a dead holder's lease
 * expires after `leaseTtlMs`).
 */
async function takeOverFrom(s: ServiceStack, owner: string): Promise<{ run: OrchestratorRun; refusals: number }> {
  let refusals = 0;
  const run = await waitFor(
    async (): Promise<OrchestratorRun | undefined> => {
      const attempt = s.startOrchestrator({ owner, deadlineMs: 30_000 });
      if (await attempt.started) return attempt;
      refusals++;
      return undefined;
    },
    { timeoutMs: 15_000, intervalMs: 250, what: `${owner} to take the lease once the dead run's has expired` },
  );
  return { run, refusals };
}

/** Units of the `per` tier that the ledger saved in DynamoDB counts as used now. */
async function savedUsage(s: ServiceStack, per: string): Promise<number> {
  const ledger = QuotaLedger.fromJSON(s.config.quotas, await s.stores.ledger.loadLedger(LANE), {
    timeZone: s.config.timeZone,
  });
  return ledger.usage(Date.now()).find((u) => u.tier.per === per)?.used ?? Number.NaN;
}

describe('the service on the emulators', () => {
  it('leaves no unhandled rejection behind when a run is killed before its first flush and nobody awaits its start', async () => {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      stack = await createServiceStack({ quotas: [{ limit: 10, per: 'second' }] });
      // Its second request is the ledger read: killed there, it never flushes.
      const run = stack.startOrchestrator({ deadlineMs: 5_000, killAfterCalls: 1 });
      await expect(run.summary).rejects.toBeInstanceOf(SimulatedCrash);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });

  it('keeps each FIFO group in send order while an outage makes calls fail and retry', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 20, per: 'second' }] });
    const groups = ['g1', 'g2', 'g3'];
    const perGroup = 8;
    const messages = groups.flatMap((group) =>
      Array.from({ length: perGroup }, (_, i) => ({
        body: { id: `${group}-${i + 1}`, group, seq: i + 1 },
        groupId: group,
      })),
    );
    await stack.send('fifo', messages);
    const s = stack;
    const run = s.startOrchestrator({ deadlineMs: 25_000 });
    try {
      // The outage starts once some calls have succeeded, so groups fail at a message k > 1.
      await waitFor(() => s.api.succeededIds().length >= 4, { what: 'the first FIFO jobs to succeed' });
      s.startOutage(600);
      await waitFor(allSucceeded(s, messages.length), { timeoutMs: 20_000, what: 'every FIFO job to succeed' });
    } finally {
      run.stop();
    }
    expect(await run.summary).toMatchObject({ lease: 'acquired' });

    const { callLog } = s.api;
    expect(callLog.filter((c) => c.status === 503).length).toBeGreaterThan(0); // the premise: retries did happen
    expect(stack.api.report()).toMatchObject({ fifoOrderViolations: 0, rejectedByApi: 0, duplicates: 0 });
    for (const group of groups) {
      const calls = callLog.filter((c) => c.group === group);
      expect(calls.filter((c) => c.status === 200).map((c) => c.seq)).toEqual(
        Array.from({ length: perGroup }, (_, i) => i + 1),
      );
      // A failed call of message k is followed, in its group, by k again: k + 1 waits for k's retry.
      calls.forEach((call, i) => {
        if (call.status !== 200)
          expect({ after: call.seq, next: calls[i + 1]?.seq }).toEqual({ after: call.seq, next: call.seq });
      });
    }
    expectEachSucceededOnce(
      s,
      messages.map((m) => m.body.id),
    );
    await expectAllQueuesEmpty(s);
  }, 30_000);

  it('reads requeued messages before new ones', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 5, per: 'second' }] });
    const fresh = ids('new', 5);
    const retried = ids('retry', 5);
    // The new work is sent first: order of arrival is not what puts the retries ahead.
    await stack.send('main', jobs(fresh));
    await stack.send(
      'requeue',
      retried.map((id) => ({ body: { id }, attributes: { attempt: { dataType: 'Number', value: '2' } } })),
    );

    await stack.runUntil(allSucceeded(stack, 10), { timeoutMs: 15_000, what: 'every job to succeed' });

    // Each job's first call, in order: a retry of a call cannot reorder which job went first.
    const order = [...new Set(stack.api.callLog.map((c) => c.id))];
    expect(order.slice(0, 5).sort()).toEqual([...retried].sort());
    expect(order.slice(5).sort()).toEqual([...fresh].sort());
    expectEachSucceededOnce(stack, [...fresh, ...retried]);
    await expectAllQueuesEmpty(stack);
  }, 30_000);

  it('gives bulk jobs their share ahead of main ones, each class in its order, over SQS', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 5, per: 'second' }], priorities: { bulkShare: 0.25 } });
    const main = ids('main', 9);
    const bulk = ids('bulk', 3);
    // The bulk jobs are sent first: arrival order would call them first.
    await stack.send('bulk', jobs(bulk));
    await stack.send('main', jobs(main));

    await stack.runUntil(allSucceeded(stack, 12), { timeoutMs: 15_000, what: 'every job to succeed' });

    // Four main jobs earn bulk its first turn (see BulkTurns); later, a bulk job may also go alone for up to
    // LOOK_UP_MS while no main job is received yet.
    const order = [...new Set(stack.api.callLog.map((c) => c.id))];
    expect(order.slice(0, 5).map((id) => id.split('-')[0])).toEqual(['main', 'main', 'main', 'main', 'bulk']);
    expectEachSucceededOnce(stack, [...main, ...bulk]);
    await expectAllQueuesEmpty(stack);
  }, 30_000);

  it('parks a poison message in the DLQ with its reason after one call', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 10, per: 'second' }] });
    const body = '{"id":"p1","poison":true}';
    await stack.send('main', [{ body }]);

    const s = stack;
    const { summary } = await s.runUntil(async () => (await s.count('main-dlq')) === 1 && (await s.drained()), {
      timeoutMs: 10_000,
      what: 'the poison message to be dead-lettered',
    });

    const parked = await s.receiveAll('main-dlq');
    expect(parked).toHaveLength(1);
    const [message] = parked;
    expect(message?.body).toBe(body);
    expect(message?.attributes.reason?.value).toMatch(/^permanent: .*400/);
    expect(message?.attributes.attempt).toEqual({ dataType: 'Number', value: '1' });
    expect(message?.attributes.sourceQueue?.value).toBe('main');
    expect(s.api.callLog).toEqual([expect.objectContaining({ id: 'p1', status: 400 })]);
    // Dead-lettered by the worker on the API's answer, not by the orchestrator.
    expect(summary).toMatchObject({ lease: 'acquired', dispatched: 1 + s.dispatchesGivenBack(), deadLettered: 0 });
    expect(s.workerStats().results.get('dead-lettered')).toBe(1);
  }, 20_000);

  it('hands the API each body byte for byte, and copies it so to the requeue and dead-letter queues', async () => {
    // Bodies that a JSON round trip would change; the poison one is answered 400 by the referee.
    const [plain, retried, poison, badCost] = ['raw-ok', 'raw-retry', 'raw-poison', 'raw-cost'].map(awkwardBody) as [
      string,
      string,
      string,
      string,
    ];
    const poisonBody = poison.replace(/^\{ /, '{ "poison" : true, ');
    // What reached the API server, decoded as UTF-8 (as valid UTF-8, equal text means equal bytes); the first call of
    // raw-retry is answered 503 without reaching the referee, so it is requeued.
    const arrived: string[] = [];
    let failedOnce = false;
    const recording = (api: ApiCaller): ApiCaller => ({
      call: (body, context) => {
        arrived.push(body);
        if (body === retried && !failedOnce) {
          failedOnce = true;
          return Promise.resolve({ kind: 'response', status: 503, headers: {} });
        }
        return api.call(body, context);
      },
      probe: () => api.probe(),
    });
    stack = await createServiceStack({ quotas: [{ limit: 10, per: 'second' }], faults: { api: recording } });
    await stack.send('main', [
      { body: plain },
      { body: retried },
      { body: poisonBody },
      { body: badCost, attributes: { cost: { dataType: 'Number', value: '-1' } } },
    ]);

    const s = stack;
    await s.runUntil(
      async () => s.api.succeededIds().length >= 2 && (await s.count('main-dlq')) === 2 && (await s.drained()),
      {
        timeoutMs: 15_000,
        what: 'two successes and two dead letters',
      },
    );

    expect([...arrived].sort()).toEqual([plain, retried, retried, poisonBody].sort());
    expectEachSucceededOnce(s, ['raw-ok', 'raw-retry']);
    const parked = await s.receiveAll('main-dlq');
    expect(parked.map((m) => [m.body, m.attributes.reason?.value.split(':')[0]]).sort()).toEqual(
      [
        [badCost, 'malformed'],
        [poisonBody, 'permanent'],
      ].sort(),
    );
  }, 30_000);

  it('dead-letters malformed messages without calling the API, and goes on to the next job', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 10, per: 'second' }] });
    const malformed: TestMessage[] = [
      { body: 'not json {' },
      { body: '{"id":"cost-text"}', attributes: { cost: { dataType: 'String', value: 'abc' } } },
      { body: '{"id":"cost-negative"}', attributes: { cost: { dataType: 'Number', value: '-3' } } },
    ];
    await stack.send('main', malformed);
    const s = stack;
    const run = s.startOrchestrator({ deadlineMs: 20_000 });
    try {
      await waitFor(async () => (await s.count('main-dlq')) === 3, {
        timeoutMs: 10_000,
        what: 'the malformed messages to be dead-lettered',
      });
      // Sent only now, so the run that dead-lettered the others is the one that must still be going.
      await s.send('main', [{ body: { id: 'good' } }]);
      await waitFor(allSucceeded(s, 1), { timeoutMs: 10_000, what: 'the good job to succeed' });
    } finally {
      run.stop();
    }

    expect(await run.summary).toMatchObject({
      lease: 'acquired',
      deadLettered: 3,
      dispatched: 1 + s.dispatchesGivenBack(),
    });
    const parked = await s.receiveAll('main-dlq');
    const byBody = new Map(parked.map((m) => [m.body, m.attributes]));
    expect([...byBody.keys()].sort()).toEqual(malformed.map((m) => m.body as string).sort());
    expect(byBody.get('not json {')?.reason?.value).toMatch(/^malformed: body is not JSON/);
    expect(byBody.get('{"id":"cost-text"}')?.reason?.value).toMatch(/^malformed: attribute 'cost'.*String "abc"/);
    expect(byBody.get('{"id":"cost-negative"}')?.reason?.value).toMatch(/^malformed: attribute 'cost'.*"-3"/);
    for (const attributes of byBody.values()) expect(attributes.attempt).toEqual({ dataType: 'Number', value: '1' });
    expect(s.api.callLog.map((c) => c.id)).toEqual(['good']);
    expect(s.workerStats().invocations).toBe(1);
  }, 30_000);

  it('refuses a second orchestrator while the lease is held: it dispatches nothing', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 5, per: 'second' }] });
    const jobIds = ids('job', 10);
    await stack.send('main', jobs(jobIds));
    const s = stack;
    const a = s.startOrchestrator({ owner: 'orchestrator-A', deadlineMs: 20_000 });
    expect(await a.started).toBe(true);
    await waitFor(() => s.api.callLog.length > 0, { what: 'run A to dispatch' });

    const b = await s.invokeOrchestratorHandler({ requestId: 'B', deadlineMs: 5_000 });
    expect(b).toEqual({ lease: 'held-elsewhere', dispatched: 0, deadLettered: 0, healthChecks: 0, invokeFailures: 0 });

    await waitFor(allSucceeded(s, jobIds.length), { timeoutMs: 15_000, what: 'run A to finish the backlog' });
    a.stop();
    const summaryA = await a.summary;
    expect(summaryA).toMatchObject({ lease: 'acquired', dispatched: jobIds.length + s.dispatchesGivenBack() });
    // Every call the API saw came from A's dispatches (a dispatch given back made none).
    expect(s.api.report().apiCalls).toBe(summaryA.dispatched - s.dispatchesGivenBack());
    // At 5 a second, slots are about 200 ms apart: an invocation carries one job, or up to three whose slots fall
    // within 500 ms.
    expect(s.workerStats().invocations).toBeLessThanOrEqual(summaryA.dispatched);
    expect(s.workerStats().invocations).toBeGreaterThanOrEqual(Math.ceil(summaryA.dispatched / 3));
    expectEachSucceededOnce(s, jobIds);
    // B was refused for the lease, not for anything else: once A has released it, a handler run takes it.
    expect(await s.invokeOrchestratorHandler({ requestId: 'C', deadlineMs: 300 })).toMatchObject({
      lease: 'acquired',
      dispatched: 0,
    });
  }, 30_000);

  it('recovers from an orchestrator killed mid-run: no tier exceeded, nothing lost, nothing twice', async () => {
    const quotas = [
      { limit: 10, per: 'second' },
      { limit: 600, per: 'minute' },
    ] as const;
    stack = await createServiceStack({ quotas });
    const jobIds = ids('job', 60);
    await stack.send('main', jobs(jobIds));
    const s = stack;
    const minuteUsage = () => savedUsage(s, 'minute');

    // Killed after 50 AWS requests: about halfway through, between two flushes.
    const a = s.startOrchestrator({ owner: 'orchestrator-A', deadlineMs: 30_000, killAfterCalls: 50 });
    await expect(a.summary).rejects.toBeInstanceOf(SimulatedCrash);
    const dispatchedByA = dispatches(a.events).length;
    expect(dispatchedByA).toBeGreaterThan(0);
    expect(dispatchedByA).toBeLessThan(jobIds.length);
    await waitFor(() => s.workersIdle(), { what: "A's workers to finish" });
    const acceptedFromA = s.api.callLog.filter((c) => c.status === 200).length;
    expect(acceptedFromA).toBe(dispatchedByA - s.dispatchesGivenBack());
    // What A saved before dying already counts every call it made (semantics 2), so a successor cannot overshoot.
    expect(await minuteUsage()).toBeGreaterThanOrEqual(acceptedFromA);

    // A died holding the lease: B is refused until the lease expires, then takes over and finishes.
    const { run: b, refusals } = await takeOverFrom(s, 'orchestrator-B');
    expect(refusals).toBeGreaterThan(0);
    try {
      await waitFor(allSucceeded(s, jobIds.length), { timeoutMs: 25_000, what: 'run B to finish the backlog' });
    } finally {
      b.stop();
    }
    expect(await b.summary).toMatchObject({ lease: 'acquired' });

    const report = s.api.report();
    expect(report.rejectedByApi).toBe(0);
    const usage = s.config.quotas.map((tier) => ({
      per: tier.per,
      limit: tier.limit,
      used: s.api.maxWindowUsage(tier),
    }));
    expect(usage.filter((u) => u.used > u.limit)).toEqual([]);
    expect(usage.find((u) => u.per === 'second')?.used).toBeGreaterThanOrEqual(9); // the tightest tier was used, not just respected
    expectEachSucceededOnce(s, jobIds);
    await expectAllQueuesEmpty(s);
    expect(await minuteUsage()).toBeGreaterThanOrEqual(jobIds.length);
  }, 60_000);

  it('does not overshoot a day tier across a crash: the successor counts what the killed run may have sent', async () => {
    // 40 jobs against 30 a day: the day runs out mid-backlog, and A dies with dispatches it has not flushed.
    const dayLimit = 30;
    stack = await createServiceStack({
      quotas: [
        { limit: 10, per: 'second' },
        { limit: dayLimit, per: 'day' },
      ],
    });
    const jobIds = ids('job', 40);
    await stack.send('main', jobs(jobIds));
    const s = stack;
    const dayUsage = () => savedUsage(s, 'day');

    const a = s.startOrchestrator({ owner: 'orchestrator-A', deadlineMs: 30_000, killAfterCalls: 40 });
    await expect(a.summary).rejects.toBeInstanceOf(SimulatedCrash);
    const dispatchedByA = dispatches(a.events).length;
    expect(dispatchedByA).toBeGreaterThan(0);
    expect(dispatchedByA).toBeLessThan(dayLimit);
    await waitFor(() => s.workersIdle(), { what: "A's workers to finish" });
    const acceptedFromA = s.api.callLog.filter((c) => c.status === 200).length;
    // What A saved counts every call it made, plus quota it held and may not have used (its allowance, which may reach
    // past the limit); its workers' refunds (jobs that started too late), still pending, give some of that back to B.
    const refundsPending = (await s.stores.ledger.pendingSettlements(LANE)).filter(
      (settlement) => settlement.actual === null,
    ).length;
    const heldUnusedByA = Math.min(dayLimit, await dayUsage()) - acceptedFromA - refundsPending;
    expect(heldUnusedByA).toBeGreaterThanOrEqual(0);

    const { run: b } = await takeOverFrom(s, 'orchestrator-B');
    try {
      // B is out of quota once it has flushed twice without dispatching while its ledger holds the whole day.
      // A 429 (the API counting more than B's ledger) ends the wait too, to fail on the assertions below.
      const overshot = (): boolean => s.api.report().rejectedByApi > 0;
      const idleForTwoFlushes = (): boolean =>
        b.events.slice(b.events.map((e) => e.type).lastIndexOf('dispatched') + 1).filter((e) => e.type === 'flushed')
          .length >= 2;
      await waitFor(
        async () => (overshot() || ((await dayUsage()) >= dayLimit && idleForTwoFlushes())) && s.workersIdle(),
        { timeoutMs: 15_000, what: "the day's quota to be used up" },
      );
    } finally {
      b.stop();
    }
    expect(await b.summary).toMatchObject({ lease: 'acquired' });
    await waitFor(() => s.workersIdle(), { what: "B's workers to finish" });

    expect(s.api.report()).toMatchObject({ rejectedByApi: 0, duplicates: 0 });
    expect(s.api.maxWindowUsage({ per: 'day', unit: 'requests' })).toBeLessThanOrEqual(dayLimit);
    // At worst the quota A held and never used goes unused; B used all the rest.
    const succeeded = s.api.succeededIds();
    expect(succeeded.length).toBe(dayLimit - heldUnusedByA);
    // Nothing lost: every job either succeeded once or still waits in the main queue for tomorrow's quota.
    expect(s.api.callLog.filter((c) => c.status !== 200)).toEqual([]);
    expect(await s.count('main')).toBe(jobIds.length - succeeded.length);
    expect(await s.counts()).toMatchObject({ requeue: 0, fifo: 0, 'requeue-dlq': 0, 'fifo-dlq': 0, 'main-dlq': 0 });
  }, 40_000);

  it('opens the circuit on an outage, sends health checks only, and closes it once a check succeeds', async () => {
    stack = await createServiceStack({ quotas: [{ limit: 10, per: 'second' }] });
    const jobIds = ids('job', 20);
    await stack.send('main', jobs(jobIds));
    const s = stack;
    const outageEnd = s.startOutage(2_000);
    const watch = s.watchCircuit();
    const { summary, events } = await s
      .runUntil(allSucceeded(s, jobIds.length), { timeoutMs: 25_000, what: 'every job to succeed after the outage' })
      .finally(() => watch.stop());

    const statuses = watch.changes.map((c) => c.circuit?.state.status ?? 'closed');
    const firstOpen = statuses.indexOf('open');
    expect(firstOpen).toBeGreaterThanOrEqual(0);
    expect(statuses.lastIndexOf('closed')).toBeGreaterThan(firstOpen);
    const openState = watch.changes[firstOpen]?.circuit?.state;
    const final = (await s.circuit())?.state;
    if (openState?.status !== 'open' || final?.status !== 'closed' || final.closedAt === null)
      throw new Error(`unexpected circuit states ${JSON.stringify({ openState, final })}`);
    const { openedAt } = openState;
    const { closedAt } = final;
    // Closed by a successful probe, which can only happen once the API is back.
    expect(summary.healthChecks).toBeGreaterThan(0);
    expect(s.api.report().probes).toBeGreaterThan(0);
    expect(closedAt).toBeGreaterThanOrEqual(outageEnd);

    // While open, nothing was dispatched (a dispatch that read the circuit just before it opened may land in the
    // first moments), and what reached the API were only calls already on their way then, all failed.
    const sent = dispatches(events);
    const sentBeforeOpen = sent.filter((e) => e.at < openedAt + 100).length;
    expect(sent.filter((e) => e.at >= openedAt + 100 && e.at < closedAt)).toEqual([]);
    expect(s.api.callLog.filter((c) => c.at < closedAt).length).toBeLessThanOrEqual(sentBeforeOpen);
    expect(s.api.callLog.filter((c) => c.at >= openedAt && c.at < closedAt && c.status !== 503)).toEqual([]);

    expect(s.api.report().rejectedByApi).toBe(0);
    expectEachSucceededOnce(s, jobIds);
    await expectAllQueuesEmpty(s);
  }, 40_000);
});
