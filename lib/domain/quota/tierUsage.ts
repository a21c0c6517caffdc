import { calendarWindow } from './calendar';
import { QuotaLedger } from './ledger';
import { tierLabel, type Period, type Tier, type TierUnit } from './tiers';

/** One tier's usage at an instant, for operators: plain JSON. */
export interface TierUsageReadout {
  /** The tier as events and logs name it (see `tierLabel`): `5/second`, `1000000 cost/month`. */
  readonly tier: string;
  readonly per: Period;
  readonly unit: TierUnit;
  readonly limit: number;
  /** Units counted: in the sliding window that ends at the instant, or in the calendar window that holds it. */
  readonly used: number;
  /** `limit − used`, never below 0. */
  readonly remaining: number;
  /** Calendar tiers only: when the current window ends (epoch ms) and its whole quota comes back. */
  readonly resetsAt?: number;
}

/**
 * Each tier's usage at `now` as the stored ledger `ledger` counts it (`undefined`: never saved, nothing used), in the
 * order of `tiers`: a sliding tier's within the window `(now − W, now]`, a calendar tier's within the day or month of
 * `now` in `timeZone` (a ledger saved in an earlier window counts 0 there).
 *
 * It reads what the orchestrator last saved (every `flushIntervalMs` while a run goes), so it counts the allowance a
 * running orchestrator holds as used (see `Allowance`), and not the settlements workers reported since; a sliding
 * tier's history is kept per bucket of 1/250 of its window, so a call may count up to that much longer.
 * @throws StateFormatError when `ledger` is not a ledger of a known version, or saves a tier as another kind.
 */
export function tierUsageAt(
  tiers: readonly Tier[],
  ledger: unknown,
  now: number,
  timeZone: string,
): TierUsageReadout[] {
  const counted =
    ledger === undefined ? new QuotaLedger(tiers, { timeZone }) : QuotaLedger.fromJSON(tiers, ledger, { timeZone });
  return counted.usage(now).map(({ tier, used }) => ({
    tier: tierLabel(tier),
    per: tier.per,
    unit: tier.unit,
    limit: tier.limit,
    used,
    remaining: Math.max(0, tier.limit - used),
    ...(tier.kind === 'calendar' ? { resetsAt: calendarWindow(now, tier.per, timeZone).end } : {}),
  }));
}
