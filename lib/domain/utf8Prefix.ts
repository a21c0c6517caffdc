/**
 * The longest prefix of `bytes` of at most `max` bytes that ends on a whole UTF-8 character, so that a cut text
 * decodes without a replacement character at its end.
 */
export function utf8Prefix(bytes: Buffer, max: number): Buffer {
  if (bytes.length <= max) return bytes;
  let end = max;
  // Back over the continuation bytes (10xxxxxx) of a character the cut splits, to its lead byte (at most 3 back).
  while (end > 0 && end > max - 3 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}
