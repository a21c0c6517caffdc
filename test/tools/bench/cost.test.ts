import {
  ORCHESTRATOR_MEMORY_MB,
  PRICES,
  WORKER_MEMORY_MB,
  costInputForResult,
  costPerMillionJobs,
  formatCostLines,
  formatPrices,
  formatUsd,
} from '../../../tools/bench/cost';
import type { StrategyResult } from '../../../tools/bench/types';

describe('PRICES', () => {
  it('states the public on-demand prices with their date and source', () => {
    expect(PRICES.region).toBe('us-east-1');
    expect(PRICES.lambda.perGbSecondArm64).toBe(0.0000133334);
    expect(PRICES.lambda.perMillionRequests).toBe(0.2);
    expect(PRICES.sqs.perMillionRequestsStandard).toBe(0.4);
    expect(PRICES.sqs.perMillionRequestsFifo).toBe(0.5);
    expect(PRICES.sqs.requestChunkBytes).toBe(65536);
    expect(PRICES.dynamodb.perMillionWriteRequestUnits).toBe(0.625);
    expect(PRICES.dynamodb.perMillionReadRequestUnits).toBe(0.125);
    expect(PRICES.date).toMatch(/\d{4}-\d{2}-\d{2}/);
    expect(PRICES.source).toContain('aws.amazon.com');
    for (const service of [PRICES.lambda, PRICES.sqs, PRICES.dynamodb]) {
      expect(service.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(service.source).toMatch(/^aws\.amazon\.com\//);
    }
  });
});

describe('costPerMillionJobs', () => {
  it('prices a hand-computed orchestrator example', () => {
    const cost = costPerMillionJobs({
      invocationsPerJob: 1.02,
      workerBusySecondsPerJob: 0.06,
      memoryMb: 256,
      dynamodbReadsPerJob: 0.5,
      dynamodbWritesPerJob: 2.4,
      sqsRequestsPerJob: 3,
      orchestratorSecondsPerJob: 0.01,
      orchestratorMemoryMb: 512,
    });
    // 1.02 invocations × $0.20 per million.
    expect(cost.lambdaRequests).toBeCloseTo(0.204, 10);
    // (0.06 s × 0.25 GB + 0.01 s × 0.5 GB) = 0.02 GB-s per job = 20,000 GB-s per million × $0.0000133334.
    expect(cost.lambdaCompute).toBeCloseTo(0.266668, 10);
    // 3 requests × $0.40 per million.
    expect(cost.sqs).toBeCloseTo(1.2, 10);
    // 0.5 read units × $0.125 + 2.4 write units × $0.625 per million.
    expect(cost.dynamodb).toBeCloseTo(0.0625 + 1.5, 10);
    expect(cost.total).toBeCloseTo(0.204 + 0.266668 + 1.2 + 1.5625, 10);
    expect(cost.total).toBeCloseTo(3.233168, 10);
  });

  it('prices reads and writes apart, and FIFO requests at the FIFO rate', () => {
    const cost = costPerMillionJobs({
      invocationsPerJob: 0,
      workerBusySecondsPerJob: 0,
      memoryMb: 128,
      dynamodbReadsPerJob: 4,
      dynamodbWritesPerJob: 2,
      sqsRequestsPerJob: 1,
      sqsFifoRequestsPerJob: 2,
    });
    // 4 × $0.125 + 2 × $0.625; 1 × $0.40 + 2 × $0.50.
    expect(cost.dynamodb).toBeCloseTo(1.75, 10);
    expect(cost.sqs).toBeCloseTo(1.4, 10);
    expect(cost.lambdaRequests).toBe(0);
    expect(cost.lambdaCompute).toBe(0);
    expect(cost.total).toBeCloseTo(3.15, 10);
  });

  it('bills a naive worker for its sleeps: GB-seconds grow with busy time', () => {
    // 3.25 s at 256 MB per job: 812,500 GB-s per million jobs.
    const cost = costPerMillionJobs({ invocationsPerJob: 1.8, workerBusySecondsPerJob: 3.25, memoryMb: 256 });
    expect(cost.lambdaCompute).toBeCloseTo(812_500 * 0.0000133334, 8);
    expect(cost.lambdaRequests).toBeCloseTo(0.36, 10);
    expect(cost.sqs).toBe(0);
    expect(cost.dynamodb).toBe(0);
  });

  it('takes the deployed orchestrator memory by default, and counts its invocations', () => {
    expect(ORCHESTRATOR_MEMORY_MB).toBe(256);
    const cost = costPerMillionJobs({
      invocationsPerJob: 1,
      workerBusySecondsPerJob: 0,
      memoryMb: 256,
      orchestratorSecondsPerJob: 0.004,
      orchestratorInvocationsPerJob: 0.5,
    });
    // 0.004 s × 0.25 GB × 1e6 = 1,000 GB-s.
    expect(cost.lambdaCompute).toBeCloseTo(1000 * 0.0000133334, 10);
    expect(cost.lambdaRequests).toBeCloseTo(1.5 * 0.2, 10);
  });

  it.each([
    ['invocationsPerJob', -1],
    ['workerBusySecondsPerJob', Number.NaN],
    ['sqsRequestsPerJob', Number.POSITIVE_INFINITY],
    ['dynamodbWritesPerJob', -0.5],
  ])('refuses %s = %d', (field, value) => {
    expect(() =>
      costPerMillionJobs({ invocationsPerJob: 1, workerBusySecondsPerJob: 1, memoryMb: 256, [field]: value }),
    ).toThrow(new RegExp(field));
  });
});

describe('costInputForResult', () => {
  const orchestrator: StrategyResult = {
    name: 'orchestrator',
    durationSeconds: 150,
    idealSeconds: 150,
    optimalSeconds: 149,
    apiCalls: 5000,
    rejectedByApi: 0,
    callsPerJob: 1,
    utilization: 1,
    invocationsPerJob: 1,
    workerBusySecondsPerJob: 0.05,
    dynamodbReadUnitsPerJob: 0.1,
    dynamodbWriteUnitsPerJob: 1.1,
    sqsRequestsPerJob: 3,
    callsPerSecond: [],
  };

  it("takes a result's counts, the deployed worker memory by default", () => {
    expect(costInputForResult(orchestrator, { orchestratorSecondsPerJob: 0.03 })).toEqual({
      invocationsPerJob: 1,
      workerBusySecondsPerJob: 0.05,
      memoryMb: WORKER_MEMORY_MB,
      dynamodbReadsPerJob: 0.1,
      dynamodbWritesPerJob: 1.1,
      sqsRequestsPerJob: 3,
      orchestratorSecondsPerJob: 0.03,
      orchestratorMemoryMb: undefined,
    });
    expect(costInputForResult(orchestrator, { memoryMb: 1024 }).memoryMb).toBe(1024);
  });
});

describe('formatting', () => {
  it.each([
    [0, '$0'],
    [0.0042, '$0.0042'],
    [0.36, '$0.36'],
    [3.233168, '$3.23'],
    [1234.5, '$1234.50'],
  ])('formatUsd(%d) = %s', (value, text) => {
    expect(formatUsd(value)).toBe(text);
  });

  it('prints the prices with their dates and sources', () => {
    const text = formatPrices();
    expect(text).toContain('$0.0000133334 per GB-second');
    expect(text).toContain('$0.20 per 1M requests');
    expect(text).toContain('$0.40 per 1M requests standard');
    expect(text).toContain('$0.50 FIFO');
    expect(text).toContain('$0.625 per 1M write request units');
    expect(text).toContain('$0.125 per 1M read request units');
    expect(text).toContain('ReturnConsumedCapacity');
    expect(text).toContain(PRICES.date);
    expect(text).toContain(PRICES.source);
  });

  it('prints one cost row per strategy, the reason for a missing one, then the prices', () => {
    const cost = costPerMillionJobs({
      invocationsPerJob: 1.02,
      workerBusySecondsPerJob: 0.06,
      memoryMb: 256,
      dynamodbReadsPerJob: 0.5,
      dynamodbWritesPerJob: 2.4,
      sqsRequestsPerJob: 3,
      orchestratorSecondsPerJob: 0.01,
      orchestratorMemoryMb: 512,
    });
    const naive = costPerMillionJobs({ invocationsPerJob: 1.8, workerBusySecondsPerJob: 3.25, memoryMb: 256 });
    const lines = formatCostLines([
      { name: 'naive-fanout', cost: naive },
      { name: 'shared-redis-limiter', unavailable: 'redis-server not found' },
      { name: 'orchestrator', cost },
    ]).split('\n');
    const line = (i: number): string => lines[i] ?? '';
    expect(line(0)).toMatch(/^cost per 1M jobs\s+Lambda requests\s+Lambda GB-s\s+SQS\s+DynamoDB\s+total$/);
    expect(line(2).trim().split(/\s+/)).toEqual(['naive-fanout', '$0.36', '$10.83', '-', '-', '$11.19']);
    expect(line(3)).toMatch(/^shared-redis-limiter\s+unavailable: redis-server not found$/);
    expect(line(4).trim().split(/\s+/)).toEqual(['orchestrator', '$0.20', '$0.27', '$1.20', '$1.56', '$3.23']);
    expect(lines.slice(5).join('\n')).toBe(formatPrices());
  });
});
