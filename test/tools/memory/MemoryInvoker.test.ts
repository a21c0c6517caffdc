import { FakeClock } from '../../../tools/memory/FakeClock';
import { MemoryInvoker } from '../../../tools/memory/MemoryInvoker';
import { InvokeFailedError, InvokeThrottledError } from '../../../lib/errors';
import type { WorkerEvent } from '../../../lib/ports/Invoker';
import { seededRandom } from '../../../tools/simulation/random';
import { DEFAULT_DUPLICATES, InvokeTiming } from '../../../tools/simulation/startDelays';

/** Every event starts `ms` after its invoke and is delivered twice, the second copy as `whileRunningShare` says. */
function twice(ms: number, whileRunningShare: number): InvokeTiming {
  const duplicates = {
    ...DEFAULT_DUPLICATES,
    share: 1,
    whileRunningShare,
    whileRunningMinMs: 50,
    whileRunningMaxMs: 50,
    afterEndMinMs: 1_000,
    afterEndMaxMs: 1_000,
  };
  return new InvokeTiming({ start: { kind: 'fixed', ms }, duplicates }, seededRandom(1));
}

function check(checkId: string): WorkerEvent {
  return { kind: 'health-check', lane: 'default', checkId, sentAt: 0 };
}

/** A handler that records when each event starts and finishes, and takes `workMs` on the clock. */
function recorder(clock: FakeClock, workMs = 0) {
  const started: Array<[string, number]> = [];
  const finished: string[] = [];
  const handler = async (event: WorkerEvent): Promise<void> => {
    const id = event.kind === 'health-check' ? event.checkId : event.kind === 'job' ? event.messageId : 'batch';
    started.push([id, clock.now()]);
    if (workMs > 0) await clock.sleep(workMs);
    finished.push(id);
  };
  return { started, finished, handler };
}

