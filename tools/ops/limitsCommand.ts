import { Argument, InvalidArgumentError, type Command } from 'commander';
import { PERIODS, REQUESTS, tierKeyOf, type Period, type TierKey } from '../../lib/domain/quota/tiers';
import { poolStateName } from '../../lib/domain/quota/poolSettlements';
import {
  resetLimits,
  setLimits,
  type LimitsResult,
  type OverrideTarget,
} from '../../lib/services/operator/limitOverrides';
import type { CommandContext } from './commandContext';
import { OpsError } from './errors';
import { adaptersOf } from './laneOps';
import type { OpsTarget } from './target';

/** What the limits commands take besides the command context: how `--by` is read, and its default. */
export interface LimitsCommandContext extends CommandContext {
  /** Parses `--by` (see `runOps`). */
  readonly operatorName: (text: string) => string;
  /** The operator's name when `--by` is not given. */
  readonly defaultOperator: () => string;
}

/** A tier as operators name it: `minute` (its requests), or `<per>:<unit>` (`minute:input_tokens`). */
export function tierKeyOfText(text: string): TierKey {
  const [per, unit = REQUESTS, ...rest] = text.split(':');
  if (!(PERIODS as readonly string[]).includes(per ?? '') || unit === '' || rest.length > 0)
    throw new InvalidArgumentError(
      `'${text}' names no tier: say <per> or <per>:<unit>, <per> one of ${PERIODS.join(', ')} (minute, minute:input_tokens)`,
    );
  return tierKeyOf(per as Period, unit);
}

/** `<tier>=<limit>`, for `limits set`: the tier's key and the limit, a whole number of at least 1. */
function tierLimitOfText(text: string): readonly [TierKey, number] {
  const at = text.lastIndexOf('=');
  if (at < 0) throw new InvalidArgumentError(`'${text}' is no <tier>=<limit> (minute=500, day:tokens=2000000)`);
  const limit = Number(text.slice(at + 1));
  if (!Number.isInteger(limit) || limit < 1)
    throw new InvalidArgumentError(`the limit in '${text}' must be a whole number of at least 1`);
  return [tierKeyOfText(text.slice(0, at)), limit];
}

/** The lane of `target`, or with `pool` one of the pools it draws from, as an override's target. */
function overrideTarget(target: OpsTarget, pool: string | undefined): OverrideTarget {
  const { lane, config } = target;
  if (pool === undefined) return { kind: 'lane', name: lane, state: lane, quotas: config.quotas };
  const found = config.pools?.find((p) => p.name === pool);
  if (found === undefined) {
    const pools = (config.pools ?? []).map((p) => `'${p.name}'`);
    throw new OpsError(
      `lane '${lane}' draws from no pool '${pool}'${pools.length === 0 ? '' : ` (it draws from ${pools.join(', ')})`}`,
    );
  }
  return { kind: 'pool', name: pool, state: poolStateName(pool), quotas: found.quotas };
}

/** Adds `limits set` and `limits reset` to `program`. */
export function addLimitsCommands(program: Command, context: LimitsCommandContext): void {
  const { onTargets, clock, operatorName, defaultOperator } = context;
  const limits = program
    .command('limits')
    .description(
      "override a lane's or a pool's tier limits without a deploy (kept with its state, shown by status), or reset them to the configured ones",
    );

  /** Runs `apply` on the one lane's (or `--pool`'s) override, printing its result. */
  const run = (
    command: Command,
    options: { pool?: string; by?: string; json?: boolean },
    apply: (deps: Parameters<typeof setLimits>[0], target: OverrideTarget, by: string) => Promise<LimitsResult>,
  ) =>
    onTargets(
      command,
      async (target, out) => {
        const deps = { limits: adaptersOf(target).stores.limits, clock };
        let result: LimitsResult;
        try {
          result = await apply(deps, overrideTarget(target, options.pool), options.by ?? defaultOperator());
        } catch (error) {
          if (error instanceof RangeError) throw new OpsError(error.message, { cause: error });
          throw error;
        }
        if (options.json === true) out.json(result);
        else out.print(result.message);
      },
      { oneLane: `limits ${command.name()}` },
    );

  limits
    .command('set')
    .description(
      "override tier limits, lower or higher: a lower one holds from the orchestrator's next save (seconds), a higher one from its next run (within a minute); the override's other tiers stay",
    )
    .addArgument(
      new Argument(
        '<tier=limit...>',
        'e.g. minute=500 (requests a minute), minute:input_tokens=80000, day=20000',
      ).argParser((text: string, previous: (readonly [TierKey, number])[] = []) => [
        ...previous,
        tierLimitOfText(text),
      ]),
    )
    .option('--pool <name>', "a pool the lane draws from, instead of the lane's own tiers")
    .option('--by <name>', 'who does it, kept with the override (default: user@host)', operatorName)
    .option('--json', 'print one JSON document')
    .action(
      async (
        entries: (readonly [TierKey, number])[],
        options: { pool?: string; by?: string; json?: boolean },
        command: Command,
      ) => run(command, options, (deps, target, by) => setLimits(deps, target, Object.fromEntries(entries), by)),
    );

  limits
    .command('reset')
    .description("end the override: the configured limits stand again (a lower one from the orchestrator's next save)")
    .addArgument(
      new Argument(
        '[tier...]',
        'the tiers whose override ends, e.g. minute or day:tokens (default: every tier)',
      ).argParser((text: string, previous: TierKey[] = []) => [...previous, tierKeyOfText(text)]),
    )
    .option('--pool <name>', "a pool the lane draws from, instead of the lane's own tiers")
    .option('--by <name>', 'who does it (default: user@host)', operatorName)
    .option('--json', 'print one JSON document')
    .action(
      async (keys: TierKey[] | undefined, options: { pool?: string; by?: string; json?: boolean }, command: Command) =>
        run(command, options, (deps, target, by) => resetLimits(deps, target, keys ?? [], by)),
    );
}
