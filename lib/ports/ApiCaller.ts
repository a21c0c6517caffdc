import type { ApiResult } from '../domain/outcome/apiResult';

export type { ApiResult };

/** The protected third-party API. Users replace the example HTTP caller with their own. */
export interface ApiCaller {
  /**
   * Sends one job's body to the API. Never throws: failures come back as results.
   * @param body - the message body exactly as sent to the queue: JSON text, checked to parse and to nest no deeper
   * than `MAX_BODY_DEPTH`. Send it as it is. Parsing it and serialising the value again changes what JSON.parse
   * cannot hold: integers beyond 2^53 (`1790000000000000123` becomes `1790000000000000000`), numbers beyond a double
   * (`1e400` becomes `null`), duplicate keys (only the last is kept), whitespace and escapes. Parse it only to read
   * it.
   * @returns the outcome; a `response` should carry the API's body (bounded, see `ApiResult`), which goes to the result
   * destination on success and into the dead letter's `apiError` on a refusal.
   */
  call(body: string, context: { readonly idempotencyKey: string }): Promise<ApiResult>;
  /** Probes the API's health while the circuit is open. Never throws. */
  probe(): Promise<ApiResult>;
}
