import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueues } from '../../../lib/adapters/sqs/SqsQueues';
import { ATTRIBUTES, type QueueName } from '../../../lib/ports/QueueReceiver';
import { deadLetter } from '../../../lib/services/queueOutcomes';
import { createLaneQueues } from '../../../tools/local/laneQueues';
import { writeStackFile, type LocalStackInfo } from '../../../tools/local/stackFile';
import { normalizeArgv } from '../../../tools/ops/runOps';
import { testSqsClient, uniqueName } from '../../helpers/awsClients';
import { jsonOf, localStackFile, ops } from './opsIo';

/** A stack file for queues `queueUrls` on the test emulators (no functions run behind it). */
function stackFile(queueUrls: Readonly<Record<QueueName, string>>, lane = 'default'): string {
  return localStackFile(queueUrls, { lane, environment: { LANE: lane, QUOTAS: '[{"limit":10,"per":"second"}]' } });
}

describe('normalizeArgv', () => {
  it('gives a bare --local before a command the default file, so the command is not read as the file', () => {
    expect(normalizeArgv(['--local', 'status', '--json'])).toEqual([
      '--local=out/local-stack.json',
      'status',
      '--json',
    ]);
  });

  it('leaves --local FILE and a --local after the command as they are', () => {
    expect(normalizeArgv(['--local', 'my.json', 'status'])).toEqual(['--local', 'my.json', 'status']);
    expect(normalizeArgv(['status', '--local'])).toEqual(['status', '--local']);
  });
});

