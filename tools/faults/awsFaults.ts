import type { FunctionClients } from '../local/clients';
import { addMiddleware, type LooseHandler } from '../local/sdkMiddleware';

/** An AWS service the functions call. */
export type AwsService = 'dynamodb' | 'sqs' | 'lambda';

/**
 * What an AWS request meets during a fault window. Answers are made as the service makes them (status, error type
 * header and JSON body), so the SDK parses them into its own exceptions and applies its own retries:
 * - `unavailable`: 503 `ServiceUnavailable`;
 * - `throttled`: 400 `ProvisionedThroughputExceededException` and `ThrottlingException` (DynamoDB), 400
 *   `RequestThrottled` (SQS), 429 `TooManyRequestsException` (Lambda), in turn;
 * - `server-error`: 500 `InternalServerError` / `InternalError` / `ServiceException`;
 * - `timeout`: no answer: after the client's request timeout the request fails with the `TimeoutError` that the
 *   SDK's HTTP handler raises for a hung socket (see `test/integration/clientTimeouts.test.ts` for the real one);
 * - `error-after-success`: the request reaches the emulator and takes effect, then the answer is a 500: the caller
 *   cannot tell that it worked (a delete that fails after the work succeeded, an invoke that did start).
 */
export type AwsFaultKind = 'unavailable' | 'throttled' | 'server-error' | 'timeout' | 'error-after-success';

/** A stretch of time during which some requests of one service fail. */
export interface AwsFaultWindow {
  readonly service: AwsService;
  /** Operations hit, as the API names them (`GetItem`, `ReceiveMessage`, `Invoke`, …). @default every one */
  readonly operations?: readonly string[];
  /** Which function's requests are hit. @default both */
  readonly role?: 'orchestrator' | 'worker';
  readonly kind: AwsFaultKind;
  /** Milliseconds after the scenario starts. */
  readonly fromMs: number;
  readonly toMs: number;
  /** Share of matching requests hit, in (0, 1]: each request draws from the scenario's seeded randomness. @default 1 */
  readonly share?: number;
}

/** The HTTP answer of an injected fault, before the SDK parses it. */
interface FaultAnswer {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const JSON_1_0 = 'application/x-amz-json-1.0';

/** The error answer of `service` for `kind`, the way the service itself writes it. `turn` alternates throttle types. */
function errorAnswer(service: AwsService, kind: Exclude<AwsFaultKind, 'timeout'>, turn: number): FaultAnswer {
  const json = (
    statusCode: number,
    type: string,
    message: string,
    extra: Record<string, string> = {},
  ): FaultAnswer => ({
    statusCode,
    headers: { 'content-type': JSON_1_0, 'x-amzn-requestid': `fault-${turn}`, ...extra },
    body: JSON.stringify({ __type: type, message }),
  });
  if (service === 'lambda') {
    const [statusCode, type, message] =
      kind === 'throttled'
        ? [429, 'TooManyRequestsException', 'Rate Exceeded.']
        : kind === 'unavailable'
          ? [503, 'ServiceException', 'Service unavailable']
          : [500, 'ServiceException', 'Internal error'];
    return {
      statusCode,
      headers: { 'content-type': 'application/json', 'x-amzn-errortype': type, 'x-amzn-requestid': `fault-${turn}` },
      body: JSON.stringify({ Type: 'Service', message }),
    };
  }
  if (service === 'dynamodb') {
    if (kind === 'throttled') {
      return turn % 2 === 0
        ? json(
            400,
            'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
            'The level of configured provisioned throughput for the table was exceeded.',
          )
        : json(
            400,
            'com.amazon.coral.availability#ThrottlingException',
            'Rate of requests exceeds the allowed throughput.',
          );
    }
    return kind === 'unavailable'
      ? json(503, 'com.amazon.coral.availability#ServiceUnavailableException', 'Service unavailable')
      : json(500, 'com.amazonaws.dynamodb.v20120810#InternalServerError', 'Internal server error');
  }
  if (kind === 'throttled')
    return json(400, 'com.amazonaws.sqs#RequestThrottled', 'Request is throttled.', {
      'x-amzn-query-error': 'RequestThrottled;Sender',
    });
  return kind === 'unavailable'
    ? json(503, 'com.amazonaws.sqs#ServiceUnavailable', 'Service unavailable', {
        'x-amzn-query-error': 'ServiceUnavailable;Server',
      })
    : json(500, 'com.amazonaws.sqs#InternalError', 'Internal error', {
        'x-amzn-query-error': 'InternalError;Receiver',
      });
}

/** The operation a request is for: DynamoDB and SQS name it in `x-amz-target`, Lambda in the path. */
function operationOf(request: unknown): string {
  const { headers = {}, path = '' } = (request ?? {}) as { headers?: Record<string, string>; path?: string };
  const target = headers['x-amz-target'] ?? headers['X-Amz-Target'];
  if (target !== undefined) return target.slice(target.indexOf('.') + 1);
  return /\/functions\/[^/]+\/invocations$/.test(path) ? 'Invoke' : path;
}

/** Counts of what a {@link AwsFaultInjector} did, by `service.Operation:kind`. */
export type InjectedCounts = Readonly<Record<string, number>>;

/**
 * Injects {@link AwsFaultWindow}s into SDK clients: a middleware in each client's `deserialize` step, at low
 * priority, so it sits under the SDK's retries and above the HTTP handler, and sees each attempt.
 */
export class AwsFaultInjector {
  private readonly counts = new Map<string, number>();
  private turn = 0;

