import type { LaneControlResult } from '../../lib/services/operator/laneControl';
import { QUEUE_NAMES } from '../../lib/ports/QueueReceiver';
import type { DeadLetter } from './deadLetters';
import type { OpsStatus } from './laneOps';
import type { DeleteResult, PurgeResult } from './deadLetterRemoval';
import type { RedriveResult } from './redrive';

/** An instant as ISO 8601 UTC to the second: `2026-11-26T09:40:00Z`. */
export function isoSecond(at: number): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** How long ago `at` was at `now`, roughly: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago` (`in …` for the future). */
export function ago(at: number, now: number): string {
  const seconds = Math.round((now - at) / 1000);
  const size = Math.abs(seconds);
  const text =
    size < 120
      ? `${size} s`
      : size < 7_200
        ? `${Math.round(size / 60)} min`
        : size < 172_800
          ? `${Math.round(size / 3_600)} h`
          : `${Math.round(size / 86_400)} d`;
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}

/** Rows as columns padded to their widest cell; a column whose cells below the first row are all numbers is aligned right. */
export function table(rows: readonly (readonly string[])[], indent = '  '): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const numeric = /^[\d.,%/ -]+$/;
  const right = widths.map(
    (_, i) => i > 0 && rows.length > 1 && rows.slice(1).every((row) => numeric.test(row[i] ?? '')),
  );
  return rows
    .map(
      (row) =>
        indent +
        row
          .map((cell, i) => (right[i] === true ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
          .join('  ')
          .trimEnd(),
    )
    .join('\n');
}

/** A share as a percentage with one decimal below 10 %: `0 %`, `7.5 %`, `42 %`. */
function percent(used: number, limit: number): string {
  if (limit <= 0) return '-';
  const share = (100 * used) / limit;
  return `${share < 10 && share > 0 ? share.toFixed(1) : Math.round(share)} %`;
}

/** `ops status` for people: pause, circuit and its recent transitions, tiers and their overrides, queues, lease. */
export function formatStatus(status: OpsStatus): string {
  const { at, circuit, paused, lease } = status;
  const lines = [`Lane '${status.lane}' on ${status.target}, at ${isoSecond(at)}`, ''];
  lines.push(
    `Paused:   ${paused === null ? 'no' : `yes, by ${paused.by} since ${isoSecond(paused.since)} (${ago(paused.since, at)})`}`,
  );
  const circuitParts: string[] = [circuit.status];
  if (circuit.byOperator === true)
    circuitParts.push('forced open by an operator: no health check until an operator closes it');
  if (circuit.openedAt !== undefined)
    circuitParts.push(`since ${isoSecond(circuit.openedAt)} (${ago(circuit.openedAt, at)})`);
  if (circuit.reason !== undefined) circuitParts.push(`reason: ${circuit.reason}`);
  if (circuit.nextCheckAt !== undefined && circuit.byOperator !== true)
    circuitParts.push(`next health check ${isoSecond(circuit.nextCheckAt)}`);
  if (circuit.rateLimitedUntil !== undefined)
    circuitParts.push(`a 429 holds dispatch until ${isoSecond(circuit.rateLimitedUntil)}`);
  lines.push(`Circuit:  ${circuitParts.join('; ')}`);
  if (circuit.recentTransitions.length > 0) {
    lines.push('  recent transitions (oldest first):');
    lines.push(
      table(
        circuit.recentTransitions.map((t) => [isoSecond(t.at), `${t.from} → ${t.to}`, t.reason]),
        '    ',
      ),
    );
  }
  lines.push('', 'Quota tiers:', tiersTable(status.tiers));
  lines.push(...overrideLines(status.override, at));
  if (status.limits !== undefined) lines.push(...learnedLines(status.limits, at));
  for (const pool of status.pools) {
    const pause =
      pool.rateLimitedUntil === undefined ? '' : `; a 429 holds it until ${isoSecond(pool.rateLimitedUntil)}`;
    lines.push(
      '',
      `Pool '${pool.pool}' (shared with the other lanes that draw from it)${pause}:`,
      tiersTable(pool.tiers),
      ...overrideLines(pool.override, at),
    );
  }
  lines.push('', 'Queues:');
  lines.push(
    table([
      ['queue', 'visible', 'in flight', 'delayed'],
      ...QUEUE_NAMES.map((q) => [
        q,
        String(status.queues[q].visible),
        String(status.queues[q].inFlight),
        String(status.queues[q].delayed),
      ]),
    ]),
  );
  lines.push('');
  if (lease === null) lines.push('Lease:    free (no orchestrator run holds it)');
  else
    lines.push(
      `Lease:    ${lease.expired ? 'expired, last held' : 'held'} by ${lease.owner} until ${isoSecond(lease.expiresAt)} (fencing token ${lease.fencingToken})`,
    );
  return lines.join('\n');
}

/** The limits the lane learnt from the API, for people: each tier whose learned limit differs, or that none does. */
function learnedLines(limits: NonNullable<OpsStatus['limits']>, at: number): string[] {
  if (limits.learn === 'off') return ['', 'Learned limits: off (the lane reads no limit header)'];
  const mode = limits.learn === 'shadow' ? 'shadow: reported, not enforced' : 'enforced';
  if (limits.learned.length === 0) return ['', `Learned limits (${mode}): as configured`];
  return [
    '',
    `Learned limits (${mode}):`,
    table([
      ['tier', 'configured', 'learned', 'source', 'since'],
      ...limits.learned.map((l) => [
        l.tier,
        String(l.configured),
        String(l.limit),
        l.source,
        `${isoSecond(l.since)} (${ago(l.since, at)})`,
      ]),
    ]),
  ];
}

/** An operator's override of the limits (`ops limits set`), none when the configured ones stand. */
function overrideLines(override: OpsStatus['override'], at: number): string[] {
  if (override === null) return [];
  return [
    `  limits overridden by ${override.by} at ${isoSecond(override.at)} (${ago(override.at, at)}); \`ops limits reset\` ends it:`,
    table(
      [
        ['tier', 'configured', 'overridden'],
        ...override.tiers.map((t) => [t.tier, String(t.configured), String(t.limit)]),
      ],
      '    ',
    ),
  ];
}

