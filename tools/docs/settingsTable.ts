/** The markdown tables of the configuration reference. */
import type { MemberDoc } from './tsdocReader';

/** One row of a settings table. */
export interface Setting {
  readonly key: string;
  readonly defaultValue: string;
  readonly allowed: string;
  readonly description: string;
}

/** A value as serverless.yml would write it. */
export function formatValue(value: unknown): string {
  if (value === undefined) return '—';
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
}

/**
 * The description of a member: its TSDoc text, and what its `@default` tag adds beyond the value (a reason, a unit).
 * A member without TSDoc says so, where the reader (and the reviewer) will see it.
 */
export function describe(doc: MemberDoc | undefined, defaultValue: unknown): string {
  if (doc === undefined || doc.text === '') return '**(no TSDoc: document this member where it is declared)**';
  const tag = doc.defaultTag?.trim();
  if (tag === undefined || tag === '') return doc.text;
  const shown = typeof defaultValue === 'string' ? [defaultValue, `'${defaultValue}'`] : [String(defaultValue)];
  const rest = shown
    .reduce((text, value) => (text.startsWith(value) ? text.slice(value.length) : text), tag)
    .replace(/^[\s:,;]+/, '');
  const sentence = (text: string) => `${doc.text} Default: ${text.replace(/^\((.*)\)$/, '$1').replace(/\.$/, '')}.`;
  if (defaultValue !== undefined && rest === tag) return sentence(tag);
  return rest === '' ? doc.text : sentence(rest);
}

export function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();
}

export function table(rows: readonly Setting[]): string {
  const lines = ['| Key | Default | Allowed | Description |', '| --- | --- | --- | --- |'];
  for (const row of rows)
    lines.push(`| \`${row.key}\` | ${cell(row.defaultValue)} | ${cell(row.allowed)} | ${cell(row.description)} |`);
  return lines.join('\n');
}

/** `a`, `a and b`, `a, b and c`. */
export function inWords(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}
