import type { CallSlotsJSON } from '../../domain/inflight/callSlots';

/**
 * The call slots as the `slots#<lane>` item stores them: compact text, about 30 bytes a call, so that 1,000 calls in
 * progress (the most `maxInFlight` allows) make an item of about 30 KB:
 *
 *   2|<base ms>|<id>:<delta>;<id>:<delta>…|<count>:<delta>;…
 *
 * A `delta` is the slot's `until` after `base`, in tenths of a second rounded up (base 36): a slot read back is held
 * at most 100 ms longer, never shorter. An id that is a UUID (what the orchestrator names dispatches by) is written as
 * `*` and its 16 bytes in base64url; any other id URI-encoded (`*` escaped too, so that it never holds `*`, `:`, `;` or `|`).
 */
export function slotsText(slots: CallSlotsJSON): string {
  const held = slots.h ?? [];
  const untils = [...slots.a, ...held].map(([, until]) => until);
  const base = untils.length === 0 ? 0 : Math.floor(Math.min(...untils) / TICK);
  const delta = (until: number) => (Math.ceil(until / TICK) - base).toString(36);
  const known = slots.a.map(([id, until]) => `${idText(id)}:${delta(until)}`).join(';');
  return `2|${base * TICK}|${known}|${held.map(([count, until]) => `${count}:${delta(until)}`).join(';')}`;
}

/** The slots `text` ({@link slotsText}) holds, or `undefined` when it is not such text. */
export function slotsOfText(text: string): CallSlotsJSON | undefined {
  const [version, baseText, known, held, ...rest] = text.split('|');
  const base = Number(baseText) / TICK;
  if (version !== '2' || rest.length > 0 || known === undefined || held === undefined || !Number.isInteger(base))
    return undefined;
  const pairs = (list: string) => (list === '' ? [] : list.split(';').map((pair) => pair.split(':')));
  const until = (delta = '') => (/^[0-9a-z]+$/.test(delta) ? (base + parseInt(delta, 36)) * TICK : NaN);
  const ids = pairs(known).map(([id]) => idOfText(id ?? ''));
  if (ids.includes(undefined)) return undefined;
  const a = pairs(known).map(([, delta], i) => [ids[i] as string, until(delta)] as const);
  const h = pairs(held).map(([count, delta]) => [Number(count), until(delta)] as const);
  const counted = h.every(([count]) => Number.isInteger(count) && count > 0);
  if (!counted || ![...a, ...h].every(([, u]) => Number.isFinite(u))) return undefined;
  return h.length === 0 ? { a } : { a, h };
}

/** Resolution of the stored instants, in ms. */
const TICK = 100;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function idText(id: string): string {
  return UUID.test(id)
    ? `*${Buffer.from(id.replace(/-/g, ''), 'hex').toString('base64url')}`
    : encodeURIComponent(id).replace(/\*/g, '%2A');
}

/** The id `text` ({@link idText}) stands for, or `undefined` when it is not URI-encoded. */
function idOfText(text: string): string | undefined {
  if (!text.startsWith('*')) {
    try {
      return decodeURIComponent(text);
    } catch {
      return undefined;
    }
  }
  const hex = Buffer.from(text.slice(1), 'base64url').toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
