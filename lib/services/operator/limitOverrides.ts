import { limitChanges, overriddenTiers, overrideProblem } from '../../domain/limits/limitOverride';
import type { LimitOverrideJSON } from '../../domain/limits/limitOverrideJSON';
import { tierKeyOf, type Tier, type TierKey } from '../../domain/quota/tiers';
import { StateFormatError } from '../../errors';
import type { Clock } from '../../ports/Clock';
import type { ExpectedOverride, LimitStore } from '../../ports/LimitStore';
import { operatorName } from './operatorName';

/** What the limit-override services need. */
export interface LimitOverrideDeps {
  readonly limits: Pick<LimitStore, 'loadOverride' | 'replaceOverride'>;
  readonly clock: Clock;
}

/** Whose tiers an override is for: a lane's or a pool's. */
export interface OverrideTarget {
  readonly kind: 'lane' | 'pool';
  /** The lane's or pool's name. */
  readonly name: string;
  /** Its state's name: the lane's, or the pool's (`poolStateName`). */
  readonly state: string;
  /** Its tiers as configured. */
  readonly quotas: readonly Tier[];
}

/** One tier's limit under an override, for operators. */
export interface TierOverrideView {
  /** The tier: `<per>:<unit>`. */
  readonly tier: TierKey;
  readonly configured: number;
  /** The limit that stands in for the configured one. */
  readonly limit: number;
}

/** An override for operators: who set it, when (epoch ms), and each tier it changes, in configured order. */
export interface OverrideView {
  readonly by: string;
  readonly at: number;
  readonly tiers: readonly TierOverrideView[];
}

/** What `ops limits set` or `reset` did: plain JSON, times in epoch ms. */
export interface LimitsResult {
  readonly kind: OverrideTarget['kind'];
  readonly name: string;
  readonly action: 'set' | 'reset';
  /** When it was applied. */
  readonly at: number;
  /** False when the override already was so: nothing was written. */
  readonly changed: boolean;
  /** One line for people. */
  readonly message: string;
  /** The override after the call, or `null` when the configured limits stand. */
  readonly override: OverrideView | null;
}

/** How often a change is tried again when another operator's change came in between. */
const MAX_TRIES = 5;

/**
 * `override` for operators: the tiers of `quotas` whose limit it changes (see `overriddenTiers`: a raise a deploy has
 * since made too fast for the deployed settlement shards is dropped); `null` when it changes none.
 */
export function overrideView(quotas: readonly Tier[], override: LimitOverrideJSON | undefined): OverrideView | null {
  if (override === undefined) return null;
  const tiers = limitChanges(quotas, quotas, overriddenTiers(quotas, override)).map(({ tier, from, to }) => ({
    tier: tierKeyOf(tier.per, tier.unit),
    configured: from,
    limit: to,
  }));
  return tiers.length === 0 ? null : { by: override.by, at: override.at, tiers };
}

/**
 * Overrides the limits of `target`'s tiers named in `limits` (by `<per>:<unit>`), for `by` (an operator's name),
 * keeping what the override set for its other tiers; a limit equal to the configured one removes the tier from it.
 * The orchestrator paces at a lower limit from its next save (every `flushIntervalMs`), and at a higher one from its
 * next run: a run's ledger is built on the tiers it started with.
 * @throws RangeError when a tier is not configured, a limit is not a whole number from 1 to `MAX_QUANTITY`, the
 * raised limits pace more requests than the deployed settlement shards carry (see `overrideProblem`), or `by` is
 * blank or too long.
 * @throws StateUnavailableError when the store fails; Error when other changes keep coming in between.
 */
export async function setLimits(
  deps: LimitOverrideDeps,
  target: OverrideTarget,
  limits: Readonly<Partial<Record<TierKey, number>>>,
  by: string,
): Promise<LimitsResult> {
  const name = operatorName(by);
  const problem = overrideProblem(target.quotas, limits);
  if (problem !== undefined) throw new RangeError(`${describe(target)}: ${problem}`);
  return change(deps, target, 'set', name, (current) => {
    const tiers: Partial<Record<TierKey, number>> = {};
    for (const tier of target.quotas) {
      const key = tierKeyOf(tier.per, tier.unit);
      const limit = limits[key] ?? current[key];
      if (limit !== undefined && limit !== tier.limit) tiers[key] = limit;
    }
    const merged = overrideProblem(target.quotas, tiers);
    if (merged !== undefined) throw new RangeError(`${describe(target)}, with the override's other tiers: ${merged}`);
    return tiers;
  });
}

/**
 * Removes the override of `target`'s `tiers` (by `<per>:<unit>`; every tier when none is named), for `by`: their
 * configured limits stand again, a lower one from the orchestrator's next save, a higher one from its next run.
 * @throws RangeError when a tier named is not configured, or `by` is blank or too long.
 * @throws StateUnavailableError when the store fails; Error when other changes keep coming in between.
 */
