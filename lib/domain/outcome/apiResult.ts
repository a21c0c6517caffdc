/** What one call to the third-party API came to, as seen by the worker. */
export type ApiResult =
  | {
      readonly kind: 'response';
      readonly status: number;
      /** Response headers, names in lower case (`retry-after`, `x-ratelimit-remaining`, …). */
      readonly headers: Readonly<Record<string, string>>;
      /**
       * The response body as text (e.g. an LLM's completion), as far as the caller kept it: a success's goes to the
       * result handler, a refusal's text into its dead letter's `error` attribute. The worker reads the units a call
       * used from the headers and the body (see `usageSources`).
       * @default '' (a caller that keeps no body)
       */
      readonly body?: string;
      /** Whether `body` is only the start of what the API sent (the caller bounds what it keeps). @default false */
      readonly bodyTruncated?: boolean;
    }
  | { readonly kind: 'network-error'; readonly message: string }
  | { readonly kind: 'timeout'; readonly afterMs: number };