/** Tiers' usage against their limits, a row each. */
function tiersTable(tiers: OpsStatus['tiers']): string {
  return table([
    ['tier', 'used', 'limit', 'use', 'remaining', ''],
    ...tiers.map((t) => [
      t.tier,
      String(t.used),
      String(t.limit),
      percent(t.used, t.limit),
      String(t.remaining),
      t.resetsAt === undefined ? '' : `resets ${isoSecond(t.resetsAt)}`,
    ]),
  ]);
}

/** The outcome of `pause`, `resume` or `circuit open|close` for people. */
export function formatControl(result: LaneControlResult): string {
  const state = `circuit ${result.circuit.status}${result.paused === null ? '' : `, paused by ${result.paused.by} since ${isoSecond(result.paused.since)}`}`;
  return `${result.message}\n(${state})`;
}

/** One line of text for a dead letter's reason: control characters and line breaks shown escaped, cut at `width`. */
function oneLine(text: string, width: number): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
  const flat = text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return flat.length <= width ? flat : `${flat.slice(0, width - 1)}…`;
}

/** `dlq list` for people: a row per dead letter. */
export function formatDeadLetters(letters: readonly DeadLetter[], now: number): string {
  if (letters.length === 0) return 'No dead letters.';
  const rows = letters.map((l) => [
    l.messageId,
    `${l.dlq} ← ${l.source}`,
    l.attempt === undefined ? '-' : String(l.attempt),
    `${isoSecond(l.deadLetteredAt)} (${ago(l.deadLetteredAt, now)})`,
    l.reason === undefined
      ? '(moved by SQS after maxReceiveCount receives)'
      : oneLine(l.apiError === undefined ? l.reason : `${l.reason} (API: ${l.apiError})`, 120),
  ]);
  return `${table([['message id', 'queue ← source', 'attempt', 'dead-lettered', 'reason'], ...rows])}\n${letters.length} dead letter${letters.length === 1 ? '' : 's'} (peeked: each counts one more receive)`;
}

/** `dlq show` for people: every field, every attribute and the body. */
export function formatDeadLetter(letter: DeadLetter, now: number): string {
  const rows = [
    ['message id', letter.messageId],
    ['queue', letter.dlq],
    ['source', letter.source],
    ['dead-lettered', `${isoSecond(letter.deadLetteredAt)} (${ago(letter.deadLetteredAt, now)})`],
    ['attempt', letter.attempt === undefined ? '-' : String(letter.attempt)],
    ['reason', letter.reason ?? '(none: SQS moved it after maxReceiveCount receives; no worker settled it)'],
    ...(letter.apiError === undefined ? [] : [['API error', oneLine(letter.apiError, 1_100)]]),
    ...(letter.originalMessageId === undefined ? [] : [['original message', letter.originalMessageId]]),
    ...(letter.dispatchId === undefined ? [] : [['dispatch', letter.dispatchId]]),
    ...(letter.groupId === undefined ? [] : [['group', letter.groupId]]),
    ['receives', `${letter.receiveCount} (in the dead-letter queue, this one included)`],
  ];
  const attributes = Object.entries(letter.attributes).sort(([a], [b]) => (a < b ? -1 : 1));
  return [
    table(rows, ''),
    '',
    'Attributes:',
    attributes.length === 0 ? '  (none)' : table(attributes.map(([name, a]) => [name, a.dataType, a.value])),
    '',
    'Body:',
    letter.body,
  ].join('\n');
}

/** `dlq redrive` for people: a row per letter, then the totals. */
export function formatRedrive(results: readonly RedriveResult[]): string {
  if (results.length === 0) return 'Nothing to redrive.';
  const rows = results.map((r) => [r.messageId, `${r.from} → ${r.to}`, r.outcome, keyNote(r), r.error ?? '']);
  const redriven = results.filter((r) => r.outcome !== 'failed').length;
  return `${table([['message id', 'from → to', 'outcome', 'idempotency key', ''], ...rows])}\n${redriven} of ${results.length} sent back to their source queues`;
}

/** `dlq delete` for people: a row per dead letter, and how many went. */
export function formatDelete(results: readonly DeleteResult[]): string {
  if (results.length === 0) return 'Nothing to delete.';
  const rows = results.map((r) => [r.messageId, r.from, r.reason, r.outcome, r.error ?? '']);
  const deleted = results.filter((r) => r.outcome === 'deleted').length;
  return `${table([['message id', 'queue', 'reason', 'outcome', ''], ...rows])}\n${deleted} of ${results.length} deleted`;
}

/** `dlq purge` for people: a row per dead-letter queue. */
export function formatPurge(results: readonly PurgeResult[]): string {
  const rows = results.map((r) => [r.dlq, String(r.messages), r.outcome, r.error ?? '']);
  return `${table([['queue', 'messages', 'outcome', ''], ...rows])}\nSQS empties a purged queue within a minute`;
}

function keyNote(r: RedriveResult): string {
  if (r.idempotencyKey === undefined) return '(new: the message id)';
  if (r.keyWas === 'dead-lettered') return `${r.idempotencyKey} (reopened)`;
  if (r.keyWas === 'succeeded') return `${r.idempotencyKey} (had succeeded: the service will not call again)`;
  return r.idempotencyKey;
}
