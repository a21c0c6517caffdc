import { systemClock } from '../../../lib/adapters/systemClock';

describe('systemClock', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  describe('now', () => {
    it('reads the wall clock', () => {
      expect(systemClock.now()).toBe(1_700_000_000_000);
      jest.advanceTimersByTime(250);
      expect(systemClock.now()).toBe(1_700_000_000_250);
    });
  });

  describe('sleep', () => {
    it('resolves once the time has passed, not before', async () => {
      let woke = false;
      const sleeping = systemClock.sleep(1_000).then(() => {
        woke = true;
      });
      await jest.advanceTimersByTimeAsync(999);
      expect(woke).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await sleeping;
      expect(woke).toBe(true);
    });

    it('resolves without a timer for zero or negative durations', async () => {
      await systemClock.sleep(0);
      await systemClock.sleep(-5);
      expect(jest.getTimerCount()).toBe(0);
    });
  });
});
