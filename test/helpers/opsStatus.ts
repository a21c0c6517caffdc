import type { OpsStatus } from '../../tools/ops/laneOps';

/** The instant of {@link opsStatus}. */
export const STATUS_AT = Date.UTC(2026, 10, 26, 9, 40);

/** A queue that holds nothing. */
export const EMPTY_DEPTH = { visible: 0, inFlight: 0, delayed: 0 };

/**
 * What `ops status` reads of a lane that dispatches: 10/second and 20000/day, 12 jobs visible in the main queue and 2
 * retries delayed in the requeue queue, one dead letter; `overrides` replace whole fields.
 */
export function opsStatus(overrides: Partial<OpsStatus> = {}): OpsStatus {
  return {
    target: 'the local stack (out/local-stack.json)',
    lane: 'default',
    at: STATUS_AT,
    paused: null,
    circuit: { status: 'closed', recentTransitions: [] },
    tiers: [
      { tier: '10/second', per: 'second', unit: 'requests', limit: 10, used: 3, remaining: 7 },
      {
        tier: '20000/day',
        per: 'day',
        unit: 'requests',
        limit: 20_000,
        used: 1_500,
        remaining: 18_500,
        resetsAt: Date.UTC(2026, 10, 27),
      },
    ],
    lease: { owner: 'orchestrator-1', expiresAt: STATUS_AT + 25_000, fencingToken: 12, expired: false },
    queues: {
      main: { visible: 12, inFlight: 3, delayed: 0 },
      fifo: EMPTY_DEPTH,
      requeue: { visible: 0, inFlight: 0, delayed: 2 },
      bulk: EMPTY_DEPTH,
      'main-dlq': { visible: 1, inFlight: 0, delayed: 0 },
      'fifo-dlq': EMPTY_DEPTH,
      'requeue-dlq': EMPTY_DEPTH,
      'bulk-dlq': EMPTY_DEPTH,
    },
    pools: [],
    override: null,
    ...overrides,
  };
}
