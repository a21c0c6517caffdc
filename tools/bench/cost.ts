/**
 * What a million jobs cost on AWS, from the counts the benchmark measures, at public on-demand prices
 * (us-east-1, USD, free tiers and volume discounts ignored). Pure.
 */
import type { Column, Row } from './table';
import { formatFixedWidth } from './table';
import type { StrategyResult } from './types';

/**
 * The prices used, where they were read and when (us-east-1, on-demand, USD).
 *
 * The AWS pricing pages render their rate tables client-side, so the stored copies of those pages retrieved on
 * 2026-11-23 carry no figures. Each figure below was read from dated summaries of those pages, and agrees across them:
 * - Lambda: a Lambda cost summary dated 2026-05-11 (arm64 $0.0000133334 per GB-s, $0.20 per 1M requests), and
 *   artillery@2.0.28 `lib/platform/aws-lambda/prices.js`, which cites the pricing page (arm64 base 1333340 × 1e-11).
 * - SQS: pricing guides dated 2026-03-14 and 2026-06-13 ($0.40 standard, $0.50 FIFO per 1M requests, first 100 billion
 *   a month); the 64 KB chunk rule is on aws.amazon.com/sqs/features.
 * - DynamoDB: a pricing guide dated 2025-07-21 giving the rates after the November 2024 on-demand price cut
 *   ($0.625 per 1M write request units, $0.125 per 1M read request units, Standard table class).
 */
export const PRICES = {
  region: 'us-east-1',
  currency: 'USD',
  date: 'retrieved 2026-11-23; figures from sources dated 2025-07-21 to 2026-06-13',
  source: 'aws.amazon.com/lambda/pricing, aws.amazon.com/sqs/pricing, aws.amazon.com/dynamodb/pricing/on-demand',
  lambda: {
    /** Duration on arm64 (Graviton), per GB-second (memory in GB = MB / 1024), first 7.5 billion GB-s a month. */
    perGbSecondArm64: 0.0000133334,
    perMillionRequests: 0.2,
    date: '2026-05-11',
    source: 'aws.amazon.com/lambda/pricing',
  },
  sqs: {
    /** Every 64 KB chunk of a request's payload is billed as one request. */
    perMillionRequestsStandard: 0.4,
    perMillionRequestsFifo: 0.5,
    requestChunkBytes: 64 * 1024,
    date: '2026-06-13',
    source: 'aws.amazon.com/sqs/pricing',
  },
  dynamodb: {
    /** One write request unit: a standard write of an item up to 1 KB. */
    perMillionWriteRequestUnits: 0.625,
    /** One read request unit: a strongly consistent read of an item up to 4 KB (eventually consistent: half). */
    perMillionReadRequestUnits: 0.125,
    date: '2025-07-21',
    source: 'aws.amazon.com/dynamodb/pricing/on-demand',
  },
} as const;

/** Memory of the deployed functions (serverless.yml, which a deployment test holds to these), for callers that price them. */
export const WORKER_MEMORY_MB = 256;
export const ORCHESTRATOR_MEMORY_MB = 256;

/** Counts per job; every field is ≥ 0. */
export interface CostInput {
  /** Worker Lambda invocations per job. */
  readonly invocationsPerJob: number;
  /** Worker seconds per job, waits and sleeps included (Lambda bills them). */
  readonly workerBusySecondsPerJob: number;
  /** Worker memory in MB. */
  readonly memoryMb: number;
  /** DynamoDB read request units per job (a strongly consistent read of up to 4 KB is one). */
  readonly dynamodbReadsPerJob?: number;
  /** DynamoDB write request units per job (a write of up to 1 KB is one). */
  readonly dynamodbWritesPerJob?: number;
  /** Standard-queue SQS requests per job (each 64 KB chunk of payload is one request). */
  readonly sqsRequestsPerJob?: number;
  /** FIFO-queue SQS requests per job. */
  readonly sqsFifoRequestsPerJob?: number;
  /** Orchestrator Lambda seconds per job. */
  readonly orchestratorSecondsPerJob?: number;
  /** Orchestrator memory in MB. @default {@link ORCHESTRATOR_MEMORY_MB} */
  readonly orchestratorMemoryMb?: number;
  /** Orchestrator invocations per job (one a minute in production, so usually negligible). @default 0 */
  readonly orchestratorInvocationsPerJob?: number;
}

/** USD per million jobs. */
export interface CostBreakdown {
  readonly lambdaRequests: number;
  readonly lambdaCompute: number;
  readonly sqs: number;
  readonly dynamodb: number;
  readonly total: number;
}

/**
 * The cost of a million jobs. Since the counts are per job and the prices per million, each line is count × price.
 * @throws RangeError for a negative or non-finite count.
 */
