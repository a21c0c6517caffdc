import type { LaneControlResult } from '../../../lib/services/operator/laneControl';
import { ago, formatControl, formatRedrive, formatStatus, isoSecond, table } from '../../../tools/ops/format';
import { opsStatus, STATUS_AT } from '../../helpers/opsStatus';

const AT = STATUS_AT;
const status = opsStatus;

describe('formatStatus', () => {
  it("shows the pause, the circuit, each tier's usage against its limit, the queues and the lease", () => {
    expect(formatStatus(status())).toBe(
      [
        "Lane 'default' on the local stack (out/local-stack.json), at 2026-11-26T09:40:00Z",
        '',
        'Paused:   no',
        'Circuit:  closed',
        '',
        'Quota tiers:',
        '  tier       used  limit    use  remaining',
        '  10/second     3     10   30 %          7',
        '  20000/day  1500  20000  7.5 %      18500  resets 2026-11-27T00:00:00Z',
        '',
        'Queues:',
        '  queue        visible  in flight  delayed',
        '  requeue            0          0        2',
        '  fifo               0          0        0',
        '  main              12          3        0',
        '  bulk               0          0        0',
        '  requeue-dlq        0          0        0',
        '  fifo-dlq           0          0        0',
        '  main-dlq           1          0        0',
        '  bulk-dlq           0          0        0',
        '',
        'Lease:    held by orchestrator-1 until 2026-11-26T09:40:25Z (fencing token 12)',
      ].join('\n'),
    );
  });

  it("shows an operator's override under the tiers: who set it, when, and each tier's configured and overridden limit", () => {
    const text = formatStatus(
      status({
        override: { by: 'alice', at: AT - 60_000, tiers: [{ tier: 'second:requests', configured: 12, limit: 10 }] },
      }),
    );
    expect(text).toContain(
      [
        '  limits overridden by alice at 2026-11-26T09:39:00Z (60 s ago); `ops limits reset` ends it:',
        '    tier             configured  overridden',
        '    second:requests          12          10',
      ].join('\n'),
    );
  });

  it("shows each pool the lane draws from against its limits, and a 429's pause of the pool", () => {
    const tiers = [{ tier: '12/second', per: 'second', unit: 'requests', limit: 12, used: 9, remaining: 3 }] as const;
    const text = formatStatus(
      status({
        pools: [
          { pool: 'org', tiers, lease: null, rateLimitedUntil: AT + 4_000, override: null },
          { pool: 'spend', tiers, lease: null, override: null },
        ],
      }),
    );
    expect(text).toContain(
      [
        "Pool 'org' (shared with the other lanes that draw from it); a 429 holds it until 2026-11-26T09:40:04Z:",
        '  tier       used  limit   use  remaining',
        '  12/second     9     12  75 %          3',
        '',
        "Pool 'spend' (shared with the other lanes that draw from it):",
      ].join('\n'),
    );
  });

  it('shows the limits the lane learnt from the API, with their source and since when, and says when none differ', () => {
    const learned = formatStatus(
      status({
        limits: {
          learn: 'shadow',
          learned: [{ tier: '10/second', configured: 10, limit: 6, source: 'header', since: AT - 300_000 }],
        },
      }),
    );
    const none = formatStatus(status({ limits: { learn: 'shadow', learned: [] } }));
    const off = formatStatus(status({ limits: { learn: 'off', learned: [] } }));

    expect(learned).toContain(
      [
        'Learned limits (shadow: reported, not enforced):',
        '  tier       configured  learned  source  since',
        '  10/second          10        6  header  2026-11-26T09:35:00Z (5 min ago)',
      ].join('\n'),
    );
    expect(none).toContain('Learned limits (shadow: reported, not enforced): as configured');
    expect(off).toContain('Learned limits: off (the lane reads no limit header)');
  });

  it('shows who paused the lane, a circuit an operator forced open, and its recent transitions', () => {
    const text = formatStatus(
      status({
        paused: { by: 'alice@ops', since: AT - 600_000 },
        circuit: {
          status: 'open',
          reason: 'opened by operator (bob)',
          openedAt: AT - 60_000,
          nextCheckAt: Number.MAX_SAFE_INTEGER,
          byOperator: true,
          recentTransitions: [{ at: AT - 60_000, from: 'closed', to: 'open', reason: 'opened by operator (bob)' }],
        },
        lease: null,
      }),
    );

    expect(text).toContain('Paused:   yes, by alice@ops since 2026-11-26T09:30:00Z (10 min ago)');
    expect(text).toContain(
      'Circuit:  open; forced open by an operator: no health check until an operator closes it; since 2026-11-26T09:39:00Z (60 s ago); reason: opened by operator (bob)',
    );
    expect(text).toContain(
      '  recent transitions (oldest first):\n    2026-11-26T09:39:00Z  closed → open  opened by operator (bob)',
    );
    expect(text).toContain('Lease:    free (no orchestrator run holds it)');
  });
});

describe('formatControl', () => {
  it("prints the service's message and the lane's state after it", () => {
    const result: LaneControlResult = {
      lane: 'default',
      action: 'pause',
      at: AT,
      changed: true,
      message: "lane 'default' paused by alice",
      paused: { by: 'alice', since: AT },
      circuit: { status: 'closed', recentTransitions: [] },
    };

    expect(formatControl(result)).toBe(
      "lane 'default' paused by alice\n(circuit closed, paused by alice since 2026-11-26T09:40:00Z)",
    );
  });
});

describe('formatRedrive', () => {
  it('says per letter where it went and what became of its key, then the total', () => {
    const base = { from: 'main-dlq', to: 'main' } as const;
    const text = formatRedrive([
      { ...base, messageId: 'm1', idempotencyKey: 'k1', keyWas: 'dead-lettered', outcome: 'redriven' },
      { ...base, messageId: 'm2', keyWas: 'unknown', outcome: 'failed', error: 'Error: SQS is down' },
    ]);

    expect(text).toBe(
      [
        '  message id  from → to        outcome   idempotency key',
        '  m1          main-dlq → main  redriven  k1 (reopened)',
        '  m2          main-dlq → main  failed    (new: the message id)  Error: SQS is down',
        '1 of 2 sent back to their source queues',
      ].join('\n'),
    );
  });

  it('says when there was nothing to redrive', () => {
    expect(formatRedrive([])).toBe('Nothing to redrive.');
  });
});

describe('ago, isoSecond and table', () => {
  it('write durations, instants and columns compactly', () => {
    expect(ago(AT - 5_000, AT)).toBe('5 s ago');
    expect(ago(AT + 3 * 3_600_000, AT)).toBe('in 3 h');
    expect(ago(AT - 3 * 86_400_000, AT)).toBe('3 d ago');
    expect(isoSecond(AT + 999)).toBe('2026-11-26T09:40:00Z');
    expect(
      table([
        ['a', '1'],
        ['bbb', '22'],
      ]),
    ).toBe('  a     1\n  bbb  22');
  });
});
