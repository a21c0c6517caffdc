import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../lib/ports/Clock';
import type { DeliveryPlan, InvokeTiming } from '../simulation/startDelays';
import { runInvocation } from './invocationScope';
import { localFunctionArn } from './template';

/** The part of the Lambda context a local handler gets. */
export interface LocalLambdaContext {
  /** The invocation's request id; async retries of one invocation keep it, as on Lambda. */
  readonly awsRequestId: string;
  readonly functionName: string;
  /** Milliseconds left before the function's timeout, on the host's clock; never negative. */
  getRemainingTimeInMillis(): number;
}

/** What a failed invocation reports: the body Lambda returns with `X-Amz-Function-Error: Unhandled`. */
export interface FunctionErrorPayload {
  readonly errorMessage: string;
  readonly errorType: string;
}

/** An on-failure destination record, in the shape Lambda sends to a function's `OnFailure` destination. */
export interface DestinationRecord {
  readonly version: '1.0';
  /** ISO-8601 instant at which the last attempt failed, on the host's clock. */
  readonly timestamp: string;
  readonly requestContext: {
    readonly requestId: string;
    /** `arn:aws:lambda:us-east-1:000000000000:function:NAME:$LATEST` (the local account). */
    readonly functionArn: string;
    readonly condition: 'RetriesExhausted';
    /** Attempts made: 1 + the function's `maximumRetryAttempts`. */
    readonly approximateInvokeCount: number;
  };
  /** The invocation's payload as the handler received it. */
  readonly requestPayload: unknown;
  readonly responseContext: { readonly statusCode: 200; readonly functionError: 'Unhandled' };
  readonly responsePayload: FunctionErrorPayload;
}

/** One function the host serves. */
export interface LocalFunction {
  /** Function name: invocations may address it by this name, by `name:qualifier` or by a (partial) ARN. */
  readonly name: string;
  /** Runs one invocation. A rejection (or a synchronous throw) is a function error. */
  readonly handler: (event: unknown, context: LocalLambdaContext) => Promise<unknown>;
  /** An attempt still running after this long on the host's clock fails as timed out; its late result is ignored. */
  readonly timeoutMs: number;
  /** Most attempts of this function running at once; invocations beyond it are throttled. @default no limit but the account's */
  readonly reservedConcurrency?: number;
  /** Retries of a failed `Event` invocation, as in the function's async invoke config (0 to 2 on Lambda). */
  readonly maximumRetryAttempts: number;
  /** The on-failure destination: gets the record of an `Event` invocation whose retries are exhausted. */
  readonly onFailure?: (record: DestinationRecord) => Promise<void>;
}

/** Options of {@link LocalLambdaHost}. */
export interface LocalLambdaHostOptions {
  /** Timeouts, retry delays, `getRemainingTimeInMillis` and record timestamps run on this clock. @default the wall clock */
  readonly clock?: Clock;
  /** Delay before the first retry of a failed `Event` invocation; each further retry waits twice as long as the one before. @default 1000 */
  readonly retryDelayMs?: number;
  /** Most attempts running at once across all functions (Lambda's regional account limit). @default 1000 */
  readonly accountConcurrency?: number;
  /** Interface to listen on. @default '127.0.0.1' */
  readonly host?: string;
  /**
   * Draws each accepted `Event` invocation's start delay (warm, cold, throttled inside Lambda, held) and whether
   * Lambda delivers it twice. @default every event starts at once, delivered once
   */
  readonly timing?: InvokeTiming;
  /** Told of each attempt killed at its function's timeout, with its payload (as the handler received it). */
  readonly onTimeout?: (functionName: string, payload: unknown) => void;
}

