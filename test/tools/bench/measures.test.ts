import { adaptiveScenario, steadyScenario } from '../../../tools/bench/scenarios';
import type { Settlement } from '../../../lib/domain/quota/ledger';
import { parseTiers, type Tier } from '../../../lib/domain/quota/tiers';
import {
  allowedSeconds,
  allowedShareOf,
  handedBackShare,
  idealSeconds,
  optimalSecondsOf,
  recoverySeconds,
  tierUtilization,
} from '../../../tools/bench/measures';
import type { BenchScenario } from '../../../tools/bench/types';
import type { VirtualApiCall } from '../../../tools/simulation/virtualApi';

const call = (at: number, status: number) => ({ at, id: `j${at}`, status });

describe('recoverySeconds', () => {
  it('is the time from the outage end to the first job call answered 200 after it', () => {
    const calls = [call(900, 200), call(1_000, 503), call(1_250, 429), call(1_420, 200), call(1_500, 200)];
    expect(recoverySeconds(calls, 1_000)).toBe(0.42);
  });

  it('counts a success arriving exactly at the end', () => {
    expect(recoverySeconds([call(2_000, 200)], 2_000)).toBe(0);
  });

  it('is -1 when nothing succeeded after the outage', () => {
    expect(recoverySeconds([call(500, 200), call(1_500, 503)], 1_000)).toBe(-1);
  });
});

describe('tierUtilization', () => {
  const [perSecond, outputPerSecond, perDay] = parseTiers([
    { limit: 10, per: 'second' },
    { limit: 1_000, per: 'second', unit: 'output_tokens' },
    { limit: 100, per: 'day' },
  ]) as [Tier, Tier, Tier];
  /** An accepted call at `at` that used `output` tokens. */
  const used = (at: number, output = 0): VirtualApiCall => ({
    at,
    id: `j${at}`,
    status: 200,
    usage: { output_tokens: output },
  });

  it('is 1 when every window within the backlog holds the whole limit', () => {
    // One call every 100 ms from 0 to 3 000: each window [s, s + 1 s) holds 10.
    const calls = Array.from({ length: 31 }, (_, i) => used(i * 100, 100));
    expect(tierUtilization(calls, [perSecond, outputPerSecond])).toEqual({
      '10/second': 1,
      '1000 output_tokens/second': 1,
    });
  });

  it('counts the units each call finally used, and only accepted calls', () => {
    // Half the output of the limit; the 429s in between count nothing.
    const calls = Array.from({ length: 31 }, (_, i) => used(i * 100, 50)).flatMap((call) => [
      call,
      { at: call.at, id: 'r', status: 429 },
    ]);
    expect(tierUtilization(calls, [outputPerSecond])).toEqual({ '1000 output_tokens/second': 0.5 });
  });

  it('averages over the windows within the backlog, so a burst and a silence show', () => {
    // 10 calls at 0, then one at 2 000 ends the backlog: of the windows starting from 0 to 1 000, the first is full
    // and the 10 others empty.
    const calls = [...Array.from({ length: 10 }, () => used(0)), used(2_000)];
    expect(tierUtilization(calls, [perSecond])['10/second']).toBeCloseTo(1 / 11, 3);
  });

  it('is the units over the limit when the backlog is shorter than a window, and leaves calendar tiers out', () => {
    expect(tierUtilization([used(0, 300), used(400, 200)], [perSecond, outputPerSecond, perDay])).toEqual({
      '10/second': 0.2,
      '1000 output_tokens/second': 0.5,
    });
    expect(tierUtilization([{ at: 0, id: 'r', status: 429 }], [perSecond])).toEqual({ '10/second': 0 });
  });
});

describe('handedBackShare', () => {
  const reservation = { at: 0, costs: { input_tokens: 1_000, output_tokens: 1_000, cost: 1 }, windows: {} };

  it('is per counted unit what the settlements handed back over what they had reserved', () => {
    const settlements: Settlement[] = [
      { reservation, actual: { input_tokens: 1_000, output_tokens: 300 }, id: 'd-1' },
      { reservation, actual: {}, id: 'd-2' }, // used its whole reservation
      { reservation, actual: null, id: 'd-3' }, // no call: all of it back
      { reservation, actual: { output_tokens: 1_500 }, id: 'd-4' }, // more than reserved: nothing back
    ];
    expect(handedBackShare(settlements, ['input_tokens', 'output_tokens'])).toEqual({
      input_tokens: 0.25,
      output_tokens: (700 + 1_000) / 4_000,
    });
  });

  it('counts a settlement written twice once, and a unit never reserved as 0', () => {
    const once = { reservation, actual: { output_tokens: 0 }, id: 'd-1' };
    expect(handedBackShare([once, once, { reservation, actual: {}, id: 'd-2' }], ['output_tokens', 'tokens'])).toEqual({
      output_tokens: 0.5,
      tokens: 0,
    });
  });
});

describe('idealSeconds and optimalSecondsOf', () => {
  const llmBench: BenchScenario = {
    name: 'llm',
    jobs: 20,
    quotas: parseTiers([{ limit: 1_000, per: 'second', unit: 'output_tokens' }]),
    latencyMs: 0,
    workers: 2,
    llm: {
      jobs: { promptTokensMin: 10, promptTokensMax: 10, maxTokens: 100 },
      api: { outputShareMin: 0.5, outputShareMax: 0.5, msPerOutputToken: 0 },
      concurrency: 5,
    },
  };

  it('count what the LLM answers use, not max_tokens', () => {
    // 20 jobs of 50 output tokens: 1 000 tokens, one second of the tier; all of them fit its first window at once.
    expect(idealSeconds(llmBench)).toBe(1);
    expect(idealSeconds(llmBench, 10)).toBe(0.5);
    expect(optimalSecondsOf(llmBench)).toBe(0);
    expect(optimalSecondsOf({ ...llmBench, jobs: 21 })).toBe(1);
  });
});

describe('allowedSeconds and allowedShareOf', () => {
  const adaptive = adaptiveScenario('full');

  it('takes what the API allows segment by segment: 25 s at 12 a second, then the other 300 jobs at 8', () => {
    expect(allowedSeconds(adaptive)).toBe(62.5);
    expect(allowedSeconds(adaptive, 240)).toBe(20);
  });

  it('is the configured quotas’ ideal for a scenario whose API allows what is configured', () => {
    const steady = steadyScenario('quick');
    expect(allowedSeconds(steady)).toBe(idealSeconds(steady));
  });

  it('is the share of a run that allowed time is: 62.5 s of a 69.4 s run is 0.9', () => {
    expect(allowedShareOf(adaptive, 69.444)).toBe(0.9);
    expect(allowedShareOf(adaptive, 0)).toBe(0);
  });
});
