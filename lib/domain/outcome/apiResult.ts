/** What one call to the third-party API came to, as seen by the worker. */
export type ApiResult =
  | {
      readonly kind: 'response';
      readonly status: number;
      /** Response headers, names in lower case (`retry-after`, `x-ratelimit-remaining`, …). */
      readonly headers: Readonly<Record<string, string>>;
      /** Units the call really consumed on cost tiers, when the API says so (e.g. tokens used). */
      readonly actualCost?: number;
    }
  | { readonly kind: 'network-error'; readonly message: string }
  | { readonly kind: 'timeout'; readonly afterMs: number };
