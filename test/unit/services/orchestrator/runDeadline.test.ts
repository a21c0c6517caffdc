import { runDeadline } from '../../../../lib/services/orchestrator/runDeadline';

const base = { tickMs: 60_000, exitReserveMs: 5_000, tickMarginMs: 500 };
const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

describe('runDeadline', () => {
  it('stops a manual invoke at its hard end: remaining time minus the exit reserve', () => {
    expect(runDeadline({ ...base, now: T0 + 1_234, remainingMs: 300_000 })).toBe(T0 + 1_234 + 295_000);
  });

  it('stops a scheduled run just before the last tick that fits its timeout', () => {
    // Started 2 s after its tick with 5 min left: the hard end is at tick + 4:57, so it stops at tick + 4:00 − 0.5 s.
    expect(runDeadline({ ...base, now: T0 + 2_000, remainingMs: 300_000, scheduledAt: T0 })).toBe(T0 + 240_000 - 500);
  });

  it('uses a tick that falls exactly at the hard end', () => {
    expect(runDeadline({ ...base, now: T0, remainingMs: 65_000 - 500, scheduledAt: T0 })).toBe(T0 + 60_000 - 500);
  });

  it('falls back to the hard end when no tick fits before it', () => {
    expect(runDeadline({ ...base, now: T0 + 10_000, remainingMs: 40_000, scheduledAt: T0 })).toBe(T0 + 45_000);
  });

  it('never ends a run before it starts, even if it started late after its tick', () => {
    const now = T0 + 59_800;
    const deadline = runDeadline({ ...base, now, remainingMs: 300_000, scheduledAt: T0 });
    expect(deadline).toBe(T0 + 300_000 - 500);
    expect(deadline).toBeGreaterThan(now);
  });
});