export function costPerMillionJobs(input: CostInput): CostBreakdown {
  const count = (name: keyof CostInput, fallback = 0): number => {
    const value = input[name] ?? fallback;
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number ≥ 0, got ${value}`);
    return value;
  };
  const gbSecondsPerJob =
    count('workerBusySecondsPerJob') * (count('memoryMb') / 1024) +
    count('orchestratorSecondsPerJob') * (count('orchestratorMemoryMb', ORCHESTRATOR_MEMORY_MB) / 1024);
  const lambdaRequests =
    (count('invocationsPerJob') + count('orchestratorInvocationsPerJob')) * PRICES.lambda.perMillionRequests;
  const lambdaCompute = gbSecondsPerJob * 1e6 * PRICES.lambda.perGbSecondArm64;
  const sqs =
    count('sqsRequestsPerJob') * PRICES.sqs.perMillionRequestsStandard +
    count('sqsFifoRequestsPerJob') * PRICES.sqs.perMillionRequestsFifo;
  const dynamodb =
    count('dynamodbReadsPerJob') * PRICES.dynamodb.perMillionReadRequestUnits +
    count('dynamodbWritesPerJob') * PRICES.dynamodb.perMillionWriteRequestUnits;
  return { lambdaRequests, lambdaCompute, sqs, dynamodb, total: lambdaRequests + lambdaCompute + sqs + dynamodb };
}

/** Options of {@link costInputForResult}. */
export interface ResultCostOptions {
  /** Worker memory in MB. @default {@link WORKER_MEMORY_MB} */
  readonly memoryMb?: number;
  readonly orchestratorSecondsPerJob?: number;
  readonly orchestratorMemoryMb?: number;
}

/** The cost input of a strategy's result: its worker counts, plus its DynamoDB units and SQS requests when it has them. */
export function costInputForResult(result: StrategyResult, options: ResultCostOptions = {}): CostInput {
  return {
    invocationsPerJob: result.invocationsPerJob,
    workerBusySecondsPerJob: result.workerBusySecondsPerJob,
    memoryMb: options.memoryMb ?? WORKER_MEMORY_MB,
    dynamodbReadsPerJob: result.dynamodbReadUnitsPerJob,
    dynamodbWritesPerJob: result.dynamodbWriteUnitsPerJob,
    sqsRequestsPerJob: result.sqsRequestsPerJob,
    orchestratorSecondsPerJob: options.orchestratorSecondsPerJob,
    orchestratorMemoryMb: options.orchestratorMemoryMb,
  };
}

/** USD for people: two decimals from $1 up, two significant digits below. */
export function formatUsd(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return '$0';
  return `$${value >= 1 ? value.toFixed(2) : value.toPrecision(2)}`;
}

/** The prices used, their dates and sources, for printing beside the cost lines. */
export function formatPrices(): string {
  const { lambda, sqs, dynamodb } = PRICES;
  return [
    `Prices (${PRICES.region} on-demand, ${PRICES.currency}; free tiers and volume discounts ignored):`,
    `  Lambda arm64  $${lambda.perGbSecondArm64} per GB-second, $${lambda.perMillionRequests.toFixed(2)} per 1M ` +
      `requests (as of ${lambda.date})`,
    `  SQS           $${sqs.perMillionRequestsStandard.toFixed(2)} per 1M requests standard, ` +
      `$${sqs.perMillionRequestsFifo.toFixed(2)} FIFO; each 64 KB chunk is one request (as of ${sqs.date})`,
    `  DynamoDB      $${dynamodb.perMillionWriteRequestUnits} per 1M write request units, ` +
      `$${dynamodb.perMillionReadRequestUnits} per 1M read request units (as of ${dynamodb.date});`,
    `                units as DynamoDB reports them (ReturnConsumedCapacity), by item size`,
    `  Sources: ${PRICES.source} (${PRICES.date})`,
  ].join('\n');
}

/** One row of {@link formatCostLines}: a cost, or why there is none. */
export interface CostLine {
  readonly name: string;
  readonly cost?: CostBreakdown;
  readonly unavailable?: string;
}

/**
 * A fixed-width table of cost per million jobs, one row per strategy, followed by the prices used. An SQS or DynamoDB
 * cost of zero shows as '-': no such requests were counted for that strategy.
 */
export function formatCostLines(lines: readonly CostLine[]): string {
  const columns: Column[] = [
    { header: 'cost per 1M jobs', align: 'left' },
    { header: 'Lambda requests', align: 'right' },
    { header: 'Lambda GB-s', align: 'right' },
    { header: 'SQS', align: 'right' },
    { header: 'DynamoDB', align: 'right' },
    { header: 'total', align: 'right' },
  ];
  const rows: Row[] = lines.map(({ name, cost, unavailable }) =>
    cost === undefined || unavailable !== undefined
      ? { first: name, spanning: `unavailable: ${unavailable ?? 'no figures'}` }
      : {
          cells: [
            name,
            formatUsd(cost.lambdaRequests),
            formatUsd(cost.lambdaCompute),
            cost.sqs === 0 ? '-' : formatUsd(cost.sqs),
            cost.dynamodb === 0 ? '-' : formatUsd(cost.dynamodb),
            formatUsd(cost.total),
          ],
        },
  );
  return `${formatFixedWidth(columns, rows)}\n${formatPrices()}`;
}
