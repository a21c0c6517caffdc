import type { Tier } from '../../lib/domain/quota/tiers';
import type { SimulationResult } from '../simulation/runSimulation';
import { LYING_HEADERS, type SwarmCase } from './drawCase';

/**
 * How long after the first answer that says the API allows something new (from the run's start, or from a change
 * on) a call may still be refused for it: the answer is recorded, folded at the next flush (1 s), and the calls
 * already dispatched ahead of their slots (the lead, up to 1.5 s, and a batch's span) still arrive; a slow table
 * adds to each step. The API may change long before any answer says so (while no run calls it).
 */
export const LEARN_MS = 4_000;

/** The statuses of the simulated API's answers that carry its rate-limit headers: an outage's 503 carries none. */
const ANNOUNCING: readonly number[] = [200, 400, 429];

/**
 * A line per breach of `tiers-at-arrival` in one seed's run: no call arrives at the API while one of its tiers is
 * full, as the API counts it.
 * - An API that allows what is configured refuses nothing.
 * - One that allows less (the `learned-limits` family) may refuse calls the service could not yet know to hold:
 *   within {@link LEARN_MS} of the first answer after a change of what it allows, or at any time when its headers lie (`lying-headers`: a lie of a
 *   higher limit is believed up to the configured one). Whatever they say, no window of a configured tier ever holds
 *   more arrivals than its limit, refused ones included: what the service sends never exceeds its configuration.
 */
export function tiersAtArrival({ scenario, families }: SwarmCase, run: SimulationResult): string[] {
  const refused = run.api.callLog.filter((call) => call.status === 429);
  const { allowed } = scenario.api;
  if (allowed === undefined) return refused.length === 0 ? [] : [`${refused.length} calls refused for a full tier`];
  const calls = run.api.callLog;
  // The first answer that says what the API allows from `at` on: to a call it accepted or refused for a tier.
  const announcedAt = (at: number) =>
    Math.min(
      ...calls.filter((call) => call.at >= at && ANNOUNCING.includes(call.status)).map((call) => call.endAt ?? call.at),
    );
  const changes = allowed.changes.map((change) => announcedAt(run.start + change.atSeconds * 1000));
  const unexplained = families.includes(LYING_HEADERS)
    ? []
    : refused.filter(
        (call) => !changes.some((said) => call.at < said + LEARN_MS && call.endAt !== undefined && call.endAt >= said),
      );
  return [
    ...(unexplained.length === 0
      ? []
      : [`${unexplained.length} calls refused more than ${LEARN_MS} ms after the API's limit changed`]),
    ...scenario.config.quotas.flatMap((tier) => overConfigured(tier, run.api.callLog)),
  ];
}

/** A line when some window of the sliding `tier` held more arrivals than its limit. */
function overConfigured(tier: Tier, calls: readonly { readonly at: number }[]): string[] {
  if (tier.kind !== 'sliding') return [];
  const times = calls.map((call) => call.at).sort((a, b) => a - b);
  let most = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while ((times[first] ?? 0) <= (times[last] ?? 0) - tier.windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most > tier.limit ? [`${most} calls arrived in one window of ${tier.limit}/${tier.per}`] : [];
}
