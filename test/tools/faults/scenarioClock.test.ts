import { FakeClock } from '../../../tools/memory/FakeClock';
import { ScenarioClock } from '../../../tools/faults/scenarioClock';

const HOUR_MS = 3_600_000;
/** 2026-11-25 18:03:50.250 UTC: 13:03:50.250 in New York (EST, a day of 24 hours). */
const WALL_START = Date.UTC(2026, 10, 25, 18, 3, 50, 250);

/** The local date and time of `at` in `timeZone`, `YYYY-MM-DD HH:MM:SS.mmm`. */
function local(at: number, timeZone: string): string {
  const text = new Intl.DateTimeFormat('sv-SE', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).format(at);
  return `${text}.${String(at % 1000).padStart(3, '0')}`;
}

describe('ScenarioClock', () => {
  it('puts midnight in the zone midnightAfterMs after the start, and runs at the wall clock’s pace', async () => {
    const wall = new FakeClock(WALL_START);
    const clock = new ScenarioClock({ timeZone: 'America/New_York', midnightAfterMs: 4_000 }, wall);
    expect(local(clock.now(), 'America/New_York')).toBe('2026-11-25 23:59:56.000');
    await wall.advance(3_999);
    expect(local(clock.now(), 'America/New_York')).toBe('2026-11-25 23:59:59.999');
    await wall.advance(1);
    expect(local(clock.now(), 'America/New_York')).toBe('2026-11-26 00:00:00.000');
  });

  it('counts the plan again from start(): the set-up before it does not eat into the wait for midnight', async () => {
    const wall = new FakeClock(WALL_START);
    const clock = new ScenarioClock({ timeZone: 'UTC', midnightAfterMs: 1_500 }, wall);
    await wall.advance(2_700); // sending the jobs took longer than the wait for midnight
    expect(local(clock.now(), 'UTC')).toBe('2026-11-26 00:00:01.200');
    clock.start();
    expect(local(clock.now(), 'UTC')).toBe('2026-11-25 23:59:58.500');
  });

  it('leaps forward at each leap’s wall instant, and midnight counts the leaps', async () => {
    const wall = new FakeClock(WALL_START);
    const clock = new ScenarioClock(
      { timeZone: 'UTC', midnightAfterMs: 2 * HOUR_MS + 42_000, leaps: [{ atMs: 20_000, byMs: 2 * HOUR_MS }] },
      wall,
    );
    const start = clock.now();
    await wall.advance(19_999);
    expect(clock.now() - start).toBe(19_999);
    await wall.advance(1);
    expect(clock.now() - start).toBe(2 * HOUR_MS + 20_000);
    await wall.advance(22_000);
    expect(local(clock.now(), 'UTC')).toBe('2026-11-26 00:00:00.000');
  });

  it('wakes a sleeper at a leap once the leap has carried it past its end; a shorter sleep ends on time', async () => {
    const wall = new FakeClock(WALL_START);
    const clock = new ScenarioClock({ timeZone: 'UTC', leaps: [{ atMs: 5_000, byMs: 2 * HOUR_MS }] }, wall);
    const woke: string[] = [];
    void clock.sleep(HOUR_MS).then(() => woke.push(`hour at ${wall.now() - WALL_START}`));
    void clock.sleep(1_000).then(() => woke.push(`second at ${wall.now() - WALL_START}`));
    await wall.advance(4_999);
    expect(woke).toEqual(['second at 1000']);
    await wall.advance(1);
    expect(woke).toEqual(['second at 1000', 'hour at 5000']);
  });

  it('refuses a midnight that is not within a day of the start', () => {
    expect(
      () => new ScenarioClock({ timeZone: 'UTC', midnightAfterMs: 24 * HOUR_MS }, new FakeClock(WALL_START)),
    ).toThrow(/midnightAfterMs must be within a day/);
    expect(() => new ScenarioClock({ timeZone: 'UTC', midnightAfterMs: 0 }, new FakeClock(WALL_START))).toThrow(
      /midnightAfterMs must be within a day/,
    );
  });
});
