/** The longest operator name accepted: it is stored in the circuit item, in its hold and transitions. */
export const MAX_OPERATOR_NAME = 128;

/**
 * `by` trimmed: an operator's name as the state keeps it.
 * @throws RangeError when it is blank or longer than {@link MAX_OPERATOR_NAME}.
 */
export function operatorName(by: string): string {
  const name = by.trim();
  if (name === '' || name.length > MAX_OPERATOR_NAME)
    throw new RangeError(`the operator's name must be 1 to ${MAX_OPERATOR_NAME} characters; got ${JSON.stringify(by)}`);
  return name;
}