/** Counters of one function since the host started. */
export interface LocalFunctionStats {
  /** Attempts started, retries included (CloudWatch's `Invocations`). */
  readonly invocations: number;
  /** Invocations refused with 429 for want of concurrency. */
  readonly throttled: number;
  /** Attempts that threw or timed out. */
  readonly errors: number;
  /** Attempts running now (a timed-out attempt stops counting at its timeout, as Lambda would have stopped it). */
  readonly running: number;
  /** `Event` invocations dropped after their last retry: no `onFailure`, or `onFailure` rejected. */
  readonly discarded: number;
  /** Second deliveries of `Event` invocations started (at-least-once delivery, drawn by the host's `timing`). */
  readonly duplicateDeliveries: number;
  /** Attempts after a failed attempt of the same delivery (Lambda's async retries). */
  readonly retries: number;
  /**
   * How often each string result was returned, each string of a list result counted too (the worker returns outcomes
   * such as `'succeeded'`, a batch's as a list).
   */
  readonly results: ReadonlyMap<string, number>;
  /** Summed duration of the attempts that ended, each to its end or its timeout: what Lambda bills. */
  readonly billedMs: number;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;
const INVOCATION_TYPES = ['Event', 'RequestResponse', 'DryRun'] as const;
type InvocationType = (typeof INVOCATION_TYPES)[number];

/** The wall clock, with timers that do not keep the process alive (every attempt leaves its timeout timer behind). */
const wallClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)).unref()),
};

interface FunctionState {
  readonly fn: LocalFunction;
  invocations: number;
  throttled: number;
  errors: number;
  running: number;
  discarded: number;
  duplicateDeliveries: number;
  retries: number;
  billedMs: number;
  readonly results: Map<string, number>;
}

type AttemptOutcome =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: FunctionErrorPayload };

/** A retry waiting for a free concurrency slot. */
interface SlotWaiter {
  readonly state: FunctionState;
  readonly start: () => void;
}

/**
 * The name an Invoke path addresses: `name`, `name:qualifier`, `account:function:name[:qualifier]` or
 * `arn:aws:lambda:region:account:function:name[:qualifier]`. The qualifier is ignored: every function has one version.
 */
function functionNameOf(reference: string): string {
  const parts = reference.split(':');
  const i = parts.indexOf('function');
  return (i >= 0 ? parts[i + 1] : parts[0]) ?? '';
}

