import type { ServiceConfig } from '../../config';
import type { LimitObservations } from '../../domain/limits/limitLearner';
import { limitChanges, type OverrideChange } from '../../domain/limits/limitOverride';
import type { LimitOverrideJSON } from '../../domain/limits/limitOverrideJSON';
import type { Pacer } from '../../domain/pacing/pacer';
import { tierLabel } from '../../domain/quota/tiers';
import { StateFormatError, StateUnavailableError } from '../../errors';
import type { RunContext } from './runContext';
import type { GuardedStores, RunQuota } from './types';

/** What the limits in force bear on: the run's ledger (its usage), the pacer they cap, the learner and the override. */
export type LimitedQuota = Pick<RunQuota, 'ledger' | 'limits' | 'override'> & {
  readonly pacer: Pick<Pacer, 'limitTo'>;
};

/**
 * The limits a run paces at, below the tiers it started with: the lower of what the operator's override last read
 * allows (see `OverrideInForce`) and, under `limits.learn: enforce`, what the lane learnt of the API (see
 * `LimitLearner`).
 */
export function limitsInForce(
  quota: Pick<RunQuota, 'limits' | 'override'>,
  config: ServiceConfig,
  now: number,
): number[] {
  const overridden = quota.override.limits();
  if (quota.limits === undefined || config.limits.learn !== 'enforce') return overridden;
  const learned = quota.limits.limits(now);
  return overridden.map((limit, i) => Math.min(limit, learned[i] ?? limit));
}

/**
 * Keeps the run's pace at the limits in force as a flush learns what the API's answers said, and as a save finds the
 * operator's override changed; reports each change.
 */
export class RunLimits {
  constructor(
    private readonly run: RunContext,
    private readonly stores: Pick<GuardedStores, 'limits'>,
    private readonly quota: LimitedQuota,
  ) {}

  /** Reports the override the run started with, if any: the tiers it changed, in force from the start. */
  reportStart(): void {
    const { override } = this.quota;
    const changes = limitChanges(override.configured, override.configured, override.tiers).map(
      (change): OverrideChange => ({ ...change, when: 'now' }),
    );
    if (changes.length > 0) this.reportOverride(this.run.clock.now(), override.override, changes);
  }

  /**
   * Takes the override a save found (`undefined`: none is set): a lower limit holds at once, a higher one from the
   * next run (see `OverrideInForce`).
   */
  overrideSeen(now: number, override: LimitOverrideJSON | undefined): void {
    const changes = this.quota.override.update(override);
    if (changes.length === 0) return;
    this.reportOverride(now, override, changes);
    this.quota.pacer.limitTo(limitsInForce(this.quota, this.run.config, now));
  }

  /**
   * Folds what the workers recorded of the API's limits into the lane's learned limits (see `LimitLearner`), with
   * each tier's usage at `now`, reports each change, and under `limits.learn: enforce` paces at the limits in force.
   * The readings are advice: a flush that cannot read them learns nothing this time, says so, and goes on.
   */
  async learn(now: number): Promise<void> {
    const learner = this.quota.limits;
    if (learner === undefined) return;
    let observations: LimitObservations;
    try {
      observations = await this.stores.limits.loadObservations(this.run.config.lane);
    } catch (error) {
      if (!(error instanceof StateUnavailableError || error instanceof StateFormatError)) throw error;
      this.run.report({ type: 'limits-unread', at: now, error: error.message });
      return;
    }
    const usage = this.quota.ledger.usage(now).map(({ used }) => used);
    for (const { tier, from, to, source } of learner.observe(now, observations, usage))
      this.run.report({
        type: 'limit-changed',
        at: now,
        tier: tierLabel(tier),
        from,
        to,
        source,
        configured: tier.limit,
      });
    if (this.run.config.limits.learn === 'enforce')
      this.quota.pacer.limitTo(limitsInForce(this.quota, this.run.config, now));
  }

  private reportOverride(
    now: number,
    override: LimitOverrideJSON | undefined,
    changes: readonly OverrideChange[],
  ): void {
    this.run.report({
      type: 'limits-overridden',
      at: now,
      ...(override === undefined ? {} : { by: override.by, setAt: override.at }),
      tiers: changes.map(({ tier, ...change }) => ({ tier: tierLabel(tier), configured: tier.limit, ...change })),
    });
  }
}
