import { FakeClock } from '../../../tools/memory/FakeClock';
import type { JsonValue } from '../../../lib/domain/json';
import { parseTiers, type Tier } from '../../../lib/domain/quota/tiers';
import type { ApiResult } from '../../../lib/ports/ApiCaller';
import { readUsage, USAGE_PRESETS } from '../../../lib/domain/usage/usageSources';
import type { VirtualApiOptions } from '../../../tools/simulation/virtualApi';
import { peakCallsInFlight } from '../../../tools/simulation/callsInFlight';
import { VirtualApi } from '../../../tools/simulation/virtualApi';
import { drawnOutputTokens, llmUnits } from '../../../tools/simulation/llmAnswers';

const LATENCY = 50;

function tier(limit: number, per: Tier['per'], unit: Tier['unit'] = 'requests'): Tier {
  return parseTiers([{ limit, per, unit }])[0]!;
}

interface Harness {
  readonly api: VirtualApi;
  readonly clock: FakeClock;
  /** Starts a call with the JSON text of each body at the current instant, lets the latency pass, and returns the results. */
  callAll(...bodies: JsonValue[]): Promise<ApiResult[]>;
  /** Advances to `at`, makes one call there and returns its status once answered. */
  statusAt(at: number, body?: JsonValue): Promise<number>;
}

function setup(options: Partial<VirtualApiOptions> & { start?: number } = {}): Harness {
  const clock = new FakeClock(options.start ?? 0);
  const latencyMs = options.latencyMs ?? LATENCY;
  const api = new VirtualApi({ tiers: [], ...options, latencyMs, clock });
  const callAll = async (...bodies: JsonValue[]): Promise<ApiResult[]> => {
    const pending = bodies.map((body, i) => api.call(JSON.stringify(body), { idempotencyKey: `key-${i}` }));
    await clock.advance(latencyMs);
    return Promise.all(pending);
  };
  const statusAt = async (at: number, body: JsonValue = { id: `job-${at}` }): Promise<number> => {
    expect(clock.now()).toBeLessThanOrEqual(at);
    await clock.advanceTo(at);
    const [result] = await callAll(body);
    return status(result);
  };
  return { api, clock, callAll, statusAt };
}

function status(result: ApiResult | undefined): number {
  if (result?.kind !== 'response') throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return result.status;
}

function retryAfter(result: ApiResult | undefined): string | undefined {
  return result?.kind === 'response' ? result.headers['retry-after'] : undefined;
}

