import type { JobResult } from '../../ports/ResultHandler';

/** The length of `text` in UTF-8 bytes, as SQS and EventBridge count it. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * JSON text that SQS takes as a message body as well as EventBridge as an event's detail: `JSON.stringify` escapes
 * control characters and lone surrogates, and the non-characters U+FFFE and U+FFFF, which SQS refuses, are escaped
 * here too.
 */
function json(value: unknown): string {
  return JSON.stringify(value).replace(/[\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/**
 * The JSON text of `result`, at most `maxBytes` UTF-8 bytes: when the whole does not fit, its body is cut to what
 * fits (on a whole character) and `bodyTruncated` set, rather than the result refused. Only a result whose other
 * fields alone exceed `maxBytes` comes out longer (headers are bounded by the HTTP client, so never in practice);
 * its destination then refuses it.
 */
export function boundedResultJson(result: JobResult, maxBytes: number): string {
  const whole = json(result);
  if (utf8Bytes(whole) <= maxBytes) return whole;
  const { body } = result;
  const envelope = json({ ...result, body: '', bodyTruncated: true });
  const room = maxBytes - utf8Bytes(envelope);
  // The longest prefix of the body whose JSON string fits `room` (its quotes are in the envelope already).
  const fits = (length: number): boolean => utf8Bytes(json(body.slice(0, length))) - 2 <= room;
  let low = 0;
  let high = body.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(mid)) low = mid;
    else high = mid - 1;
  }
  // Not between the halves of a surrogate pair.
  const code = body.charCodeAt(low - 1);
  const cut = low > 0 && code >= 0xd800 && code <= 0xdbff ? low - 1 : low;
  return json({ ...result, body: body.slice(0, cut), bodyTruncated: true });
}

/**
 * `items` in order, cut into requests of at most `maxEntries` whose sizes (`bytesOf`) sum to at most `maxBytes`;
 * an item larger than `maxBytes` goes alone.
 */
export function requestsOf<T>(
  items: readonly T[],
  bytesOf: (item: T) => number,
  maxEntries: number,
  maxBytes: number,
): T[][] {
  const requests: T[][] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    const last = requests.at(-1);
    if (last === undefined || last.length === maxEntries || bytes + size > maxBytes) {
      requests.push([item]);
      bytes = size;
    } else {
      last.push(item);
      bytes += size;
    }
  }
  return requests;
}
