import type { ApiResult } from './apiResult';

/**
 * What an {@link ApiResult} means for the job that produced it. Only the retryable kinds carry a
 * `retryAfterMs`, and only when the API said when to come back.
 */
export type Classification =
  | { readonly kind: 'success' }
  /** HTTP 429: the API's own quota was hit. Not an outage: it pauses the lane, it does not trip the breaker. */
  | { readonly kind: 'rate-limited'; readonly reason: string; readonly retryAfterMs?: number }
  /** HTTP 408, 425, 5xx, a network error or a timeout: worth retrying, and counted by the breaker. */
  | { readonly kind: 'transient'; readonly reason: string; readonly retryAfterMs?: number }
  /** HTTP 401 or 403: the API refuses the caller (key expired or revoked), not the job; every job would fare alike. */
  | { readonly kind: 'caller-rejected'; readonly reason: string }
  /**
   * Any other 4xx: retrying cannot help. Usually the job's own fault; when many different jobs get it in a row, the
   * caller's (a wrong URL answers 404 to everything), which the circuit judges across workers.
   */
  | { readonly kind: 'client-error'; readonly reason: string }
  /** The unexpected 1xx/3xx, and statuses out of range: retrying cannot help. */
  | { readonly kind: 'permanent'; readonly reason: string };

/** Longest wait accepted from a response header: one day. Longer values are clamped to it. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** Statuses that refuse the caller rather than the job: Unauthorized and Forbidden. */
const CALLER_4XX: ReadonlySet<number> = new Set([401, 403]);

/** Statuses other than 429 and 5xx that are worth retrying: Request Timeout and Too Early. */
const TRANSIENT_4XX: ReadonlySet<number> = new Set([408, 425]);

const REASON_PHRASES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  425: 'Too Early',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
  506: 'Variant Also Negotiates',
  507: 'Insufficient Storage',
  508: 'Loop Detected',
  510: 'Not Extended',
  511: 'Network Authentication Required',
};

/** Longest network error message kept in a reason; the rest is cut, since reasons end up in DLQ attributes and logs. */
const MAX_MESSAGE_CHARS = 200;

/**
 * Classifies the result of one API call.
 *
 * | result                          | kind           | reason (example)                 |
 * |---------------------------------|----------------|----------------------------------|
 * | 2xx                             | success        |                                  |
 * | 429                             | rate-limited   | `HTTP 429 Too Many Requests`     |
 * | 408, 425, 500..599              | transient      | `HTTP 503 Service Unavailable`   |
 * | network error                   | transient      | `network error: ECONNRESET`      |
 * | timeout                         | transient      | `timeout after 10000 ms`         |
 * | 401, 403                        | caller-rejected| `HTTP 401 Unauthorized`          |
 * | other 4xx                       | client-error   | `HTTP 400 Bad Request`           |
 * | 1xx, 3xx, anything out of range | permanent      | `unexpected status 302`          |
 *
 * Rate-limited and transient responses carry `retryAfterMs` when a header says when to retry
 * (see {@link parseRetryAfterMs}).
 * @param now Current time in epoch ms, used to read an HTTP-date or epoch `Retry-After`.
 */
