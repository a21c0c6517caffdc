/**
 * A worker whose claim of a job's key fails on DynamoDB, through the production adapter: the SDK's own throttling
 * errors after its retries, not an error of the service's. The job must go back to its queue unclaimed (no call, no
 * attempt spent), rather than the batch throwing and the message waiting out its visibility.
 */
import { AwsFaultInjector } from '../../tools/faults/awsFaults';
import { createServiceStack, type ServiceStack } from '../helpers/serviceStack';

let stack: ServiceStack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe('a claim the table refuses on every try', () => {
  it('gives the job back unclaimed, with no call and no worker error, and the job succeeds once the table answers', async () => {
    const startedAt = { at: Date.now() };
    // Every write the workers make to the table is throttled for the first 6 s, longer than the SDK's retries of
    // one request: the claims fail with its own ProvisionedThroughputExceededException or ThrottlingException.
    const throttled = new AwsFaultInjector(
      [
        {
          service: 'dynamodb',
          role: 'worker',
          operations: ['UpdateItem', 'PutItem'],
          kind: 'throttled',
          fromMs: 0,
          toMs: 6_000,
        },
      ],
      () => startedAt.at,
      () => 0,
      () => 1_000,
    );
    stack = await createServiceStack({
      quotas: [{ limit: 10, per: 'second' }],
      // A worker's time outlasts the SDK's retries, so that the claim's failure, not the worker's timeout, ends it.
      orchestrator: { workerTimeoutMs: 10_000, visibilityTimeoutMs: 30_000 },
      circuit: { healthCheckTimeoutSeconds: 8 },
      faults: { workerClients: (clients) => throttled.attach(clients, 'worker') },
    });
    startedAt.at = Date.now();
    await stack.send('main', [{ body: { id: 'a' } }, { body: { id: 'b' } }]);

    const s = stack;
    await s.runUntil(async () => s.api.succeededIds().length === 2 && (await s.drained()), {
      timeoutMs: 40_000,
      what: 'both jobs to succeed after the throttling',
    });

    const { results, errors } = s.workerStats();
    expect(Object.keys(throttled.injected())).toContain('dynamodb.UpdateItem:throttled');
    expect(results.get('unclaimed') ?? 0).toBeGreaterThan(0);
    expect(errors).toBe(0);
    expect(s.api.report()).toMatchObject({ apiCalls: 2, duplicates: 0 });
  }, 60_000);
});
