/**
 * Asks the configuration parsers what they accept, by giving them what they refuse: an unknown key (whose refusal
 * lists the keys they know) or a value of the wrong type (whose refusal states the range they check).
 */
import { ConfigError } from '../../lib/errors';

/** The smallest valid tier, and so the smallest valid configuration. */
export const MINIMAL_TIER = { limit: 1, per: 'second' } as const;
/** The smallest valid configuration. */
export const MINIMAL_CONFIG = { quotas: [MINIMAL_TIER] };

/** A key no parser knows, whose refusal lists the keys it does know. */
export const UNKNOWN_KEY = '\u0000unknown';

/** A value no setting takes (no setting is a list), whose refusal states what the setting takes. */
export const WRONG_VALUE: readonly unknown[] = [];

/** The ConfigError `run` throws, or `undefined` if it throws none. */
export function refusal(run: () => unknown): ConfigError | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}

/**
 * The keys a parser accepts, read from its refusal of an unknown key.
 * @throws Error when the parser accepts the unknown key or does not list its keys.
 */
export function acceptedKeys(run: (unknownKey: string) => unknown, where: string): string[] {
  const problem = refusal(() => run(UNKNOWN_KEY))?.problem ?? '';
  const listed = /allowed keys are (.+)$/.exec(problem)?.[1];
  if (listed === undefined)
    throw new Error(`${where}: the parser did not list its keys when given an unknown one (got '${problem}')`);
  return listed.split(', ');
}

/**
 * What a setting takes, as the parser words it when refusing a wrong value: its message without the value it got,
 * with example addresses as code (GitHub would make links of them).
 */
export function allowedValues(run: () => unknown): string {
  return allowedIn(refusal(run));
}

/** What a refusal says is allowed (see {@link allowedValues}); `—` for no refusal. */
export function allowedIn(error: ConfigError | undefined): string {
  return error === undefined
    ? '—'
    : error.problem.replace(/; got [\s\S]*$/, '').replace(/https?:\/\/[^\s,;]+/g, (url) => `\`${url}\``);
}
