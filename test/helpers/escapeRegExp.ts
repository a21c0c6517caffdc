/** `text` with every character that a regular expression reads as syntax escaped, so that it matches only itself. */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
