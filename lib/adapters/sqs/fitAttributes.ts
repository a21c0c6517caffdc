import { ATTRIBUTES, type MessageAttribute } from '../../ports/QueueReceiver';

/** SQS accepts at most this many message attributes per message. */
export const MAX_MESSAGE_ATTRIBUTES = 10;

/**
 * Name of the one String attribute that carries, as JSON `{"name":{"dataType":…,"value":…}}`, the attributes that
 * {@link fitAttributes} could not send as attributes of their own. The name is reserved: a caller's attribute of
 * that name is always carried inside the pack, so that {@link unpackAttributes} can tell the two apart.
 */
export const PACKED_ATTRIBUTES = 'packedAttributes';

/** Attributes the service reads or writes; they always travel as attributes of their own when they can. */
const SERVICE_ATTRIBUTES: ReadonlySet<string> = new Set(Object.values(ATTRIBUTES));

/** Name order by UTF-16 code units, independent of the locale. */
function byName([a]: readonly [string, MessageAttribute], [b]: readonly [string, MessageAttribute]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Makes a set of attributes sendable on SQS without losing any: SQS refuses more than
 * {@link MAX_MESSAGE_ATTRIBUTES} attributes and empty values, and dead-lettering or requeueing a message adds
 * service attributes (`reason`, `attempt`, `sourceQueue`, `originalMessageId`, `dispatchId`, `apiError`) to the
 * caller's. The service's own never number more than 8, so they always travel inline.
 *
 * Attributes are returned unchanged when they already fit. Otherwise the result holds:
 * 1. every service attribute (names in `ATTRIBUTES` of the queue port) that has a value,
 * 2. then the other attributes with a value, in name order, as many as leave one slot free,
 * 3. and in that slot {@link PACKED_ATTRIBUTES}, a String holding the JSON of all the rest: attributes that did
 *    not fit, attributes with an empty value, and a caller's own attribute named {@link PACKED_ATTRIBUTES}.
 *
 * {@link unpackAttributes} reverses this exactly. Pure; the input is not modified.
 */
export function fitAttributes(
  attributes: Readonly<Record<string, MessageAttribute>>,
): Record<string, MessageAttribute> {
  const entries = Object.entries(attributes);
  const inline = (name: string, attribute: MessageAttribute): boolean =>
    attribute.value !== '' && name !== PACKED_ATTRIBUTES;
  if (entries.length <= MAX_MESSAGE_ATTRIBUTES && entries.every(([name, attribute]) => inline(name, attribute)))
    return { ...attributes };

  const service = entries.filter(([name, attribute]) => SERVICE_ATTRIBUTES.has(name) && inline(name, attribute));
  const others = entries
    .filter(([name, attribute]) => !SERVICE_ATTRIBUTES.has(name) && inline(name, attribute))
    .sort(byName);
  const room = MAX_MESSAGE_ATTRIBUTES - 1 - service.length;
  const kept = [...service, ...others.slice(0, room)];
  const keptNames = new Set(kept.map(([name]) => name));
  const packed = entries.filter(([name]) => !keptNames.has(name)).sort(byName);
  const pack = Object.fromEntries(packed.map(([name, { dataType, value }]) => [name, { dataType, value }]));
  return { ...Object.fromEntries(kept), [PACKED_ATTRIBUTES]: { dataType: 'String', value: JSON.stringify(pack) } };
}

function isPack(value: unknown): value is Record<string, MessageAttribute> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value as Record<string, unknown>).every((entry) => {
    if (typeof entry !== 'object' || entry === null) return false;
    const { dataType, value: text } = entry as Record<string, unknown>;
    return typeof dataType === 'string' && typeof text === 'string';
  });
}

/**
 * Reverses {@link fitAttributes}: expands a {@link PACKED_ATTRIBUTES} String attribute back into the attributes it
 * holds. An attribute of that name that is not a pack (not a String, not JSON, or not of the pack's shape, e.g. sent
 * by another producer) is left as it is, and a packed entry never replaces an attribute that arrived on its own.
 * Pure; the input is not modified.
 */
export function unpackAttributes(
  attributes: Readonly<Record<string, MessageAttribute>>,
): Record<string, MessageAttribute> {
  const { [PACKED_ATTRIBUTES]: packed, ...rest } = attributes;
  if (packed === undefined || packed.dataType !== 'String') return { ...attributes };
  let pack: unknown;
  try {
    pack = JSON.parse(packed.value);
  } catch {
    return { ...attributes };
  }
  if (!isPack(pack)) return { ...attributes };
  const unpacked = Object.fromEntries(
    Object.entries(pack).map(([name, { dataType, value }]) => [name, { dataType, value }]),
  );
  return { ...unpacked, ...rest };
}
