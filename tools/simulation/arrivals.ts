import { ConfigError } from '../../lib/errors';
import { describeValue } from '../../lib/domain/describeValue';
import { parseSettings } from '../../lib/domain/settings';

/** One phase of a scenario's arrivals: main-queue jobs sent at `perSecond` for `forSeconds`. */
export interface ArrivalPhase {
  readonly perSecond: number;
  readonly forSeconds: number;
}

const PHASE_RANGES = {
  perSecond: { min: 0.01, max: 100_000 },
  forSeconds: { min: 0.001, max: 86_400 },
} as const;

/**
 * Validates `jobs.arrivals`: a list of phases, each `{perSecond, forSeconds}`; `undefined` when not given.
 * @throws ConfigError naming the phase's field and its range.
 */
export function parseArrivals(input: unknown, field = 'jobs.arrivals'): readonly ArrivalPhase[] | undefined {
  if (input === undefined) return undefined;
  if (!Array.isArray(input) || input.length === 0)
    throw new ConfigError(field, `must be a list of phases {perSecond, forSeconds}; got ${describeValue(input)}`);
  return input.map((phase, i) => {
    const parsed = parseSettings(phase, `${field}[${i}]`, { perSecond: 0, forSeconds: 0 }, PHASE_RANGES);
    for (const key of Object.keys(PHASE_RANGES) as (keyof ArrivalPhase)[])
      if (parsed[key] === 0) throw new ConfigError(`${field}[${i}].${key}`, 'is required');
    return parsed;
  });
}

/**
 * When each of `count` jobs is sent, in whole ms from the start (as a system clock reads): one after another at each
 * phase's rate, the first at 0; jobs beyond what the phases send go on at the last phase's rate.
 */
export function arrivalTimes(count: number, phases: readonly ArrivalPhase[]): number[] {
  const times: number[] = [];
  let phaseStart = 0;
  for (const [i, { perSecond, forSeconds }] of phases.entries()) {
    const last = i === phases.length - 1;
    const gapMs = 1000 / perSecond;
    for (let k = 0; times.length < count && (last || k * gapMs < forSeconds * 1000); k++)
      times.push(Math.round(phaseStart + k * gapMs));
    phaseStart += forSeconds * 1000;
  }
  return times;
}
