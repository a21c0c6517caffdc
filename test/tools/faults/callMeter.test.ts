import type { ApiResult } from '../../../lib/domain/outcome/apiResult';
import type { ApiCaller } from '../../../lib/ports/ApiCaller';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { CallMeter, callsInProgress } from '../../../tools/faults/callMeter';

const OK: ApiResult = { kind: 'response', status: 200, headers: {} };

/** An API on `clock` that answers every call `latencyMs` after it arrives, and counts its probes. */
function slowApi(clock: FakeClock, latencyMs: number): ApiCaller & { probes: number } {
  const api = {
    probes: 0,
    call: async () => {
      await clock.sleep(latencyMs);
      return OK;
    },
    probe: async () => {
      api.probes++;
      await clock.sleep(latencyMs);
      return OK;
    },
  };
  return api;
}

describe('callsInProgress', () => {
  it('finds the peak, and counts the calls that arrived while the cap was reached', () => {
    const spans = [
      { from: 0, to: 100 },
      { from: 10, to: 50 },
      { from: 20, to: 60 },
      { from: 30, to: 40 }, // the 4th in progress: over a cap of 3
      { from: 55, to: 90 }, // 3 in progress again (0, 20-60, 55)
    ];
    expect(callsInProgress(spans, 3)).toEqual({ calls: 5, peak: 4, overCap: 1, inProgress: 0 });
  });

  it('does not overlap a call answered at the instant another arrives', () => {
    expect(
      callsInProgress(
        [
          { from: 0, to: 10 },
          { from: 10, to: 20 },
        ],
        1,
      ),
    ).toEqual({ calls: 2, peak: 1, overCap: 0, inProgress: 0 });
  });

  it('counts a call with no answer yet as in progress to the end', () => {
    expect(callsInProgress([{ from: 0 }, { from: 100, to: 200 }], 1)).toEqual({
      calls: 2,
      peak: 2,
      overCap: 1,
      inProgress: 1,
    });
  });

  it('counts nothing over the cap without one', () => {
    expect(
      callsInProgress([
        { from: 0, to: 10 },
        { from: 5, to: 10 },
      ]),
    ).toMatchObject({ peak: 2, overCap: 0 });
  });
});

describe('CallMeter', () => {
  describe('around', () => {
    it('counts each job call from its arrival to its answer, and leaves health checks out', async () => {
      const clock = new FakeClock(1_000);
      const meter = new CallMeter(() => clock.now());
      const api = slowApi(clock, 300);
      const metered = meter.around(api);

      const calls = [metered.call('{"id":"a"}', { idempotencyKey: 'a' }), metered.probe()];
      await clock.advance(100);
      calls.push(metered.call('{"id":"b"}', { idempotencyKey: 'b' }));
      await clock.advance(150);
      expect(meter.report(2)).toEqual({ calls: 2, peak: 2, overCap: 0, inProgress: 2 });
      await clock.advance(1_000);
      await Promise.all(calls);

      expect(meter.report(1)).toEqual({ calls: 2, peak: 2, overCap: 1, inProgress: 0 });
      expect(api.probes).toBe(1);
    });

    it('dates a call served over HTTP from when its worker sent it (the server’s waitedMs)', async () => {
      const clock = new FakeClock(1_000);
      const meter = new CallMeter(() => clock.now());
      const metered = meter.around(slowApi(clock, 100));

      const first = metered.call('{"id":"a"}', { idempotencyKey: 'a' });
      await clock.advance(150); // a has ended at 1 100
      const second = metered.call('{"id":"b"}', { idempotencyKey: 'b', waitedMs: 80 } as { idempotencyKey: string });
      await clock.advance(100);
      await Promise.all([first, second]);

      // b was sent at 1 070, while a was still in progress.
      expect(meter.report(1)).toMatchObject({ peak: 2, overCap: 1 });
    });
  });

  describe('arrival', () => {
    it('resolves when the next call with the key reaches the API, not before', async () => {
      const clock = new FakeClock();
      const meter = new CallMeter(() => clock.now());
      const metered = meter.around(slowApi(clock, 100));
      let arrived = false;
      void meter.arrival('k-1').then(() => (arrived = true));

      void metered.call('{"id":"other"}', { idempotencyKey: 'k-2' });
      await clock.advance(0);
      expect(arrived).toBe(false);
      void metered.call('{"id":"mine"}', { idempotencyKey: 'k-1' });
      await clock.advance(0);
      expect(arrived).toBe(true);
      await clock.advance(100);
    });
  });
});