export function classify(result: ApiResult, now: number): Classification {
  switch (result.kind) {
    case 'network-error': {
      const message = result.message.trim();
      if (message === '') return { kind: 'transient', reason: 'network error' };
      const short = message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS - 3)}...` : message;
      return { kind: 'transient', reason: `network error: ${short}` };
    }
    case 'timeout':
      return { kind: 'transient', reason: `timeout after ${result.afterMs} ms` };
    case 'response': {
      const { status } = result;
      const valid = Number.isInteger(status);
      if (valid && status >= 200 && status <= 299) return { kind: 'success' };
      if (!valid || status < 400 || status > 599) return { kind: 'permanent', reason: `unexpected status ${status}` };
      const phrase = REASON_PHRASES[status];
      const reason = phrase === undefined ? `HTTP ${status}` : `HTTP ${status} ${phrase}`;
      if (status === 429 || status >= 500 || TRANSIENT_4XX.has(status)) {
        const kind = status === 429 ? 'rate-limited' : 'transient';
        const retryAfterMs = parseRetryAfterMs(result.headers, now);
        return retryAfterMs === undefined ? { kind, reason } : { kind, reason, retryAfterMs };
      }
      return { kind: CALLER_4XX.has(status) ? 'caller-rejected' : 'client-error', reason };
    }
  }
}

/**
 * Reads how long the API asks us to wait, in whole ms (rounded up), from response headers whose names
 * are in lower case. The first header that holds a valid value wins, in this order:
 *
 * 1. `retry-after-ms`: milliseconds (OpenAI sends it, more precise than `retry-after`).
 * 2. `retry-after`: delta-seconds, possibly fractional (`1.5`), or an HTTP-date (RFC 9110: IMF-fixdate,
 *    RFC 850 or asctime), taken relative to `now`; a date in the past means 0.
 * 3. `x-ratelimit-reset`: a number of seconds; above 1e9 it is an epoch time (past means 0), else a delta.
 *
 * A value that is garbage, negative or not finite is ignored, and the next header is tried. The result is
 * clamped to {@link MAX_RETRY_AFTER_MS}.
 * @param now Current time in epoch ms.
 * @returns The wait in ms, or `undefined` when no header holds a valid value.
 */
export function parseRetryAfterMs(headers: Readonly<Record<string, string>>, now: number): number | undefined {
  const ms =
    fromRetryAfterMs(headers['retry-after-ms']) ??
    fromRetryAfter(headers['retry-after'], now) ??
    fromRateLimitReset(headers['x-ratelimit-reset'], now);
  return ms === undefined ? undefined : Math.min(ms, MAX_RETRY_AFTER_MS);
}

/** A plain non-negative decimal: no sign, no exponent, no hex, no empty string (all of which `Number()` accepts). */
const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)$/;

function parseDecimal(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (!DECIMAL.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

/** Seconds to whole ms, rounded up; the inner rounding drops float noise (1.1 * 1000 = 1100.0000000000002). */
function secondsToMs(seconds: number): number {
  return Math.ceil(Math.round(seconds * 1e6) / 1e3);
}

/** Whole ms until `epochMs`, 0 if it has passed. */
function untilMs(epochMs: number, now: number): number {
  return Math.max(0, Math.ceil(epochMs - now));
}

function fromRetryAfterMs(value: string | undefined): number | undefined {
  const ms = parseDecimal(value);
  return ms === undefined ? undefined : Math.ceil(ms);
}

function fromRetryAfter(value: string | undefined, now: number): number | undefined {
  const seconds = parseDecimal(value);
  if (seconds !== undefined) return secondsToMs(seconds);
  const date = value === undefined ? undefined : parseHttpDate(value.trim(), now);
  return date === undefined ? undefined : untilMs(date, now);
}

function fromRateLimitReset(value: string | undefined, now: number): number | undefined {
  const n = parseDecimal(value);
  if (n === undefined) return undefined;
  return n > 1e9 ? untilMs(n * 1000, now) : secondsToMs(n);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)';
const LONG_DAY = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const MONTH = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`, 'i');
/** `Sunday, 06-Nov-94 08:49:37 GMT` */
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
/** `Sun Nov  6 08:49:37 1994` */
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

/**
 * Parses the three HTTP-date forms of RFC 9110 §5.6.7 strictly (`Date.parse` accepts far too much,
 * e.g. `"1"` as the year 2001). Returns epoch ms, or `undefined` for anything else or an impossible date.
 */
function parseHttpDate(text: string, now: number): number | undefined {
  let parts: [day: string, month: string, year: string, h: string, m: string, s: string] | undefined;
  let twoDigitYear = false;
  let match = IMF_FIXDATE.exec(text);
  if (match) {
    parts = [match[1]!, match[2]!, match[3]!, match[4]!, match[5]!, match[6]!];
  } else if ((match = RFC_850.exec(text))) {
    parts = [match[1]!, match[2]!, match[3]!, match[4]!, match[5]!, match[6]!];
    twoDigitYear = true;
  } else if ((match = ASCTIME.exec(text))) {
    parts = [match[2]!, match[1]!, match[6]!, match[3]!, match[4]!, match[5]!];
  }
  if (parts === undefined) return undefined;
  const [day, monthName, yearText, h, m, s] = parts.map((p) => p.trim().toLowerCase()) as typeof parts;
  const month = MONTHS.indexOf(monthName);
  let year = Number(yearText);
  if (twoDigitYear) {
    // RFC 9110: a two-digit year more than 50 years in the future means the most recent past year with those digits.
    const thisYear = new Date(now).getUTCFullYear();
    year += Math.floor(thisYear / 100) * 100;
    if (year > thisYear + 50) year -= 100;
  }
  const fields = [year, month, Number(day), Number(h), Number(m), Number(s)] as const;
  const date = new Date(Date.UTC(...fields));
  const roundTrips =
    date.getUTCFullYear() === fields[0] &&
    date.getUTCMonth() === fields[1] &&
    date.getUTCDate() === fields[2] &&
    date.getUTCHours() === fields[3] &&
    date.getUTCMinutes() === fields[4] &&
    date.getUTCSeconds() === fields[5];
  return roundTrips ? date.getTime() : undefined;
}
