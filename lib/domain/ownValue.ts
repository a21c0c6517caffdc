/**
 * `record[key]` when `record` has `key` as a property of its own, else `undefined`: never a member every object
 * inherits (`constructor`, `toString`, `__proto__`…), which a plain lookup would find on a record that lacks the key.
 */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