  /**
   * @param startedAt the instant the scenario's windows count from
   * @param random seeded randomness in [0, 1), for {@link AwsFaultWindow.share}
   * @param timeoutMsOf the request timeout each service's clients use, for `timeout` faults
   */
  constructor(
    private readonly windows: readonly AwsFaultWindow[],
    private readonly startedAt: () => number,
    private readonly random: () => number,
    private readonly timeoutMsOf: (service: AwsService) => number,
  ) {}

  /** Adds the faults to one function's clients. */
  attach(clients: FunctionClients, role: 'orchestrator' | 'worker'): void {
    for (const service of ['dynamodb', 'sqs', 'lambda'] as const) {
      addMiddleware(clients[service], (next) => (args) => this.handle(service, role, next, args), {
        step: 'deserialize',
        name: 'faultInjector',
        priority: 'low',
      });
    }
  }

  /** Faults injected so far, by `service.Operation:kind`. */
  injected(): InjectedCounts {
    return Object.fromEntries(this.counts);
  }

  private async handle(
    service: AwsService,
    role: 'orchestrator' | 'worker',
    next: LooseHandler,
    args: Parameters<LooseHandler>[0],
  ): ReturnType<LooseHandler> {
    const operation = operationOf(args.request);
    const at = Date.now() - this.startedAt();
    // Overlapping windows each draw in turn; the first that hits decides.
    const window = this.windows.find(
      (w) =>
        w.service === service &&
        (w.role === undefined || w.role === role) &&
        (w.operations === undefined || w.operations.includes(operation)) &&
        at >= w.fromMs &&
        at < w.toMs &&
        this.random() < (w.share ?? 1),
    );
    if (window === undefined) return next(args);
    const key = `${service}.${operation}:${window.kind}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.turn++;
    if (window.kind === 'timeout') {
      const timeoutMs = this.timeoutMsOf(service);
      await new Promise((resolve) => setTimeout(resolve, timeoutMs));
      throw Object.assign(
        new Error(
          `@smithy/node-http-handler - [ERROR] a request has exceeded the configured ${timeoutMs} ms requestTimeout.`,
        ),
        { name: 'TimeoutError', code: 'ETIMEDOUT' },
      );
    }
    if (window.kind === 'error-after-success') await next(args);
    const answer = errorAnswer(service, window.kind, this.turn);
    return { response: { statusCode: answer.statusCode, headers: answer.headers, body: Buffer.from(answer.body) } };
  }
}
