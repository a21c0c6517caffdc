import type { Template } from '../local/template';
import { allowedSeconds } from './measures';
import { compareStrategies } from './runBench';
import { adaptiveScenario, type BenchSize } from './scenarios';
import { formatFixedWidth } from './table';
import type { BenchScenario, StrategyResult } from './types';

/** Every strategy on the adaptive scenario (see `adaptiveScenario`). */
export async function compareAdaptive(
  size: BenchSize,
  template: Template,
  onStart: (name: string) => void,
): Promise<{ readonly scenario: BenchScenario; readonly results: StrategyResult[] }> {
  const scenario = adaptiveScenario(size);
  return { scenario, results: await compareStrategies(scenario, template, onStart) };
}

/**
 * The adaptive scenario as a table: per strategy its time, its calls and the share refused, and the share of what the
 * API really allowed that it used (see `allowedSeconds`).
 */
export function adaptiveTable(scenario: BenchScenario, results: readonly StrategyResult[]): string {
  const changes = (scenario.allowed?.changes ?? [])
    .map(({ atSeconds, limits }) => `${limits.join('/')} from ${atSeconds} s`)
    .join(', then ');
  const percent = (share: number) => `${(100 * share).toFixed(share < 0.1 ? 1 : 0)} %`;
  return [
    `${scenario.name} (${scenario.jobs} jobs, configured ${scenario.quotas.map((t) => t.limit).join('/')} a ${scenario.quotas[0]?.per ?? 'second'}; the API allows ${changes}, in ${scenario.allowed?.headers ?? 'no'} headers; ${allowedSeconds(scenario).toFixed(1)} s at what it allows)`,
    formatFixedWidth(
      [
        { header: 'strategy', align: 'left' },
        { header: 'seconds', align: 'right' },
        { header: 'calls', align: 'right' },
        { header: 'refused', align: 'right' },
        { header: 'refused share', align: 'right' },
        { header: 'used of what the API allowed', align: 'right' },
      ],
      results.map((r) =>
        r.unavailable !== undefined
          ? { first: r.name, spanning: `not run: ${r.unavailable}` }
          : {
              cells: [
                r.name,
                r.durationSeconds.toFixed(1),
                String(r.apiCalls),
                String(r.rejectedByApi),
                percent(r.apiCalls === 0 ? 0 : r.rejectedByApi / r.apiCalls),
                percent(r.allowedShare ?? 0),
              ],
            },
      ),
    ),
  ].join('\n');
}
