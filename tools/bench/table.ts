/** The benchmark's table for people: fixed-width text, one row per strategy. Pure. */
import type { StrategyResult } from './types';

/** How a column lines its cells up. */
export type Align = 'left' | 'right';

/** A column of {@link formatFixedWidth}. */
export interface Column {
  readonly header: string;
  readonly align: Align;
}

/** A row: one cell per column, or one free text shown from the second column on (e.g. why a strategy is missing). */
export type Row = { readonly cells: readonly string[] } | { readonly first: string; readonly spanning: string };

const GAP = '  ';

/** Columns padded to their widest cell, a dashed rule under the headers, no trailing spaces. */
export function formatFixedWidth(columns: readonly Column[], rows: readonly Row[]): string {
  const widths = columns.map((c) => c.header.length);
  const widen = (i: number, length: number): void => {
    widths[i] = Math.max(widths[i] ?? 0, length);
  };
  for (const row of rows) {
    if ('cells' in row) {
      if (row.cells.length !== columns.length) {
        throw new Error(`A row has ${row.cells.length} cells for ${columns.length} columns`);
      }
      row.cells.forEach((cell, i) => widen(i, cell.length));
    } else {
      widen(0, row.first.length);
    }
  }
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (columns[i]?.align === 'right' ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join(GAP)
      .trimEnd();
  const out = [line(columns.map((c) => c.header)), widths.map((w) => '-'.repeat(w)).join(GAP)];
  for (const row of rows) {
    out.push('cells' in row ? line(row.cells) : `${row.first.padEnd(widths[0] ?? 0)}${GAP}${row.spanning}`.trimEnd());
  }
  return out.join('\n');
}

/** Integer with thousands separators: 12,345. */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const sign = n < 0 ? '-' : '';
  return sign + String(Math.round(Math.abs(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function fixed(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);
}

/** Each unit's handed-back share, `output_tokens 0.412`, those of none left out; `0` when none handed any back, '-' without figures. */
function handedBackCell(share: Readonly<Record<string, number>> | undefined): string {
  if (share === undefined) return '-';
  const some = Object.entries(share).filter(([, n]) => n > 0);
  return some.length === 0 ? '0' : some.map(([unit, n]) => `${unit} ${n.toFixed(3)}`).join(', ');
}

/**
 * One scenario's results as a table: a heading line with the scenario's name, then one row per strategy in the given
 * order, with `costs[i]` (USD per million jobs) beside `results[i]`. A strategy that could not run shows its reason
 * instead of figures. The recovery column appears only when some strategy has a `recoverySeconds`; the DynamoDB and
 * SQS columns show '-' where a strategy has no such figure. An LLM scenario's figures follow, where some strategy
 * has them: `peak in flight`, one `use <tier>` column per tier of `tierUtilization`, and `handed back` (each unit's
 * share that was handed back, units that handed back none left out, `0` when none did).
 */
export function formatTable(
  scenarioName: string,
  results: readonly StrategyResult[],
  costs: readonly (number | undefined)[] = [],
): string {
  const ran = results.filter((r) => r.unavailable === undefined);
  const withRecovery = ran.some((r) => r.recoverySeconds !== undefined);
  const withPeak = ran.some((r) => r.peakCallsInFlight !== undefined);
  const tiers = [...new Set(ran.flatMap((r) => Object.keys(r.tierUtilization ?? {})))];
  const withHandedBack = ran.some((r) => r.handedBackShare !== undefined);
  const columns: Column[] = [
    { header: 'strategy', align: 'left' },
    { header: 'duration s', align: 'right' },
    { header: 'ideal s', align: 'right' },
    { header: 'optimal s', align: 'right' },
    { header: 'utilization', align: 'right' },
    { header: 'API calls', align: 'right' },
    { header: '429s', align: 'right' },
    { header: 'calls/job', align: 'right' },
    { header: 'invocations/job', align: 'right' },
    { header: 'busy s/job', align: 'right' },
    ...(withRecovery ? [{ header: 'recovery s', align: 'right' } as const] : []),
    { header: 'DynamoDB RU/job', align: 'right' },
    { header: 'DynamoDB WU/job', align: 'right' },
    { header: 'SQS req/job', align: 'right' },
    { header: '$ per 1M jobs', align: 'right' },
    ...(withPeak ? [{ header: 'peak in flight', align: 'right' } as const] : []),
    ...tiers.map((tier) => ({ header: `use ${tier}`, align: 'right' }) as const),
    ...(withHandedBack ? [{ header: 'handed back', align: 'left' } as const] : []),
  ];
  const rows: Row[] = results.map((r, i) => {
    if (r.unavailable !== undefined) return { first: r.name, spanning: `unavailable: ${r.unavailable}` };
    return {
      cells: [
        r.name,
        fixed(r.durationSeconds, 1),
        fixed(r.idealSeconds, 1),
        fixed(r.optimalSeconds, 1),
        fixed(r.utilization, 3),
        formatCount(r.apiCalls),
        formatCount(r.rejectedByApi),
        fixed(r.callsPerJob, 3),
        fixed(r.invocationsPerJob, 3),
        fixed(r.workerBusySecondsPerJob, 3),
        ...(withRecovery ? [fixed(r.recoverySeconds, 1)] : []),
        fixed(r.dynamodbReadUnitsPerJob, 2),
        fixed(r.dynamodbWriteUnitsPerJob, 2),
        fixed(r.sqsRequestsPerJob, 2),
        fixed(costs[i], 2),
        ...(withPeak ? [r.peakCallsInFlight === undefined ? '-' : formatCount(r.peakCallsInFlight)] : []),
        ...tiers.map((tier) => fixed(r.tierUtilization?.[tier], 3)),
        ...(withHandedBack ? [handedBackCell(r.handedBackShare)] : []),
      ],
    };
  });
  return `scenario: ${scenarioName}\n${formatFixedWidth(columns, rows)}`;
}
