import type { ApiResult } from '../../domain/outcome/apiResult';
import type { ApiCaller, Preparation, RequestPurpose } from '../../ports/ApiCaller';
import { utf8Prefix } from '../../domain/utf8Prefix';
import type { ApiMethod } from '../../requestSettings';

/** Options of {@link HttpApiCaller}. */
export interface HttpApiCallerOptions {
  /** Each job's body is sent here (see `method`), as sent to the queue, with `content-type: application/json`. */
  readonly apiUrl: string;
  /** The method of a job's call. @default 'POST' */
  readonly method?: ApiMethod;
  /**
   * Sent with every call and probe, under lower-case names; a `content-type` here replaces `application/json`.
   * @default none
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Probed with a GET while the circuit is open; any 2xx means healthy. */
  readonly healthUrl: string;
  /** Whole-exchange budget of one call or probe, headers and body included. */
  readonly timeoutMs: number;
  /** @default the global `fetch` */
  readonly fetch?: typeof fetch;
  /**
   * The API key, or `undefined` for none (then no request carries `keyHeader`). Asked before every call, so a rotated
   * key is used as soon as it gives it: caching it is its business (see `keyFromParameter`), and so is where the key
   * lives (SSM Parameter Store), never in a plain environment variable.
   */
  readonly apiKey?: () => Promise<string | undefined>;
  /**
   * The header that carries the key (lower case), and what goes before it and a space (`Bearer`), if anything.
   * @default authorization, Bearer
   */
  readonly keyHeader?: { readonly name: string; readonly scheme?: string };
  /** Whether probes carry the key too. @default true */
  readonly probeSendsKey?: boolean;
  /**
   * How long a read of `apiKey` may take, in ms: one that takes longer fails (see {@link HttpApiCaller.prepare}),
   * and the next asks again. @default none: as long as the read takes
   */
  readonly keyReadTimeoutMs?: number;
}

/** What a read of the API key came to: the header carrying it, if there is a key. */
type KeyRead =
  | { readonly read: true; readonly keyHeader: Readonly<Record<string, string>> }
  | { readonly read: false; readonly reason: string };

/**
 * The most of a response body {@link HttpApiCaller} keeps, in UTF-8 bytes (256 KiB): the rest is read, so that the
 * connection can be reused, but dropped, and the result says `bodyTruncated`.
 */
export const MAX_RESPONSE_BODY_BYTES = 262_144;

/**
 * Reads `response`'s body to its end, keeping its first `max` bytes. A body that fails or runs out of time midway
 * keeps what arrived and counts as cut.
 */
async function readBody(
  response: Response,
  max: number,
): Promise<{ readonly body: string; readonly truncated: boolean }> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let truncated = false;
  try {
    if (response.body !== null) {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        if (keptBytes >= max) {
          truncated ||= chunk.length > 0;
          continue;
        }
        const piece = Buffer.from(chunk);
        kept.push(piece);
        keptBytes += piece.length;
      }
    }
  } catch {
    // The status and headers are in: a body cut short by the timeout or the network does not change the answer.
    truncated = true;
  }
  const whole = Buffer.concat(kept);
  const prefix = utf8Prefix(whole, max);
  return { body: prefix.toString('utf8'), truncated: truncated || prefix.length < whole.length };
}

