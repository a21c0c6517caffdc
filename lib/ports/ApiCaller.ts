import type { ApiResult } from '../domain/outcome/apiResult';

export type { ApiResult };

/** The API's two requests, ready to leave: a job's call and a health probe. */
export interface ReadyCaller {
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

/** Which request a caller is made ready for (see {@link ApiCaller.prepare}). @default 'call' */
export type RequestPurpose = 'call' | 'probe';

/**
 * What {@link ApiCaller.prepare} came to: a caller whose requests leave at once, or why none could be made ready (a
 * credential that could not be read). Not being ready is not the API's answer: the worker makes no request, spends
 * no attempt and reports nothing to the circuit.
 */
export type Preparation =
  { readonly kind: 'ready'; readonly caller: ReadyCaller } | { readonly kind: 'not-ready'; readonly reason: string };

/** The protected third-party API. Users replace the example HTTP caller with their own. */
export interface ApiCaller extends ReadyCaller {
  /**
   * Does the slow part of a request ahead of it: reads the credential (e.g. from SSM Parameter Store, decrypted with
   * KMS) and, where the caller can without sending a request, opens the connection. The worker prepares before it
   * checks that the request may still leave on time, and sends through the {@link ReadyCaller} it gets, with nothing
   * slow left between the check and the request. `purpose` says which request follows: a job's `call` or a health
   * check's `probe` (a caller whose probes carry no credential need not read one for it). Never throws.
   * @default none: the worker sends through the caller itself, and whatever it reads on the way counts as the call's
   * time
   */
  prepare?(purpose?: RequestPurpose): Promise<Preparation>;
}