function errorPayload(error: unknown): FunctionErrorPayload {
  return error instanceof Error
    ? { errorMessage: error.message, errorType: error.name }
    : { errorMessage: String(error), errorType: 'Error' };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Answers with a Lambda service error the SDK turns into the exception class `type`. */
function sendError(response: ServerResponse, status: number, type: string, fields: Record<string, string>): void {
  response.writeHead(status, { 'x-amzn-ErrorType': type, 'Content-Type': 'application/json' });
  response.end(JSON.stringify({ Type: 'User', ...fields }));
}

/**
 * A local endpoint that speaks the Lambda Invoke API (`POST /2015-03-31/functions/{FunctionName}/invocations`), so
 * the real `LambdaClient` can invoke in-process handlers. Point a client at {@link listen}'s URL (`endpoint`, or
 * `AWS_ENDPOINT_URL_LAMBDA`). Every answer carries `x-amzn-RequestId`.
 *
 * - `X-Amz-Invocation-Type: Event`: 202 with an empty body at once; the handler runs afterwards. A failed attempt
 *   (thrown or timed out) is retried up to `maximumRetryAttempts` times, `retryDelayMs`, then twice that, … later
 *   (Lambda waits 1 then 2 minutes), then the record goes to `onFailure`.
 * - `RequestResponse` (the default): 200 with the JSON result and `X-Amz-Executed-Version: $LATEST`; a failed attempt
 *   answers 200 with `X-Amz-Function-Error: Unhandled` and `{errorMessage, errorType}`. No retries.
 * - `DryRun`: 204; nothing runs.
 * - Errors: an unknown function is 404 `ResourceNotFoundException`; a payload that is not JSON is 400
 *   `InvalidRequestContentException`; another invocation type is 400 `InvalidParameterValueException`; any other
 *   route is 404 `UnknownOperationException`.
 *
 * Concurrency: an invocation that finds its function at `reservedConcurrency` attempts, or the host at
 * `accountConcurrency`, is answered 429 `TooManyRequestsException` (`Reason`
 * `ReservedFunctionConcurrentInvocationLimitExceeded` or `ConcurrentInvocationLimitExceeded`) and counted as throttled.
 * This is stricter than Lambda, which queues `Event` invocations and retries their throttles internally until
 * `maximumEventAge`: here the caller sees every throttle. (The SDK's default retry strategy retries 429s itself.)
 * A retry of an accepted `Event` invocation is never refused: it waits for a free slot, first come first served.
 *
 * Timing: with a `timing`, each accepted `Event` invocation starts after a drawn delay and may be delivered twice
 * (while its first delivery runs, or after it ended), as Lambda's at-least-once async delivery does.
 *
 * Not modelled: payload size limits, `maximumEventAge`, versions and aliases, logs (`LogType: Tail`).
 */
export class LocalLambdaHost {
  private readonly functions = new Map<string, FunctionState>();
  private readonly clock: Clock;
  private readonly retryDelayMs: number;
  private readonly accountConcurrency: number;
  private readonly host: string;
  private readonly timing: InvokeTiming | undefined;
  private readonly onTimeout: LocalLambdaHostOptions['onTimeout'];
  private readonly server: Server;
  private readonly slotWaiters: SlotWaiter[] = [];
  /** Attempts holding a concurrency slot, across functions. */
  private accountRunning = 0;
  /** Invocations accepted and not finished: running, waiting for a retry, or being handed to `onFailure`. */
  private unfinished = 0;

  /**
   * @throws RangeError for two functions of one name, a negative or non-integer concurrency or retry count, or a
   *   negative `retryDelayMs` or `timeoutMs`.
   */
  constructor(functions: readonly LocalFunction[], options: LocalLambdaHostOptions = {}) {
    const { clock = wallClock, retryDelayMs = 1000, accountConcurrency = 1000, host = '127.0.0.1', timing } = options;
    this.onTimeout = options.onTimeout;
    if (!(retryDelayMs >= 0)) throw new RangeError(`retryDelayMs must be >= 0, got ${retryDelayMs}`);
    if (!Number.isInteger(accountConcurrency) || accountConcurrency < 1) {
      throw new RangeError(`accountConcurrency must be an integer >= 1, got ${accountConcurrency}`);
    }
    for (const fn of functions) {
      if (this.functions.has(fn.name)) throw new RangeError(`two functions are named '${fn.name}'`);
      if (!(fn.timeoutMs >= 0)) throw new RangeError(`${fn.name}: timeoutMs must be >= 0, got ${fn.timeoutMs}`);
      if (!Number.isInteger(fn.maximumRetryAttempts) || fn.maximumRetryAttempts < 0) {
        throw new RangeError(
          `${fn.name}: maximumRetryAttempts must be an integer >= 0, got ${fn.maximumRetryAttempts}`,
        );
      }
      if (
        fn.reservedConcurrency !== undefined &&
        (!Number.isInteger(fn.reservedConcurrency) || fn.reservedConcurrency < 0)
      ) {
        throw new RangeError(`${fn.name}: reservedConcurrency must be an integer >= 0, got ${fn.reservedConcurrency}`);
      }
      this.functions.set(fn.name, {
        fn,
        invocations: 0,
        throttled: 0,
        errors: 0,
        running: 0,
        discarded: 0,
        duplicateDeliveries: 0,
        retries: 0,
        billedMs: 0,
        results: new Map(),
      });
    }
    this.clock = clock;
    this.retryDelayMs = retryDelayMs;
    this.accountConcurrency = accountConcurrency;
    this.host = host;
    this.timing = timing;
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error: unknown) => {
        // Only reading the request can fail here (the client went away); handlers' errors are answers.
        if (response.headersSent) response.destroy();
        else sendError(response, 500, 'ServiceException', { Message: errorPayload(error).errorMessage });
      });
    });
  }

  /**
   * Starts listening on `port` (0 picks a free one).
   * @returns the endpoint URL, e.g. `http://127.0.0.1:41234`.
   */
  listen(port = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, this.host, () => {
        this.server.off('error', reject);
        resolve(`http://${this.host}:${(this.server.address() as AddressInfo).port}`);
      });
    });
  }

  /**
   * Counters of one function.
   * @throws RangeError if the host serves no function of that name.
   */
  stats(name: string): LocalFunctionStats {
    const state = this.functions.get(name);
    if (state === undefined) throw new RangeError(`no function named '${name}'`);
    const { invocations, throttled, errors, running, discarded, duplicateDeliveries, retries, billedMs } = state;
    return {
      invocations,
      throttled,
      errors,
      running,
      discarded,
      duplicateDeliveries,
      retries,
      billedMs,
      results: new Map(state.results),
    };
  }

  /** True when no attempt is running and no accepted invocation waits for a retry or for its `onFailure`. */
  idle(): boolean {
    return this.unfinished === 0;
  }

  /**
   * Stops accepting requests and drops open connections (a pending `RequestResponse` call fails on the client).
   * Waits for no handler: accepted invocations, their retries and `onFailure` carry on in the background.
   */
  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.close((error) => (error === undefined ? resolve() : reject(error)));
      this.server.closeAllConnections();
    });
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    response.setHeader('x-amzn-RequestId', requestId);
    const url = new URL(request.url ?? '/', 'http://localhost');
    const match = INVOKE_PATH.exec(url.pathname);
    if (request.method !== 'POST' || match === null) {
      request.resume();
      sendError(response, 404, 'UnknownOperationException', {
        message: `${request.method} ${url.pathname} is not an operation of this host`,
      });
      return;
    }
    let reference: string;
    try {
      reference = decodeURIComponent(match[1] ?? '');
    } catch {
      reference = match[1] ?? '';
    }
    const state = this.functions.get(functionNameOf(reference));
    const body = await readBody(request);
    if (state === undefined) {
      sendError(response, 404, 'ResourceNotFoundException', { Message: `Function not found: ${reference}` });
      return;
    }
    const typeHeader = request.headers['x-amz-invocation-type'] ?? 'RequestResponse';
    const type = INVOCATION_TYPES.find((t) => t === typeHeader);
    if (type === undefined) {
      sendError(response, 400, 'InvalidParameterValueException', {
        message: `X-Amz-Invocation-Type must be one of ${INVOCATION_TYPES.join(', ')}; got ${String(typeHeader)}`,
      });
      return;
    }
    let payload: unknown;
    try {
      payload = body.trim() === '' ? {} : JSON.parse(body);
    } catch (error) {
      sendError(response, 400, 'InvalidRequestContentException', {
        message: `Could not parse request body into json: ${errorPayload(error).errorMessage}`,
      });
      return;
    }
    this.invoke(state, type, requestId, payload, response);
  }

  private invoke(
    state: FunctionState,
    type: InvocationType,
    requestId: string,
    payload: unknown,
    response: ServerResponse,
  ): void {
    if (type === 'DryRun') {
      response.writeHead(204).end();
      return;
    }
    const refusal = this.takeSlot(state);
    if (refusal !== undefined) {
      state.throttled++;
      sendError(response, 429, 'TooManyRequestsException', { Reason: refusal, message: 'Rate Exceeded.' });
      return;
    }
    this.unfinished++;
    if (type === 'Event') {
      response.writeHead(202).end();
      const plan = this.timing?.plan(this.clock.now()) ?? { startDelayMs: 0 };
      void this.runEvent(state, requestId, payload, plan).finally(() => this.unfinished--);
      return;
    }
    void this.attempt(state, requestId, payload)
      .then((outcome) => {
        const headers: Record<string, string> = {
          'Content-Type': 'application/json',
          'X-Amz-Executed-Version': '$LATEST',
        };
        if (!outcome.ok) headers['X-Amz-Function-Error'] = 'Unhandled';
        response
          .writeHead(200, headers)
          .end(outcome.ok ? (JSON.stringify(outcome.value) ?? 'null') : JSON.stringify(outcome.error));
      })
      .finally(() => this.unfinished--);
  }

  /** Takes a concurrency slot for one attempt, or says why there is none. */
  private takeSlot(state: FunctionState): string | undefined {
    if (state.running >= (state.fn.reservedConcurrency ?? Number.POSITIVE_INFINITY))
      return 'ReservedFunctionConcurrentInvocationLimitExceeded';
    if (this.accountRunning >= this.accountConcurrency) return 'ConcurrentInvocationLimitExceeded';
    state.running++;
    this.accountRunning++;
    return undefined;
  }

  /** Frees an attempt's slot and starts the waiting retries that now fit, in arrival order. */
  private releaseSlot(state: FunctionState): void {
    state.running--;
    this.accountRunning--;
    for (let i = 0; i < this.slotWaiters.length;) {
      const waiter = this.slotWaiters[i] as SlotWaiter;
      if (this.takeSlot(waiter.state) === undefined) {
        this.slotWaiters.splice(i, 1);
        waiter.start();
      } else {
        i++;
      }
    }
  }

  /** Resolves once `state` holds a slot, taken now or handed over by {@link releaseSlot}. */
  private waitForSlot(state: FunctionState): Promise<void> {
    if (this.takeSlot(state) === undefined) return Promise.resolve();
    return new Promise((start) => this.slotWaiters.push({ state, start }));
  }

  /**
   * Runs an accepted `Event` invocation, whose first slot is already taken (and held through its start delay, as a
   * cold start holds it), after its start delay; and its second delivery, if the plan has one.
   */
  private async runEvent(
    state: FunctionState,
    requestId: string,
    payload: unknown,
    plan: Pick<DeliveryPlan, 'startDelayMs' | 'duplicate'>,
  ): Promise<void> {
    const duplicate = plan.duplicate;
    if (duplicate?.when === 'while-running') {
      this.unfinished++;
      void this.redeliver(state, requestId, payload, plan.startDelayMs + duplicate.afterStartMs).finally(
        () => this.unfinished--,
      );
    }
    if (plan.startDelayMs > 0) await this.clock.sleep(plan.startDelayMs);
    await this.runAttempts(state, requestId, payload);
    if (duplicate?.when === 'after-end') await this.redeliver(state, requestId, payload, duplicate.afterEndMs);
  }

  /** Lambda delivers an event again `afterMs` from now, with the same request id: a new slot, its own retries. */
  private async redeliver(state: FunctionState, requestId: string, payload: unknown, afterMs: number): Promise<void> {
    await this.clock.sleep(afterMs);
    state.duplicateDeliveries++;
    await this.waitForSlot(state);
    await this.runAttempts(state, requestId, payload);
  }

  /** Runs one delivery, whose first slot is taken, through its retries to `onFailure`. */
  private async runAttempts(state: FunctionState, requestId: string, payload: unknown): Promise<void> {
    const { fn } = state;
    for (let retry = 0; ; retry++) {
      const outcome = await this.attempt(state, requestId, payload);
      if (outcome.ok) return;
      if (retry === fn.maximumRetryAttempts) {
        const record: DestinationRecord = {
          version: '1.0',
          timestamp: new Date(this.clock.now()).toISOString(),
          requestContext: {
            requestId,
            functionArn: `${localFunctionArn(fn.name)}:$LATEST`,
            condition: 'RetriesExhausted',
            approximateInvokeCount: retry + 1,
          },
          requestPayload: payload,
          responseContext: { statusCode: 200, functionError: 'Unhandled' },
          responsePayload: outcome.error,
        };
        if (fn.onFailure === undefined) state.discarded++;
        else await fn.onFailure(record).catch(() => state.discarded++);
        return;
      }
      await this.clock.sleep(this.retryDelayMs * 2 ** retry);
      await this.waitForSlot(state);
      state.retries++;
    }
  }

  /** Runs one attempt on a slot already taken, releasing it when the handler settles or times out. */
  private async attempt(state: FunctionState, requestId: string, payload: unknown): Promise<AttemptOutcome> {
    const { fn } = state;
    state.invocations++;
    const startedAt = this.clock.now();
    const deadline = startedAt + fn.timeoutMs;
    const context: LocalLambdaContext = {
      awsRequestId: requestId,
      functionName: fn.name,
      getRemainingTimeInMillis: () => Math.max(0, deadline - this.clock.now()),
    };
    const invocation = runInvocation(() => fn.handler(payload, context));
    const run = invocation.result.then(
      (value): AttemptOutcome => ({ ok: true, value }),
      (error: unknown): AttemptOutcome => ({ ok: false, error: errorPayload(error) }),
    );
    const timedOut = await Promise.race([run.then(() => false), this.clock.sleep(fn.timeoutMs).then(() => true)]);
    if (timedOut) {
      // Lambda stops the function here: none of its requests goes out after this (see runInvocation).
      invocation.kill();
      this.onTimeout?.(fn.name, payload);
    }
    const outcome: AttemptOutcome = timedOut
      ? {
          ok: false,
          error: {
            errorMessage: `${requestId} Task timed out after ${(fn.timeoutMs / 1000).toFixed(2)} seconds`,
            errorType: 'Sandbox.Timedout',
          },
        }
      : await run;
    state.billedMs += Math.min(this.clock.now() - startedAt, fn.timeoutMs);
    this.releaseSlot(state);
    if (!outcome.ok) state.errors++;
    else
      for (const result of [outcome.value].flat())
        if (typeof result === 'string') state.results.set(result, (state.results.get(result) ?? 0) + 1);
    return outcome;
  }
}