/** Error-shaped, whatever realm it comes from (Node's fetch throws its own realm's errors, which fail `instanceof Error` in a VM context). */
function isErrorLike(value: unknown): value is { readonly message: string; readonly cause?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

/** The most specific message of a fetch failure: undici throws `TypeError('fetch failed')` with the socket error as `cause`. */
function messageOf(error: unknown): string {
  if (!isErrorLike(error)) return String(error);
  let message = error.message;
  // Bounded, in case a cause chain loops back on itself.
  for (let cause = error.cause, depth = 0; isErrorLike(cause) && depth < 8; cause = cause.cause, depth++) {
    if (cause.message !== '') message = cause.message;
  }
  return message;
}

/** A job call's headers besides the key's: the static `headers` over `content-type`, and its idempotency key. */
function callHeaders(
  headers: Readonly<Record<string, string>>,
  { idempotencyKey }: { readonly idempotencyKey: string },
): Record<string, string> {
  return { 'content-type': 'application/json', ...headers, 'idempotency-key': idempotencyKey };
}

/**
 * The example worker's API caller: sends each job's JSON body to `apiUrl` (a POST unless `method` says otherwise),
 * byte for byte as it was sent to the queue, and probes `healthUrl` with a GET, over `fetch`. Every request carries
 * the static `headers`, and the key in `keyHeader` (a probe only with `probeSendsKey`). It never throws; every
 * outcome is an {@link ApiResult}:
 *
 * - `response`: any HTTP status, with every header under its lower-case name (so `classify` reads `retry-after`,
 *   `retry-after-ms` and `x-ratelimit-reset`, and the worker the usage headers), and the body (below);
 * - `timeout`: no response headers within `timeoutMs`;
 * - `network-error`: anything else that kept a response from arriving (refused connection, DNS, reset, bad URL).
 *
 * The worker gets it ready first (see {@link HttpApiCaller.prepare}): the key is read before the worker checks that
 * the call may still leave on time, and the call itself only sends. It opens no connection ahead of a call: `fetch`
 * can open one only by sending a request, and any request may count against the API's quota.
 *
 * The response body is always read to the end within the same `timeoutMs` budget, so the connection can be reused,
 * and its first {@link MAX_RESPONSE_BODY_BYTES} are kept as UTF-8 text (`body`, cut on a whole character, with
 * `bodyTruncated` when anything was left out). A body that fails or runs out of time after the headers arrived does
 * not change the result, since the API has already answered: it keeps what arrived, marked truncated.
 */
export class HttpApiCaller implements ApiCaller {
  private readonly apiUrl: string;
  private readonly healthUrl: string;
  private readonly method: ApiMethod;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;
  private readonly apiKey: () => Promise<string | undefined>;
  private readonly keyHeader: { readonly name: string; readonly scheme?: string };
  private readonly probeSendsKey: boolean;
  private readonly keyReadTimeoutMs: number | undefined;

  /** @throws RangeError if `timeoutMs` or `keyReadTimeoutMs` is not a positive finite number. */
  constructor({
    apiUrl,
    healthUrl,
    method = 'POST',
    headers = {},
    timeoutMs,
    fetch: fetchImpl = globalThis.fetch,
    apiKey = () => Promise.resolve(undefined),
    keyHeader = { name: 'authorization', scheme: 'Bearer' },
    probeSendsKey = true,
    keyReadTimeoutMs,
  }: HttpApiCallerOptions) {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      throw new RangeError(`timeoutMs must be a positive number, got ${timeoutMs}`);
    if (keyReadTimeoutMs !== undefined && !(Number.isFinite(keyReadTimeoutMs) && keyReadTimeoutMs > 0))
      throw new RangeError(`keyReadTimeoutMs must be a positive number, got ${keyReadTimeoutMs}`);
    this.apiUrl = apiUrl;
    this.healthUrl = healthUrl;
    this.method = method;
    this.headers = headers;
    this.timeoutMs = timeoutMs;
    this.fetch = fetchImpl;
    this.apiKey = apiKey;
    this.keyHeader = keyHeader;
    this.probeSendsKey = probeSendsKey;
    this.keyReadTimeoutMs = keyReadTimeoutMs;
  }

  /**
   * Reads the API key (within `keyReadTimeoutMs`) and returns a caller whose call and probe send with it, reading
   * nothing more. A read that fails or runs out of time leaves the caller `not-ready`, with the reason: the key could
   * not be read, which says nothing of the API. For a probe that carries no key (`probeSendsKey` false), nothing is
   * read: its caller probes at once, and its call reads the key as {@link HttpApiCaller.call} does. Never throws.
   */
  async prepare(purpose: RequestPurpose = 'call'): Promise<Preparation> {
    if (purpose === 'probe' && !this.probeSendsKey)
      return {
        kind: 'ready',
        caller: { call: (body, context) => this.call(body, context), probe: () => this.sendProbe({}) },
      };
    const read = await this.readKey();
    if (!read.read) return { kind: 'not-ready', reason: read.reason };
    const { keyHeader } = read;
    return {
      kind: 'ready',
      caller: {
        call: (body, context) => this.sendCall(body, context, keyHeader),
        probe: () => this.sendProbe(keyHeader),
      },
    };
  }

  /**
   * Sends the JSON text `body` unchanged, as UTF-8, with the static headers, `content-type: application/json` (unless
   * they set another) and `idempotency-key`, reading the key first: one that cannot be read comes back as a
   * `network-error`. The worker prepares instead (see {@link HttpApiCaller.prepare}). Never throws.
   */
  async call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult> {
    const read = await this.readKey();
    if (!read.read) return { kind: 'network-error', message: read.reason };
    return this.sendCall(body, context, read.keyHeader);
  }

  /** GETs `healthUrl`, reading the key first (unless probes carry none), as {@link HttpApiCaller.call} does. Never throws. */
  async probe(): Promise<ApiResult> {
    if (!this.probeSendsKey) return this.sendProbe({});
    const read = await this.readKey();
    if (!read.read) return { kind: 'network-error', message: read.reason };
    return this.sendProbe(read.keyHeader);
  }

  private sendCall(
    body: string,
    context: { readonly idempotencyKey: string },
    keyHeader: Readonly<Record<string, string>>,
  ): Promise<ApiResult> {
    const headers = { ...callHeaders(this.headers, context), ...keyHeader };
    return this.send(this.apiUrl, { method: this.method, headers, body });
  }

  private sendProbe(keyHeader: Readonly<Record<string, string>>): Promise<ApiResult> {
    const headers = { ...this.headers, ...(this.probeSendsKey ? keyHeader : {}) };
    return this.send(this.healthUrl, { method: 'GET', headers });
  }

  /** Reads the API key, giving up after `keyReadTimeoutMs`, as the header that carries it. Never throws. */
  private async readKey(): Promise<KeyRead> {
    const limitMs = this.keyReadTimeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outOfTime = new Promise<never>((_, reject) => {
      if (limitMs !== undefined) timer = setTimeout(() => reject(new Error(`not read within ${limitMs} ms`)), limitMs);
    });
    try {
      const key = await Promise.race([this.apiKey(), outOfTime]);
      if (key === undefined) return { read: true, keyHeader: {} };
      const { name, scheme } = this.keyHeader;
      return { read: true, keyHeader: { [name]: scheme === undefined ? key : `${scheme} ${key}` } };
    } catch (error) {
      return { read: false, reason: `no API key: ${messageOf(error)}` };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends one request within `timeoutMs`. Never throws. */
  private async send(url: string, init: RequestInit): Promise<ApiResult> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    let response: Response;
    try {
      response = await this.fetch(url, { ...init, signal });
    } catch (error) {
      if (signal.aborted) return { kind: 'timeout', afterMs: this.timeoutMs };
      return { kind: 'network-error', message: messageOf(error) };
    }
    const answered: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      answered[name.toLowerCase()] = value;
    });
    const { body, truncated } = await readBody(response, MAX_RESPONSE_BODY_BYTES);
    return { kind: 'response', status: response.status, headers: answered, body, bodyTruncated: truncated };
  }
}
