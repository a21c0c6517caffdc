/**
 * The most calls in progress at once among `calls`: each from its arrival `at` until its `endAt` (still in progress
 * when it has none). A call that ends at the instant another arrives does not overlap it; a call answered the instant
 * it arrived (a 429 for `concurrency`) is in progress for that instant.
 */
export function peakCallsInFlight(calls: readonly { readonly at: number; readonly endAt?: number }[]): number {
  // At one instant: ends first, then arrivals, then the calls that end as they arrive.
  const [END, ARRIVAL, INSTANT] = [0, 1, 2];
  const edges = calls.flatMap((c) =>
    c.endAt !== undefined && c.endAt <= c.at
      ? [{ at: c.at, kind: INSTANT }]
      : [{ at: c.at, kind: ARRIVAL }, ...(c.endAt === undefined ? [] : [{ at: c.endAt, kind: END }])],
  );
  edges.sort((a, b) => a.at - b.at || a.kind - b.kind);
  let now = 0;
  let peak = 0;
  for (const { kind } of edges) {
    if (kind === INSTANT) peak = Math.max(peak, now + 1);
    else peak = Math.max(peak, (now += kind === ARRIVAL ? 1 : -1));
  }
  return peak;
}
