import type { JsonValue } from '../domain/json';
import type { ApiResult } from '../domain/outcome/apiResult';

export type { ApiResult };

/** The protected third-party API. Users replace the example HTTP caller with their own. */
export interface ApiCaller {
  /** Sends one job's body to the API. Never throws: failures come back as results. */
  call(body: JsonValue, context: { readonly idempotencyKey: string }): Promise<ApiResult>;
  /** Probes the API's health while the circuit is open. Never throws. */
  probe(): Promise<ApiResult>;
}