export async function resetLimits(
  deps: LimitOverrideDeps,
  target: OverrideTarget,
  tiers: readonly TierKey[],
  by: string,
): Promise<LimitsResult> {
  const name = operatorName(by);
  const keys = target.quotas.map((tier) => tierKeyOf(tier.per, tier.unit));
  const unknown = tiers.find((tier) => !keys.includes(tier));
  if (unknown !== undefined)
    throw new RangeError(`${describe(target)}: no tier ${unknown} is configured; the tiers are ${keys.join(', ')}`);
  // What is left: the other configured tiers' limits (a tier no longer configured goes with the ones reset).
  return change(deps, target, 'reset', name, (current) =>
    Object.fromEntries(
      Object.entries(current).filter(
        ([key]) => tiers.length > 0 && keys.includes(key as TierKey) && !tiers.includes(key as TierKey),
      ),
    ),
  );
}

/** `lane 'default'`, `pool 'org'`. */
function describe(target: Pick<OverrideTarget, 'kind' | 'name'>): string {
  return `${target.kind} '${target.name}'`;
}

/**
 * Reads the stored override, makes the next one's tiers of its tiers with `next`, and writes it in place of the one
 * read (no override when none is left); when another change came in between, does it again on what that left.
 */
async function change(
  deps: LimitOverrideDeps,
  target: OverrideTarget,
  action: LimitsResult['action'],
  by: string,
  next: (current: Readonly<Partial<Record<TierKey, number>>>) => Partial<Record<TierKey, number>>,
): Promise<LimitsResult> {
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const { current, expected } = await readOverride(deps, target.state);
    const tiers = next(current?.tiers ?? {});
    // Later than the one it replaces, whatever the clocks say: the store tells overrides apart by when they were set.
    const at = Math.max(deps.clock.now(), (current?.at ?? 0) + 1);
    const written: LimitOverrideJSON | undefined =
      Object.keys(tiers).length === 0 ? undefined : { v: 1, tiers, by, at };
    if (expected !== 'any' && sameTiers(current?.tiers, written?.tiers))
      return result(target, action, { at, by, changed: false }, current);
    if (await deps.limits.replaceOverride(target.state, written, expected))
      return result(target, action, { at, by, changed: true }, written);
    // Refused: another change came in between, or this write landed on an earlier try whose answer was lost.
    const after = await readOverride(deps, target.state);
    if (after.current?.at === written?.at && sameTiers(after.current?.tiers, written?.tiers))
      return result(target, action, { at, by, changed: true }, written);
  }
  throw new Error(`${describe(target)}: the limits override kept changing under ${MAX_TRIES} tries; try again`);
}

/** The stored override and what a replacement expects of it: `any` when it is malformed (replacing it mends it). */
async function readOverride(
  deps: LimitOverrideDeps,
  state: string,
): Promise<{ readonly current: LimitOverrideJSON | undefined; readonly expected: ExpectedOverride }> {
  try {
    const current = await deps.limits.loadOverride(state);
    return { current, expected: current?.at ?? 'none' };
  } catch (error) {
    if (!(error instanceof StateFormatError)) throw error;
    return { current: undefined, expected: 'any' };
  }
}

/** Whether two overrides' tiers set the same limits (none: `undefined`). */
function sameTiers(
  a: Readonly<Partial<Record<TierKey, number>>> | undefined,
  b: Readonly<Partial<Record<TierKey, number>>> | undefined,
): boolean {
  const keys = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]) as Set<TierKey>;
  return [...keys].every((key) => a?.[key] === b?.[key]);
}

/** The result of `action` on `target` by an operator (`done`), the override being `override` after it. */
function result(
  target: OverrideTarget,
  action: LimitsResult['action'],
  done: { readonly at: number; readonly by: string; readonly changed: boolean },
  override: LimitOverrideJSON | undefined,
): LimitsResult {
  const { at, by, changed } = done;
  const view = overrideView(target.quotas, override);
  const limits =
    view === null
      ? 'the configured limits stand'
      : view.tiers.map(({ tier, configured, limit }) => `${tier} ${limit} (configured ${configured})`).join(', ');
  const timing = changed
    ? '; the orchestrator paces at a lower limit from its next save, at a higher one from its next run'
    : '';
  const message =
    view === null
      ? `${describe(target)}: ${changed ? `limits reset by ${by}` : 'no limit is overridden'}: ${limits}${timing}`
      : `${describe(target)}: limits ${changed ? 'overridden' : 'already overridden'} by ${view.by}: ${limits}${timing}`;
  return { kind: target.kind, name: target.name, action, at, changed, message, override: view };
}
