import { ownValue } from '../ownValue';

/**
 * Why `pointer` is not a JSON Pointer (RFC 6901), or `undefined` when it is: `""` (the whole document), or `/`
 * followed by reference tokens separated by `/`, in which `~` appears only as `~0` (a `~`) or `~1` (a `/`).
 */
export function jsonPointerProblem(pointer: string): string | undefined {
  if (pointer !== '' && !pointer.startsWith('/'))
    return "must be '' or start with '/' (RFC 6901), e.g. '/usage/output_tokens'";
  if (/~(?![01])/.test(pointer)) return "may hold '~' only as '~0' (a '~') or '~1' (a '/') (RFC 6901)";
  return undefined;
}

/** The reference tokens of a valid JSON Pointer, unescaped: `/a~1b/c~0d` → `['a/b', 'c~d']`. */
function tokensOf(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Whether `token` is an array index as RFC 6901 writes one: `0`, or digits without a leading zero. */
const isArrayIndex = (token: string): boolean => /^(0|[1-9][0-9]*)$/.test(token);

/**
 * The value `pointer` (a valid JSON Pointer, see {@link jsonPointerProblem}) refers to in `document`, a parsed JSON
 * value, or `undefined` when it refers to nothing there. Only own members are followed, never a prototype's.
 */
export function resolveJsonPointer(document: unknown, pointer: string): unknown {
  let value: unknown = document;
  for (const token of tokensOf(pointer)) {
    if (Array.isArray(value)) {
      if (!isArrayIndex(token)) return undefined;
      value = value[Number(token)];
    } else if (typeof value === 'object' && value !== null) {
      value = ownValue(value as Record<string, unknown>, token);
    } else {
      return undefined;
    }
  }
  return value;
}
