import type { ServiceConfig } from '../../config';
import { CallSlots } from '../../domain/inflight/callSlots';
import { LimitLearner } from '../../domain/limits/limitLearner';
import { OverrideInForce } from '../../domain/limits/limitOverride';
import { Pacer } from '../../domain/pacing/pacer';
import { QuotaLedger } from '../../domain/quota/ledger';
import type { LedgerJSON } from '../../domain/quota/ledgerJSON';
import { limitsInForce } from './limitsInForce';
import type { RunQuota } from './types';

/** The most of a worker's timeout by which a batch's slots may lie past the instant it is dispatched. */
export const BATCH_REACH_OF_WORKER_TIMEOUT = 0.5;

/**
 * The furthest past its dispatch a run slots a call: the head of the buffer goes no earlier than the lead before its
 * slot, and the lead never grows past `pacing.maxDispatchLeadMs`; the jobs that join its batch lie within
 * {@link BATCH_REACH_OF_WORKER_TIMEOUT} of a worker's timeout of the dispatch.
 */
export function slotReachMs(config: ServiceConfig): number {
  return Math.max(config.pacing.maxDispatchLeadMs, BATCH_REACH_OF_WORKER_TIMEOUT * config.orchestrator.workerTimeoutMs);
}

/**
 * The run's quota rehydrated at `now` from the `saved` ledger, or a fresh one when the lane has none yet.
 *
 * The saved ledger may have been written under another configuration (a deploy in between), whose calls a tier or a
 * cap added since never counted. Every such call was dispatched before this run took the lease, so slotted no later
 * than `now` plus {@link slotReachMs}; what the saved state cannot know is counted as full until then and until it
 * can no longer matter:
 * - a tier the saved ledger lacks (tiers are matched by period and unit) is full until one of its windows after that
 *   instant (to the end of its calendar window for a day or month tier), see `LedgerOptions.uncountedUntil`;
 * - with `maxInFlight` on a saved ledger without call slots (the cap was off), every slot is taken until a call slotted
 *   then can no longer be in progress: the arrival margin plus the worker's timeout later (see `CallSlots.filledThrough`).
 *
 * The first save holds the full tier and the taken slots (as any counts), so a run killed after it leaves them to its
 * successor as they are; one killed before it dispatched nothing the saved ledger must hold, and its successor counts
 * full from its own, later, start.
 *
 * The operator's override of the tiers' limits comes with the saved ledger (see `LedgerStore.loadLedger`): the run's
 * ledger, pacing and allowance are built on the tiers as it sets them (see `OverrideInForce`; {@link runConfig} gives
 * the run's settings with them), as after a deploy that changed the limits. What the lane learnt of the API's limits
 * comes back with the ledger too (see `LimitLearner`), unless it learns nothing; under `limits.learn: enforce` the run
 * paces at those limits from its start.
 *
 * A lane with no saved ledger starts empty: no run has saved one, and a run dispatches only within an allowance a save
 * holds, or, while the store fails, within sliding windows that close before its lease can expire (see
 * `LedgerSync.mayDispatch`), which has expired by the time this run holds it. So no call of the lane can still count.
 */
export function rehydrate(config: ServiceConfig, saved: LedgerJSON | undefined, now: number): RunQuota {
  const uncountedUntil = now + slotReachMs(config);
  const ledgerOptions = { timeZone: config.timeZone, arrivalMarginMs: config.pacing.arrivalMarginMs, uncountedUntil };
  const override = new OverrideInForce(config.quotas, saved?.override);
  const { tiers } = override;
  const ledger =
    saved === undefined ? new QuotaLedger(tiers, ledgerOptions) : QuotaLedger.fromJSON(tiers, saved, ledgerOptions);
  const slots = callSlotsOf(config, saved, uncountedUntil);
  const pacer = new Pacer(ledger, config.pacing, slots);
  if (config.limits.learn === 'off') return { ledger, slots, pacer, override };
  const limits = new LimitLearner(tiers, config.limits, saved?.learned);
  const quota = { ledger, slots, pacer, limits, override };
  if (config.limits.learn === 'enforce') pacer.limitTo(limitsInForce(quota, config, now));
  return quota;
}

/**
 * The settings a run of `quota` goes by: `config`'s, with the tiers the run started with (the configured ones as the
 * operator's override sets them, see {@link rehydrate}) in place of the configured ones.
 */
export function runConfig(config: ServiceConfig, quota: Pick<RunQuota, 'override'>): ServiceConfig {
  return quota.override.tiers === config.quotas ? config : { ...config, quotas: quota.override.tiers };
}

/**
 * The lane's call slots, on a lane with `maxInFlight`: those `saved` holds; all taken through `uncountedUntil` when it
 * holds none (the cap was off when it was saved); none taken on a lane with no saved ledger.
 */
function callSlotsOf(
  config: ServiceConfig,
  saved: LedgerJSON | undefined,
  uncountedUntil: number,
): CallSlots | undefined {
  const cap = config.maxInFlight;
  if (cap === undefined) return undefined;
  const holdMs = config.pacing.arrivalMarginMs + config.orchestrator.workerTimeoutMs;
  return saved !== undefined && saved.slots === undefined
    ? CallSlots.filledThrough(cap, holdMs, uncountedUntil)
    : new CallSlots(cap, holdMs, saved?.slots);
}