describe('MemoryInvoker', () => {
  describe('invoke', () => {
    it('starts the handler after latencyMs on the clock', async () => {
      const clock = new FakeClock();
      const { started, handler } = recorder(clock);
      const invoker = new MemoryInvoker({ clock, handler, latencyMs: 200 });
      await invoker.invoke(check('c1'));
      await clock.advance(199);
      expect(started).toEqual([]);
      await clock.advance(1);
      expect(started).toEqual([['c1', 200]]);
    });

    it('starts the handler without time passing when latency is 0, but never inside invoke', async () => {
      const clock = new FakeClock();
      const { started, handler } = recorder(clock);
      const invoker = new MemoryInvoker({ clock, handler });
      const accepted = invoker.invoke(check('c1'));
      expect(started).toEqual([]);
      await accepted;
      await clock.advance(0);
      expect(started).toEqual([['c1', 0]]);
    });

    it('resolves without waiting for the handler to finish', async () => {
      const clock = new FakeClock();
      const { finished, handler } = recorder(clock, 1_000);
      const invoker = new MemoryInvoker({ clock, handler });
      await invoker.invoke(check('c1'));
      await invoker.invoke(check('c2'));
      await clock.advance(999);
      expect(finished).toEqual([]);
      await clock.advance(1);
      expect(finished).toEqual(['c1', 'c2']);
      expect(invoker.invocations).toBe(2);
    });
  });

  describe('failNext', () => {
    it('throws InvokeThrottledError for the next n invokes without running the handler', async () => {
      const clock = new FakeClock();
      const { started, handler } = recorder(clock);
      const invoker = new MemoryInvoker({ clock, handler });
      invoker.failNext(2, 'throttled');
      await expect(invoker.invoke(check('c1'))).rejects.toBeInstanceOf(InvokeThrottledError);
      await expect(invoker.invoke(check('c2'))).rejects.toBeInstanceOf(InvokeThrottledError);
      await invoker.invoke(check('c3'));
      await clock.advance(0);
      expect(started).toEqual([['c3', 0]]);
      expect(invoker.invocations).toBe(1);
    });

    it('throws InvokeFailedError for a failed fault', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: recorder(clock).handler });
      invoker.failNext(1, 'failed');
      await expect(invoker.invoke(check('c1'))).rejects.toMatchObject({ code: 'INVOKE_FAILED' });
      await expect(invoker.invoke(check('c2'))).resolves.toBeUndefined();
    });

    it('queues faults in the order they were injected', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: recorder(clock).handler });
      invoker.failNext(1, 'failed');
      invoker.failNext(1, 'throttled');
      await expect(invoker.invoke(check('c1'))).rejects.toBeInstanceOf(InvokeFailedError);
      await expect(invoker.invoke(check('c2'))).rejects.toBeInstanceOf(InvokeThrottledError);
    });

    it('refuses a count that is not a non-negative integer', () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: recorder(clock).handler });
      expect(() => invoker.failNext(-1, 'failed')).toThrow(RangeError);
      expect(() => invoker.failNext(1.5, 'failed')).toThrow(RangeError);
    });
  });

  describe('crashes', () => {
    it('counts a rejecting handler as a crash instead of leaking the rejection', async () => {
      const clock = new FakeClock();
      const boom = new Error('boom');
      const invoker = new MemoryInvoker({ clock, handler: () => Promise.reject(boom) });
      await invoker.invoke(check('c1'));
      await clock.advance(0);
      expect(invoker.crashes).toBe(1);
      expect(invoker.lastCrash).toBe(boom);
    });

    it('counts a handler that throws synchronously as a crash', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({
        clock,
        handler: () => {
          throw new Error('sync');
        },
      });
      await expect(invoker.invoke(check('c1'))).resolves.toBeUndefined();
      await clock.advance(0);
      expect(invoker.crashes).toBe(1);
    });
  });

  describe('invoke with a timing', () => {
    it('starts the handler after the drawn delay and delivers the event again while the first delivery runs', async () => {
      const clock = new FakeClock();
      const { started, finished, handler } = recorder(clock, 300);
      const invoker = new MemoryInvoker({ clock, handler, timing: twice(100, 1) });
      await invoker.invoke(check('c1'));
      await clock.advance(150);
      expect(started).toEqual([
        ['c1', 100],
        ['c1', 150],
      ]);
      expect(finished).toEqual([]);
      expect(invoker.duplicateDeliveries).toBe(1);
      await clock.advance(300);
      expect(invoker.idle()).toBe(true);
    });

    it('delivers the event again after the first delivery ended, and is not idle until then', async () => {
      const clock = new FakeClock();
      const { started, handler } = recorder(clock, 300);
      const invoker = new MemoryInvoker({ clock, handler, timing: twice(100, 0) });
      await invoker.invoke(check('c1'));
      await clock.advance(400);
      expect(started).toEqual([['c1', 100]]);
      expect(invoker.idle()).toBe(false);
      await clock.advance(1_000);
      expect(started).toEqual([
        ['c1', 100],
        ['c1', 1_400],
      ]);
      await clock.advance(300);
      expect(invoker.idle()).toBe(true);
      expect(invoker.invocations).toBe(1);
      expect(invoker.duplicateDeliveries).toBe(1);
    });
  });

  describe('idle', () => {
    it('is true before any invoke', () => {
      const clock = new FakeClock();
      expect(new MemoryInvoker({ clock, handler: recorder(clock).handler }).idle()).toBe(true);
    });

    it('is false while a handler waits out its latency or runs, and true once it is done', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: recorder(clock, 500).handler, latencyMs: 100 });
      await invoker.invoke(check('c1'));
      expect(invoker.idle()).toBe(false);
      await clock.advance(100);
      expect(invoker.idle()).toBe(false);
      await clock.advance(500);
      expect(invoker.idle()).toBe(true);
    });

    it('is true again after a handler crashed', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: () => Promise.reject(new Error('boom')) });
      await invoker.invoke(check('c1'));
      await clock.advance(0);
      expect(invoker.idle()).toBe(true);
    });

    it('stays true after an injected fault', async () => {
      const clock = new FakeClock();
      const invoker = new MemoryInvoker({ clock, handler: recorder(clock).handler });
      invoker.failNext(1, 'throttled');
      await expect(invoker.invoke(check('c1'))).rejects.toThrow();
      expect(invoker.idle()).toBe(true);
    });
  });

  describe('constructor', () => {
    it('refuses a negative latency', () => {
      const clock = new FakeClock();
      expect(() => new MemoryInvoker({ clock, handler: recorder(clock).handler, latencyMs: -1 })).toThrow(RangeError);
    });
  });
});
