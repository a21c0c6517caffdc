import { formatCount, formatFixedWidth, formatTable } from '../../../tools/bench/table';
import type { StrategyResult } from '../../../tools/bench/types';
import { STRATEGIES } from '../../../tools/bench/types';

function result(overrides: Partial<StrategyResult> & Pick<StrategyResult, 'name'>): StrategyResult {
  return {
    durationSeconds: 150.04,
    idealSeconds: 150,
    optimalSeconds: 149,
    apiCalls: 5000,
    rejectedByApi: 0,
    callsPerJob: 1,
    utilization: 0.99973,
    invocationsPerJob: 1,
    workerBusySecondsPerJob: 0.0512,
    callsPerSecond: [],
    ...overrides,
  };
}

const results: StrategyResult[] = [
  result({
    name: 'naive-fanout',
    apiCalls: 12345,
    rejectedByApi: 7345,
    callsPerJob: 2.469,
    utilization: 0.61234,
    durationSeconds: 245,
    invocationsPerJob: 1.8,
    workerBusySecondsPerJob: 3.25,
  }),
  result({ name: 'per-worker-limiter', utilization: 0.75, durationSeconds: 200 }),
  result({
    name: 'shared-redis-limiter',
    durationSeconds: 0,
    idealSeconds: 0,
    apiCalls: 0,
    callsPerJob: 0,
    utilization: 0,
    invocationsPerJob: 0,
    workerBusySecondsPerJob: 0,
    unavailable: 'redis-server not found',
  }),
  result({
    name: 'orchestrator',
    dynamodbReadUnitsPerJob: 0.125,
    dynamodbWriteUnitsPerJob: 1.116,
    sqsRequestsPerJob: 3.01,
  }),
];

describe('formatTable', () => {
  const table = formatTable('steady', results, [5.678, 2.5, undefined, 1.234]);
  const lines = table.split('\n');
  const line = (i: number): string => lines[i] ?? '';

  it('has a heading, the column headers, a rule and one row per strategy in order', () => {
    expect(lines).toHaveLength(3 + STRATEGIES.length);
    expect(line(0)).toBe('scenario: steady');
    expect(line(1)).toMatch(
      /^strategy\s+duration s\s+ideal s\s+optimal s\s+utilization\s+API calls\s+429s\s+calls\/job\s+/,
    );
    expect(line(1)).toContain('invocations/job');
    expect(line(1)).toContain('busy s/job');
    expect(line(1)).toMatch(/DynamoDB RU\/job\s+DynamoDB WU\/job\s+SQS req\/job\s+\$ per 1M jobs$/);
    expect(line(2)).toMatch(/^-+( +-+)+$/);
    expect(lines.slice(3).map((l) => l.split(/\s+/)[0])).toEqual([...STRATEGIES]);
  });

  it('shows figures for people: counts grouped, ratios to three places', () => {
    const naive = line(3);
    expect(naive).toContain(' 245.0 ');
    expect(naive).toContain(' 0.612 ');
    expect(naive).toContain(' 12,345 ');
    expect(naive).toContain(' 7,345 ');
    expect(naive).toContain(' 2.469 ');
    expect(naive).toContain(' 3.250 ');
  });

  it('right-aligns figures under their headers', () => {
    const header = line(1);
    const end = (line: string, text: string): number => line.indexOf(text) + text.length;
    expect(end(line(3), '0.612')).toBe(end(header, 'utilization'));
    expect(end(line(6), '5,000')).toBe(end(header, 'API calls'));
    expect(end(line(3), '2.469')).toBe(end(header, 'calls/job'));
    for (const line of lines.slice(1)) expect(line).toBe(line.trimEnd());
  });

  it("gives an unavailable strategy's reason instead of figures", () => {
    const row = line(5);
    expect(row).toMatch(/^shared-redis-limiter\s+unavailable: redis-server not found$/);
  });

  it("shows DynamoDB units and SQS requests for the orchestrator only, '-' for the others, then each one's cost", () => {
    const cells = (line: string): string[] => line.trim().split(/\s{2,}/);
    expect(cells(line(6)).slice(-4)).toEqual(['0.13', '1.12', '3.01', '1.23']);
    expect(cells(line(3)).slice(-4)).toEqual(['-', '-', '-', '5.68']);
    expect(cells(line(4)).slice(-4)).toEqual(['-', '-', '-', '2.50']);
  });

  it('adds the recovery column only when some strategy has a recovery time', () => {
    expect(line(1)).not.toContain('recovery s');
    const outage = formatTable('outage', [
      result({ name: 'naive-fanout', recoverySeconds: 9.87 }),
      result({ name: 'orchestrator', recoverySeconds: 5.2 }),
      result({ name: 'per-worker-limiter' }),
    ]).split('\n');
    const at = (i: number): string => outage[i] ?? '';
    expect(at(1)).toContain('recovery s');
    const recoveryEnd = at(1).indexOf('recovery s') + 'recovery s'.length;
    expect(at(3).slice(recoveryEnd - 4, recoveryEnd)).toBe(' 9.9');
    expect(at(4).slice(recoveryEnd - 4, recoveryEnd)).toBe(' 5.2');
    expect(at(5).slice(recoveryEnd - 4, recoveryEnd)).toBe('   -');
  });

  it('adds the LLM columns after the cost: the peak in flight, the use of each tier, and what the orchestrator handed back', () => {
    const use = (output: number) => ({ '120/minute': 0.5, '60000 output_tokens/minute': output });
    const llm = formatTable('llm', [
      result({ name: 'naive-fanout', peakCallsInFlight: 1234, tierUtilization: use(0.71) }),
      result({
        name: 'orchestrator',
        peakCallsInFlight: 10,
        tierUtilization: use(0.9346),
        handedBackShare: { input_tokens: 0, output_tokens: 0.4 },
      }),
    ]).split('\n');
    const cells = (i: number): string[] => (llm[i] ?? '').trim().split(/\s{2,}/);
    expect(cells(1).slice(-5)).toEqual([
      '$ per 1M jobs',
      'peak in flight',
      'use 120/minute',
      'use 60000 output_tokens/minute',
      'handed back',
    ]);
    expect(cells(3).slice(-4)).toEqual(['1,234', '0.500', '0.710', '-']);
    expect(cells(4).slice(-4)).toEqual(['10', '0.500', '0.935', 'output_tokens 0.400']);
    expect(line(1)).not.toContain('peak in flight');
  });
});

describe('formatFixedWidth', () => {
  it('refuses a row with the wrong number of cells', () => {
    expect(() => formatFixedWidth([{ header: 'a', align: 'left' }], [{ cells: ['1', '2'] }])).toThrow(/2 cells/);
  });

  it('widens the first column for a spanning row', () => {
    const text = formatFixedWidth(
      [
        { header: 'a', align: 'left' },
        { header: 'b', align: 'right' },
      ],
      [{ cells: ['x', '1'] }, { first: 'longer name', spanning: 'why' }],
    );
    expect(text.split('\n')).toEqual(['a            b', '-----------  -', 'x            1', 'longer name  why']);
  });
});

describe('formatCount', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1000, '1,000'],
    [1234567, '1,234,567'],
    [-4321, '-4,321'],
  ])('%d → %s', (n, text) => {
    expect(formatCount(n)).toBe(text);
  });
});