describe('runOps', () => {
  describe('arguments', () => {
    it('asks for a target when given neither --stage nor --local, and exits 2', async () => {
      const run = await ops(['status']);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        'ops: say which target: --stage NAME (a deployed stage, with --region and --profile as needed) or --local [FILE] (the stack `npm start -- --keep` keeps up)\n',
      );
    });

    it('refuses --stage and --local together', async () => {
      const run = await ops(['--stage', 'dev', '--local', 'x.json', 'pause']);

      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^ops: say which target/);
    });

    it('reports a missing local stack file in one line, without a stack trace', async () => {
      const run = await ops(['status', '--local', '/nonexistent/local-stack.json']);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        'ops: no local stack file at /nonexistent/local-stack.json: start one with `npm start -- --keep` (it writes out/local-stack.json), or pass the file it wrote\n',
      );
    });

    it('refuses a --max that is not a whole number of at least 1, with the usage hint', async () => {
      const run = await ops(['dlq', 'list', '--max', '0', '--local', 'x.json']);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "option '--max <n>' argument '0' is invalid. must be a whole number of at least 1; got '0'",
      );
      expect(run.stderr).toContain('(run with --help for usage)');
    });

    it('refuses a state of the circuit other than open or close', async () => {
      const run = await ops(['circuit', 'half-open', '--local']);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "value 'half-open' is invalid for argument 'state'. Allowed choices are open, close.",
      );
    });

    it("refuses an operator's name the circuit item cannot keep", async () => {
      const run = await ops(['pause', '--by', 'x'.repeat(129), '--local']);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        "option '--by <name>' argument '" + 'x'.repeat(129) + "' is invalid. must be 1 to 128 characters",
      );
    });

    it('refuses a tier it cannot name and a limit that is no whole number, naming what it takes', async () => {
      const tier = await ops(['limits', 'set', 'week=5', '--local', 'x.json']);
      const limit = await ops(['limits', 'set', 'minute=2.5', '--local', 'x.json']);
      const pair = await ops(['limits', 'set', 'minute', '--local', 'x.json']);

      expect([tier.code, limit.code, pair.code]).toEqual([2, 2, 2]);
      expect(tier.stderr).toContain(
        "'week' names no tier: say <per> or <per>:<unit>, <per> one of second, minute, hour, day, month",
      );
      expect(limit.stderr).toContain("the limit in 'minute=2.5' must be a whole number of at least 1");
      expect(pair.stderr).toContain("'minute' is no <tier>=<limit> (minute=500, day:tokens=2000000)");
    });

    it('prints the help on stdout and exits 0', async () => {
      const run = await ops(['--help']);

      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Usage: ops [options] [command]');
      expect(run.stdout).toContain('Exit codes: 0 done; 1 done, but some items failed');
    });

    it('refuses a dlq delete that names neither an id nor a filter, so that it never empties a queue', async () => {
      const run = await ops(['dlq', 'delete', '--local', 'x.json']);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        'ops: dlq delete needs --id or a filter (--reason, --older-than, --newer-than); `dlq purge --yes` empties whole queues\n',
      );
    });

    it('purges nothing without --yes', async () => {
      const run = await ops(['dlq', 'purge', '--local', 'x.json']);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        'ops: dlq purge deletes every message of the dead-letter queues for good: pass --yes to do it\n',
      );
    });

    it('refuses an age without a unit and a reason class it does not know, naming what it takes', async () => {
      const age = await ops(['dlq', 'list', '--older-than', '2', '--local', 'x.json']);
      const reason = await ops(['dlq', 'redrive', '--reason', 'bad', '--local', 'x.json']);

      expect(age.code).toBe(2);
      expect(age.stderr).toContain(
        "option '--older-than <age>' argument '2' is invalid. must be a whole number and a unit, s, m, h or d (90s, 15m, 2h, 7d); got '2'",
      );
      expect(reason.code).toBe(2);
      expect(reason.stderr).toContain(
        "argument 'bad' is invalid. Allowed choices are malformed, permanent, attempts-exhausted, too-large, over-quota, refused, other, max-receives.",
      );
    });

    it('says in the help of dlq list that a peek counts as a receive', async () => {
      const run = await ops(['dlq', 'list', '--help']);

      expect(run.stdout.replace(/\s+/g, ' ')).toContain('so each peek counts one receive');
    });
  });

  describe('on the local stack', () => {
    let sqs: SQSClient;
    let queueUrls: Record<QueueName, string>;
    let file: string;

    beforeEach(async () => {
      sqs = testSqsClient();
      queueUrls = await createLaneQueues(sqs, uniqueName('ops'));
      file = stackFile(queueUrls);
    });

    afterEach(() => sqs.destroy());

    it('says, without a stack trace, when nothing answers where the local stack file points', async () => {
      const gone = JSON.parse(readFileSync(file, 'utf8')) as LocalStackInfo;
      const stale = writeStackFile(join(mkdtempSync(join(tmpdir(), 'ops-')), 'stale.json'), {
        ...gone,
        endpoints: { ...gone.endpoints, sqs: 'http://127.0.0.1:9' },
      });

      const run = await ops(['dlq', 'list', '--local', stale]);

      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(
        new RegExp(
          `^ops: nothing answers \\(the local stack \\(${stale}\\)\\): .*ECONNREFUSED.*\\. Is \`npm start -- --keep\` still running\\?\n$`,
        ),
      );
    });

    it('refuses a lane the local stack does not serve', async () => {
      const run = await ops(['--lane', 'sms', 'status', '--local', file]);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `ops: the local stack (${file}) serves lane 'default', not 'sms': pass --lane default, or leave --lane out\n`,
      );
    });

    it('refuses a pool the lane does not draw from', async () => {
      const run = await ops(['limits', 'set', 'second=2', '--pool', 'org', '--local', file]);

      expect(run.code).toBe(2);
      expect(run.stderr).toBe("ops: lane 'default' draws from no pool 'org'\n");
    });

    it('enqueues the good lines of NDJSON from stdin (estimates as Number attributes), reports each bad one by its line number, and exits 1', async () => {
      const input = [
        '{"body":{"id":"a"},"cost":2,"idempotencyKey":"a"}',
        '',
        'not json',
        '{"body":{"id":"b"},"cost":-1}',
        '{"id":"c"}',
        '{"body":{"id":"d"},"estimates":{"input_tokens":812,"output_tokens":1024}}',
      ].join('\n');

      const run = await ops(['enqueue', '--json', '--local', file], input);

      expect(run.code).toBe(1);
      expect(jsonOf(run)).toEqual({
        queue: 'main',
        sent: 2,
        failed: [
          { line: 3, reason: expect.stringMatching(/^not JSON/) },
          { line: 4, reason: 'job.cost: must be an integer from 0 to 1000000000000; got -1' },
          {
            line: 5,
            reason: "unknown field 'id'; a line has body, cost, estimates, idempotencyKey, groupId and deduplicationId",
          },
        ],
      });
      const queues = new SqsQueues({ client: sqs, queueUrls });
      const received = await queues.receive('main', { max: 10, visibilityMs: 30_000, waitMs: 1_000 });
      expect(received.map((m) => m.body).sort()).toEqual(['{"id":"a"}', '{"id":"d"}']);
      expect(received.find((m) => m.body === '{"id":"a"}')?.attributes).toEqual({
        cost: { dataType: 'Number', value: '2' },
        idempotencyKey: { dataType: 'String', value: 'a' },
      });
      expect(received.find((m) => m.body === '{"id":"d"}')?.attributes).toEqual({
        input_tokens: { dataType: 'Number', value: '812' },
        output_tokens: { dataType: 'Number', value: '1024' },
      });
    });

    it('enqueues to the FIFO queue with --fifo, from a file, and prints a readable summary', async () => {
      const jobs = join(mkdtempSync(join(tmpdir(), 'ops-')), 'jobs.ndjson');
      writeFileSync(jobs, '{"body":{"id":"f1"},"groupId":"g"}\n{"body":{"id":"f2"}}\n');

      const run = await ops(['enqueue', jobs, '--fifo', '--local', file]);

      expect(run.code).toBe(1);
      expect(run.stdout).toBe(
        'line 2: job.groupId: is required on a FIFO queue (' +
          queueUrls.fifo +
          ')\n1 job sent to the fifo queue, 1 failed\n',
      );
      expect(run.stderr).toContain('[##############################] 2/2 | sent 1 failed 1');
    });

    it('says which input file cannot be read', async () => {
      const run = await ops(['enqueue', '/nonexistent/jobs.ndjson', '--local', file]);

      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/^ops: cannot read \/nonexistent\/jobs.ndjson: ENOENT/);
    });

    it('lists, deletes and purges dead letters chosen by reason class and age', async () => {
      const queues = new SqsQueues({ client: sqs, queueUrls });
      for (const [id, reason] of [
        ['refused', 'permanent: HTTP 400 Bad Request'],
        ['tired', 'gave up after 3 attempts: HTTP 503'],
      ] as const) {
        await queues.send('main', { body: `{"id":"${id}"}` });
        const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
        if (message === undefined) throw new Error('not received');
        await deadLetter(queues, { ...message, queue: 'main' }, reason, 3);
      }

      const old = await ops(['dlq', 'list', '--older-than', '1h', '--json', '--local', file]);
      const permanent = await ops(['dlq', 'list', '--reason', 'permanent', '--newer-than', '1h', '--local', file]);
      const deleted = await ops(['dlq', 'delete', '--reason', 'attempts-exhausted', '--json', '--local', file]);
      const left = await ops(['dlq', 'list', '--json', '--local', file]);
      const purged = await ops(['dlq', 'purge', '--queue', 'main', '--yes', '--local', file]);

      expect(jsonOf(old)).toEqual([]);
      expect(permanent.stdout).toMatch(/ main-dlq ← main +3 .* permanent: HTTP 400 Bad Request\n1 dead letter /);
      expect(deleted.code).toBe(0);
      expect(jsonOf(deleted)).toEqual({
        results: [expect.objectContaining({ reason: 'attempts-exhausted', outcome: 'deleted' })],
        missing: [],
      });
      expect(jsonOf<{ body: string }[]>(left).map((l) => l.body)).toEqual(['{"id":"refused"}']);
      expect(purged.code).toBe(0);
      expect(purged.stdout).toMatch(/^ {2}main-dlq +1 +purged\n/m);
      expect(jsonOf(await ops(['dlq', 'list', '--json', '--local', file]))).toEqual([]);
    });

    it('lists dead letters with their source, reason and attempt, and shows one with its attributes and body', async () => {
      const queues = new SqsQueues({ client: sqs, queueUrls });
      await queues.send('main', {
        body: '{"id":"x"}',
        attributes: { [ATTRIBUTES.idempotencyKey]: { dataType: 'String', value: 'x' } },
      });
      const [message] = await queues.receive('main', { max: 1, visibilityMs: 30_000, waitMs: 1_000 });
      if (message === undefined) throw new Error('not received');
      await deadLetter(queues, { ...message, queue: 'main' }, 'HTTP 400 Bad Request: unknown recipient', 2);

      const list = await ops(['dlq', 'list', '--local', file]);
      const [letter] = jsonOf<{ messageId: string; reason: string }[]>(
        await ops(['dlq', 'list', '--json', '--local', file]),
      );
      const show = await ops(['dlq', 'show', letter?.messageId ?? '', '--local', file]);
      const missing = await ops(['dlq', 'show', 'no-such-id', '--queue', 'main', '--local', file]);

      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(
        new RegExp(
          `^  message id +queue ← source +attempt +dead-lettered +reason\n  ${letter?.messageId} +main-dlq ← main +2 +\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ \\(\\d+ s ago\\) +HTTP 400 Bad Request: unknown recipient\n1 dead letter \\(peeked: each counts one more receive\\)\n$`,
        ),
      );
      expect(letter).toMatchObject({
        dlq: 'main-dlq',
        source: 'main',
        reason: 'HTTP 400 Bad Request: unknown recipient',
        attempt: 2,
      });
      expect(letter).not.toHaveProperty('receiptHandle');
      expect(show.stdout).toMatch(/^reason +HTTP 400 Bad Request: unknown recipient$/m);
      expect(show.stdout).toMatch(/^ {2}idempotencyKey +String +x$/m);
      expect(show.stdout).toMatch(/Body:\n\{"id":"x"\}\n$/);
      expect(missing).toEqual({
        code: 2,
        stdout: '',
        stderr: `ops: no dead letter no-such-id on the local stack (${file}) (a message of a FIFO group shows once those before it are gone)\n`,
      });
    });
  });
});
