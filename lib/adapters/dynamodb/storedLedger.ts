import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { describeValue } from '../../domain/describeValue';
import { parseLedgerJSON, type LedgerJSON } from '../../domain/quota/ledgerJSON';
import { StateFormatError } from '../../errors';
import { corrupt } from './DynamoTable';

/**
 * The lane item's `ledger` attribute for `ledger` (its tiers, without the slots): its JSON text, deflated, as a binary
 * attribute. A save writes the lane item, and DynamoDB bills a write by the item's size, one write unit per KB: the
 * text of three minute tiers of 250 buckets each is about 2 KB, and deflated about 0.3 KB (the buckets are mostly
 * zeros and repeated estimates), so a save costs one write unit where it cost three.
 */
export function storedLedger(ledger: LedgerJSON): Uint8Array {
  return deflateRawSync(JSON.stringify(ledger));
}

/**
 * The ledger a lane item's `ledger` attribute holds: deflated JSON text (see {@link storedLedger}), or the plain JSON
 * text that saves wrote before.
 * @throws StateFormatError when it is neither, or its JSON is not a ledger.
 */
export function ledgerOf(value: unknown, lane: string): LedgerJSON {
  const what = `ledger of lane '${lane}'`;
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value instanceof Uint8Array) {
    try {
      text = inflateRawSync(value).toString('utf8');
    } catch (cause) {
      throw new StateFormatError(`stored ${what} is not deflated text; got ${value.length} bytes`, { cause });
    }
  } else throw corrupt(what, 'must be JSON text, deflated or plain', value);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new StateFormatError(`stored ${what} is not valid JSON; got ${describeValue(text)}`, { cause });
  }
  return parseLedgerJSON(json);
}