describe('VirtualApi', () => {
  describe('call', () => {
    it('counts a call when it arrives and answers after the latency', async () => {
      const { api, clock } = setup({ tiers: [tier(10, 'second')] });
      let answered = false;
      const pending = api.call('{"id":"a"}', { idempotencyKey: 'a' }).then((r) => {
        answered = true;
        return r;
      });
      await clock.advance(LATENCY - 1);
      expect(answered).toBe(false);
      expect(api.report().apiCalls).toBe(1);
      await clock.advance(1);
      expect(await pending).toEqual({ kind: 'response', status: 200, headers: { 'x-actual-cost': '1' } });
      expect(api.callLog).toEqual([{ at: 0, id: 'a', status: 200, endAt: LATENCY, usage: { cost: 1 } }]);
    });

    it('dates a call whose request waited for its body when it arrived, and lets it leave its window from then', async () => {
      const { api, clock } = setup({ tiers: [tier(2, 'second')], latencyMs: 0 });
      const callAt = async (at: number, id: string, waitedMs?: number) => {
        await clock.advanceTo(at);
        const answer = api.call(`{"id":"${id}"}`, {
          idempotencyKey: id,
          ...(waitedMs === undefined ? {} : { waitedMs }),
        });
        await clock.advance(0);
        return status(await answer);
      };
      // b's request arrived at 990, before a's, and was handled at 1 010. At 1 995 b has left the window
      // (995, 1 995], a has not: c is the second call in it.
      expect([await callAt(1_000, 'a'), await callAt(1_010, 'b', 20), await callAt(1_995, 'c')]).toEqual([
        200, 200, 200,
      ]);
      expect(api.callLog.map(({ at, id }) => ({ at, id }))).toEqual([
        { at: 1_000, id: 'a' },
        { at: 990, id: 'b' },
        { at: 1_995, id: 'c' },
      ]);
    });

    it('rejects the (L+1)th request within a sliding window and accepts it once the oldest arrival has left', async () => {
      const { api, statusAt } = setup({ tiers: [tier(3, 'second')], latencyMs: 0 });
      expect(await statusAt(0)).toBe(200);
      expect(await statusAt(100)).toBe(200);
      expect(await statusAt(200)).toBe(200);
      expect(await statusAt(999)).toBe(429);
      expect(await statusAt(1000)).toBe(200); // 1000 - 1000 >= 0: the arrival at 0 has left
      expect(await statusAt(1099)).toBe(429);
      expect(await statusAt(1100)).toBe(200);
      expect(api.report()).toMatchObject({ apiCalls: 7, rejectedByApi: 2 });
    });

    it('enforces second and minute tiers together', async () => {
      const { clock, callAll, statusAt } = setup({ tiers: [tier(2, 'second'), tier(3, 'minute')], latencyMs: 0 });
      const burst = await callAll({ id: 'a' }, { id: 'b' }, { id: 'c' });
      expect(burst.map(status)).toEqual([200, 200, 429]);
      expect(retryAfter(burst[2])).toBe('1');
      expect(await statusAt(1000)).toBe(200);
      await clock.advanceTo(2000);
      const [late] = await callAll({ id: 'd' });
      expect(status(late)).toBe(429);
      expect(retryAfter(late)).toBe('58'); // the minute tier frees its first unit at 60 000
      expect(await statusAt(59_999)).toBe(429);
      expect(await statusAt(60_000)).toBe(200);
    });

    it('counts named-unit tiers in the units costsOf gives and reports the cost unit in x-actual-cost', async () => {
      const { api, callAll } = setup({
        tiers: [tier(10, 'second', 'cost'), tier(100, 'second')],
        latencyMs: 0,
        costsOf: (body) => {
          const { tokens } = JSON.parse(body) as { tokens?: unknown };
          return { cost: typeof tokens === 'number' ? tokens : 0 };
        },
      });
      const results = await callAll({ id: 'a', tokens: 6 }, { id: 'b', tokens: 5 }, { id: 'c', tokens: 4 });
      expect(results.map(status)).toEqual([200, 429, 200]);
      expect(results[0]).toMatchObject({ headers: { 'x-actual-cost': '6' } });
      expect(api.callLog.map((c) => c.usage)).toEqual([{ cost: 6 }, undefined, { cost: 4 }]);
      expect(api.maxWindowUsage(tier(10, 'second', 'cost'))).toBe(10);
      expect(api.maxWindowUsage(tier(100, 'second'))).toBe(2);
    });

    it('takes the cost from body.cost by default, and 1 when it is not a finite number', async () => {
      const { callAll } = setup({ tiers: [tier(10, 'minute', 'cost')], latencyMs: 0 });
      const results = await callAll({ id: 'a', cost: 7 }, { id: 'b', cost: 'lots' }, { id: 'c' }, { id: 'd', cost: 2 });
      expect(results.map((r) => (r.kind === 'response' ? r.headers['x-actual-cost'] : undefined))).toEqual([
        '7',
        '1',
        '1',
        undefined,
      ]);
      expect(results.map(status)).toEqual([200, 200, 200, 429]);
    });

    it('answers 413 without consuming quota for a request larger than a limit, which could never fit', async () => {
      const { api, callAll } = setup({ tiers: [tier(10, 'second', 'cost')], latencyMs: 0 });
      const results = await callAll({ id: 'huge', cost: 11 }, { id: 'a', cost: 10 });
      expect(results.map(status)).toEqual([413, 200]);
      expect(api.report().rejectedByApi).toBe(0);
    });

    it('counts day tiers per UTC calendar day and frees them at midnight', async () => {
      const midnight = Date.UTC(2024, 0, 2);
      const { api, callAll, statusAt } = setup({ tiers: [tier(2, 'day')], latencyMs: 0, start: midnight - 3_600_000 });
      expect(await statusAt(midnight - 3_600_000)).toBe(200);
      expect(await statusAt(midnight - 1_500)).toBe(200);
      const [late] = await callAll({ id: 'late' });
      expect(status(late)).toBe(429);
      expect(retryAfter(late)).toBe('2'); // 1.5 s to midnight, rounded up
      expect(await statusAt(midnight)).toBe(200); // a new day, though the last call was 1.5 s ago
      expect(await statusAt(midnight + 1)).toBe(200);
      expect(await statusAt(midnight + 2)).toBe(429);
      expect(api.maxWindowUsage(tier(2, 'day'))).toBe(2);
    });

    it('counts month tiers per UTC calendar month', async () => {
      const feb = Date.UTC(2024, 1, 1);
      const { clock, callAll, statusAt } = setup({ tiers: [tier(1, 'month')], latencyMs: 0, start: feb - 1 });
      expect(await statusAt(feb - 1)).toBe(200);
      expect(await statusAt(feb)).toBe(200);
      await clock.advanceTo(Date.UTC(2024, 1, 15));
      const [result] = await callAll({ id: 'x' });
      expect(status(result)).toBe(429);
      expect(retryAfter(result)).toBe(String(15 * 86_400)); // 2024 is a leap year: March starts 15 days on
    });

    it('gives retry-after in whole seconds, rounded up', async () => {
      const { clock, callAll } = setup({ tiers: [tier(1, 'minute')], latencyMs: 0 });
      await callAll({ id: 'a' });
      await clock.advanceTo(10_500);
      const [result] = await callAll({ id: 'b' });
      expect(result).toEqual({ kind: 'response', status: 429, headers: { 'retry-after': '50' } });
    });

    it('answers 503 during an outage without consuming quota or counting a rejection', async () => {
      const { api, statusAt } = setup({
        tiers: [tier(1, 'minute')],
        latencyMs: 0,
        outages: [{ startMs: 0, endMs: 1000 }],
      });
      expect(await statusAt(0)).toBe(503);
      expect(await statusAt(999)).toBe(503);
      expect(await statusAt(1000)).toBe(200);
      expect(api.report()).toMatchObject({ apiCalls: 3, rejectedByApi: 0 });
    });

    it('answers 400 to a poison body, consuming quota but not counting a success', async () => {
      const { api, callAll } = setup({ tiers: [tier(1, 'second')], latencyMs: 0 });
      const results = await callAll({ id: 'bad', poison: true }, { id: 'good' });
      expect(results.map(status)).toEqual([400, 429]);
      expect(api.succeededIds()).toEqual([]);
    });

    it('counts 200 answers beyond the first per id as duplicates', async () => {
      const { api, callAll } = setup({ latencyMs: 0 });
      await callAll({ id: 'a' }, { id: 'b' }, { id: 'a' });
      await callAll({ id: 'a' });
      expect(api.report().duplicates).toBe(2);
      expect(api.successesById()).toEqual(
        new Map([
          ['a', 3],
          ['b', 1],
        ]),
      );
      expect(api.succeededIds()).toEqual(['a', 'b']);
    });

    it('falls back to the idempotency key when the body has no id', async () => {
      const { api, callAll } = setup();
      await callAll('plain text');
      expect(api.succeededIds()).toEqual(['key-0']);
    });

    it('reads the job from the body text as it came: the last of duplicate keys, escapes decoded', async () => {
      const { api, clock } = setup({ latencyMs: 0 });
      const pending = api.call('{ "id": "first", "group": "g", "seq": 1, "id" : "\\u0061",\n"seq": 2 }', {
        idempotencyKey: 'k',
      });
      await clock.advance(0);
      await pending;
      expect(api.callLog).toEqual([expect.objectContaining({ at: 0, id: 'a', group: 'g', seq: 2, status: 200 })]);
    });
  });

  describe('FIFO order', () => {
    it('flags a call that arrives while another of its group is in flight', async () => {
      const { api, callAll } = setup();
      await callAll({ id: 'a', group: 'g', seq: 1 }, { id: 'b', group: 'g', seq: 2 }, { id: 'c', group: 'h', seq: 1 });
      expect(api.report().fifoOrderViolations).toBe(1);
    });

    it('flags a lower seq after a higher one was answered', async () => {
      const { api, callAll } = setup();
      await callAll({ id: 'b', group: 'g', seq: 2 });
      await callAll({ id: 'a', group: 'g', seq: 1 });
      expect(api.report().fifoOrderViolations).toBe(1);
    });

    it('accepts calls in seq order, one at a time, including after a dead-lettered poison call', async () => {
      const { api, callAll } = setup();
      await callAll({ id: 'a', group: 'g', seq: 1 });
      await callAll({ id: 'b', group: 'g', seq: 2, poison: true });
      await callAll({ id: 'c', group: 'g', seq: 3 });
      expect(api.report().fifoOrderViolations).toBe(0);
    });

    it('does not flag calls answered 429 or 503', async () => {
      const { api, clock, callAll } = setup({ tiers: [tier(1, 'minute')], outages: [{ startMs: 1000, endMs: 2000 }] });
      await callAll({ id: 'a', group: 'g', seq: 1 }, { id: 'b', group: 'g', seq: 2 });
      await clock.advanceTo(1000);
      await callAll({ id: 'c', group: 'g', seq: 0 });
      expect(api.callLog.map((c) => c.status)).toEqual([200, 429, 503]);
      expect(api.report().fifoOrderViolations).toBe(0);
    });
  });

  describe('probe', () => {
    it('answers 503 during an outage and 200 otherwise, counted apart from job calls and consuming no quota', async () => {
      const { api, clock, callAll } = setup({ tiers: [tier(1, 'minute')], outages: [{ startMs: 0, endMs: 100 }] });
      const first = api.probe();
      await clock.advance(LATENCY);
      expect(await first).toEqual({ kind: 'response', status: 503, headers: {} });
      await clock.advanceTo(100);
      const second = api.probe();
      await clock.advance(LATENCY);
      expect(status(await second)).toBe(200);
      expect(status((await callAll({ id: 'a' }))[0])).toBe(200);
      expect(api.report()).toMatchObject({ probes: 2, apiCalls: 1 });
    });
  });

  describe('firstSuccessAfter', () => {
    it('gives the arrival of the first 200 at or after an instant', async () => {
      const { api, statusAt } = setup({ latencyMs: 0, outages: [{ startMs: 0, endMs: 20 }] });
      for (const at of [10, 20, 30]) await statusAt(at);
      expect(api.firstSuccessAfter(0)).toBe(20);
      expect(api.firstSuccessAfter(21)).toBe(30);
      expect(api.firstSuccessAfter(31)).toBeUndefined();
    });
  });

  describe('enforce: false', () => {
    it('never answers 429 and reports the fullest window of each tier', async () => {
      const { api, callAll, statusAt } = setup({
        tiers: [tier(2, 'second'), tier(100, 'day')],
        latencyMs: 0,
        enforce: false,
      });
      for (const at of [0, 500, 1000, 1500]) await statusAt(at); // paced: at most 2 in any second
      expect(api.maxWindowUsage(tier(2, 'second'))).toBe(2);
      const burst = await callAll({ id: 'a' }, { id: 'b' }, { id: 'c' });
      expect(burst.map(status)).toEqual([200, 200, 200]);
      expect(api.report().rejectedByApi).toBe(0);
      expect(api.maxWindowUsage(tier(2, 'second'))).toBe(5); // 1000, 1500 and the burst at 1500
      expect(api.maxWindowUsage(tier(100, 'day'))).toBe(7);
    });

    it('refuses a tier that is not configured', () => {
      const { api } = setup({ tiers: [tier(2, 'second')] });
      expect(() => api.maxWindowUsage(tier(2, 'minute'))).toThrow(/no tier per 'minute'/);
    });
  });

  describe('outcomeReport', () => {
    it('counts calls after a final answer, 4xx final answers beyond the first, and FIFO arrivals after a higher seq', async () => {
      const { api, callAll } = setup({ latencyMs: 0 });
      await callAll({ id: 'a' });
      await callAll({ id: 'a' });
      await callAll({ id: 'p', poison: true });
      await callAll({ id: 'p', poison: true });
      await callAll({ id: 'f-2', group: 'g', seq: 2 });
      await callAll({ id: 'f-1', group: 'g', seq: 1 });
      expect(api.outcomeReport()).toEqual({ callsAfterEnded: 2, duplicateFinalAnswers: 2, fifoInversions: 1 });
    });

    it("counts answers a fault gave in front of the API, leaving 429s and the caller's 401s and 403s out of the final answers", () => {
      const { api } = setup({ latencyMs: 0 });
      api.recordOutcome(JSON.stringify({ id: 'a' }), { idempotencyKey: 'k' }, 429);
      api.recordOutcome(JSON.stringify({ id: 'a' }), { idempotencyKey: 'k' }, 401);
      api.recordOutcome(JSON.stringify({ id: 'a' }), { idempotencyKey: 'k' }, 404);
      api.recordOutcome(JSON.stringify({ id: 'a' }), { idempotencyKey: 'k' }, 410);
      expect(api.outcomeReport()).toEqual({ callsAfterEnded: 1, duplicateFinalAnswers: 1, fifoInversions: 0 });
    });
  });

  describe('timeZone', () => {
    it('counts a day tier in the calendar day of its zone', async () => {
      // 05:00 UTC is midnight in New York (EST): the UTC day goes on, the New York day starts again.
      const midnightNy = Date.UTC(2024, 0, 15, 5);
      const { statusAt } = setup({
        tiers: [tier(1, 'day')],
        latencyMs: 0,
        start: midnightNy - 1_000,
        timeZone: 'America/New_York',
      });
      expect(await statusAt(midnightNy - 1_000)).toBe(200);
      expect(await statusAt(midnightNy - 500)).toBe(429);
      expect(await statusAt(midnightNy)).toBe(200);
    });
  });

  describe('as an LLM', () => {
    /** Every answer uses half its max_tokens, and takes 2 ms per output token after the 100 ms base latency. */
    const HALF = { outputShareMin: 0.5, outputShareMax: 0.5, msPerOutputToken: 2 };
    const llmCall = (id: string, prompt: number, maxTokens: number) => ({
      id,
      prompt_tokens: prompt,
      max_tokens: maxTokens,
    });

    /** Starts a call at the current instant; its answer and when it came. */
    function start(api: VirtualApi, clock: FakeClock, body: JsonValue) {
      const at = clock.now();
      return api
        .call(JSON.stringify(body), { idempotencyKey: 'k' })
        .then((result) => ({ result, afterMs: clock.now() - at }));
    }

    it('answers with an Anthropic-shaped usage body after the base latency plus the time per output token', async () => {
      const clock = new FakeClock(0);
      const api = new VirtualApi({ clock, tiers: [], latencyMs: 100, llm: HALF });
      const pending = start(api, clock, llmCall('a', 812, 600));
      await clock.advance(10_000);
      const { result, afterMs } = await pending;
      expect(afterMs).toBe(100 + 2 * 300);
      expect(result).toMatchObject({ kind: 'response', status: 200, headers: {} });
      const body = result.kind === 'response' ? (result.body ?? '') : '';
      expect(JSON.parse(body)).toMatchObject({
        type: 'message',
        usage: { input_tokens: 812, output_tokens: 300, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
      // What the worker reads with the anthropic preset.
      expect(readUsage(USAGE_PRESETS.anthropic, { headers: {}, body })).toEqual({
        input_tokens: 812,
        output_tokens: 300,
        tokens: 1112,
      });
      expect(api.callLog).toEqual([
        { at: 0, id: 'a', status: 200, endAt: 700, usage: { input_tokens: 812, output_tokens: 300, tokens: 1112 } },
      ]);
    });

    it('counts max_tokens toward an output tier at arrival, and only the output once answered', async () => {
      const clock = new FakeClock(0);
      const api = new VirtualApi({ clock, tiers: [tier(1000, 'minute', 'output_tokens')], latencyMs: 100, llm: HALF });
      const first = start(api, clock, llmCall('a', 10, 600)); // reserves 600, answers 300 at 700
      await clock.advance(10);
      const second = start(api, clock, llmCall('b', 10, 600)); // 600 + 600 > 1000 while a is in progress
      await clock.advanceTo(700);
      expect(api.callLog.map((c) => c.usage)).toEqual([
        { input_tokens: 10, output_tokens: 300, tokens: 310 },
        undefined,
      ]);
      const third = start(api, clock, llmCall('c', 10, 600)); // 300 + 600 fits once a is answered
      await clock.advance(10_000);
      expect([(await first).result, (await second).result, (await third).result].map(status)).toEqual([200, 429, 200]);
      expect(api.maxWindowUsage({ per: 'minute', unit: 'output_tokens' })).toBe(900);
    });

    it('counts the prompt toward an input tier at arrival, and corrects nothing there', async () => {
      const clock = new FakeClock(0);
      const api = new VirtualApi({ clock, tiers: [tier(1000, 'minute', 'input_tokens')], latencyMs: 0, llm: HALF });
      const calls = [
        start(api, clock, llmCall('a', 600, 100)),
        start(api, clock, llmCall('b', 500, 100)),
        start(api, clock, llmCall('c', 400, 100)),
      ];
      await clock.advance(10_000);
      expect((await Promise.all(calls)).map(({ result }) => status(result))).toEqual([200, 429, 200]);
      expect(api.maxWindowUsage({ per: 'minute', unit: 'input_tokens' })).toBe(1000);
    });

    it('answers 429 at once, consuming nothing, to a call that arrives while `concurrency` calls are in progress', async () => {
      const clock = new FakeClock(0);
      const api = new VirtualApi({ clock, tiers: [tier(10, 'minute')], latencyMs: 100, concurrency: 2 });
      const [a, b, c] = [
        start(api, clock, { id: 'a' }),
        start(api, clock, { id: 'b' }),
        start(api, clock, { id: 'c' }),
      ];
      expect(await c).toEqual({
        result: { kind: 'response', status: 429, headers: { 'retry-after': '1' } },
        afterMs: 0,
      });
      await clock.advance(100);
      await Promise.all([a, b]);
      const d = start(api, clock, { id: 'd' });
      await clock.advance(100);
      expect(status((await d).result)).toBe(200);
      expect(api.report()).toMatchObject({ apiCalls: 4, rejectedByApi: 1 });
      expect(api.maxWindowUsage({ per: 'minute', unit: 'requests' })).toBe(3);
      // c was turned away the instant it arrived, while a and b were in progress.
      expect(api.peakCallsInFlight()).toBe(3);
    });

    it('draws each id the same output, within the share range and across it', () => {
      const model = { outputShareMin: 0.2, outputShareMax: 1, msPerOutputToken: 0 };
      const outputs = Array.from({ length: 200 }, (_, i) => drawnOutputTokens(`job-${i}`, 1000, model));
      expect(outputs.every((n) => n >= 200 && n <= 1000)).toBe(true);
      expect(Math.min(...outputs)).toBeLessThan(300);
      expect(Math.max(...outputs)).toBeGreaterThan(900);
      expect(drawnOutputTokens('job-7', 1000, model)).toBe(outputs[7]);
    });

    it('counts a token field that is missing or not a count as 0', () => {
      const units = llmUnits('a', JSON.stringify({ id: 'a', prompt_tokens: -5, max_tokens: 'many' }), HALF);
      expect(units).toEqual({
        reserved: { input_tokens: 0, output_tokens: 0, tokens: 0 },
        used: { input_tokens: 0, output_tokens: 0, tokens: 0 },
      });
    });
  });
});

describe('peakCallsInFlight', () => {
  it('is the most calls that overlap, from each arrival to its answer', () => {
    expect(
      peakCallsInFlight([
        { at: 0, endAt: 100 },
        { at: 50, endAt: 150 },
        { at: 60, endAt: 70 },
        { at: 120, endAt: 200 },
      ]),
    ).toBe(3);
  });

  it('does not overlap a call that ends at the instant another arrives', () => {
    expect(
      peakCallsInFlight([
        { at: 0, endAt: 100 },
        { at: 100, endAt: 200 },
        { at: 200, endAt: 300 },
      ]),
    ).toBe(1);
  });

  it('counts a call answered the instant it arrived for that instant', () => {
    expect(
      peakCallsInFlight([
        { at: 0, endAt: 100 },
        { at: 50, endAt: 50 },
      ]),
    ).toBe(2);
    expect(
      peakCallsInFlight([
        { at: 0, endAt: 100 },
        { at: 100, endAt: 100 },
      ]),
    ).toBe(1);
  });

  it('counts a call without an answer as in progress from its arrival on', () => {
    expect(peakCallsInFlight([{ at: 0 }, { at: 500, endAt: 600 }, { at: 1_000 }])).toBe(2);
    expect(peakCallsInFlight([])).toBe(0);
  });
});

describe('VirtualApi with limits of its own', () => {
  const allowed = (headers: 'ietf' | 'openai' | 'none') => ({
    headers,
    changes: [
      { atMs: 0, limits: [3] },
      { atMs: 10_000, limits: [1] },
    ],
  });

  it('allows less than its tiers say, and changes its limit when the schedule does', async () => {
    const h = setup({ tiers: [tier(10, 'second')], allowed: allowed('none') });

    const first = (await h.callAll(1, 2, 3, 4)).map(status);
    await h.clock.advanceTo(10_000);
    const later = (await h.callAll(5, 6)).map(status);

    expect(first).toEqual([200, 200, 200, 429]);
    expect(later).toEqual([200, 429]);
  });

  it("announces its first sliding tier of requests in the IETF fields, refusals' included", async () => {
    const h = setup({ tiers: [tier(10, 'second')], allowed: allowed('ietf') });

    const results = await h.callAll(1, 2, 3, 4);

    expect(results.map((r) => (r.kind === 'response' ? r.headers : {}))).toEqual([
      expect.objectContaining({ 'ratelimit-limit': '3', 'ratelimit-remaining': '2', 'ratelimit-policy': '3;w=1' }),
      expect.objectContaining({ 'ratelimit-remaining': '1' }),
      expect.objectContaining({ 'ratelimit-remaining': '0', 'ratelimit-reset': '1' }),
      expect.objectContaining({ 'ratelimit-remaining': '0', 'retry-after': '1' }),
    ]);
  });

  it("announces them in OpenAI's headers, the reset as a duration", async () => {
    const h = setup({ tiers: [tier(10, 'second')], allowed: allowed('openai') });

    const [result] = await h.callAll(1);

    expect(result).toMatchObject({
      headers: {
        'x-ratelimit-limit-requests': '3',
        'x-ratelimit-remaining-requests': '2',
        'x-ratelimit-reset-requests': '1s',
      },
    });
  });
});
