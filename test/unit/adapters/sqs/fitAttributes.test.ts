import fc from 'fast-check';
import {
  MAX_MESSAGE_ATTRIBUTES,
  PACKED_ATTRIBUTES,
  fitAttributes,
  unpackAttributes,
} from '../../../../lib/adapters/sqs/fitAttributes';
import type { MessageAttribute } from '../../../../lib/ports/QueueReceiver';

const str = (value: string): MessageAttribute => ({ dataType: 'String', value });
const num = (value: number): MessageAttribute => ({ dataType: 'Number', value: String(value) });

/** `n` user attributes `u00`, `u01`, … */
function userAttributes(n: number): Record<string, MessageAttribute> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`u${String(i).padStart(2, '0')}`, str(`v${i}`)]));
}

function packOf(attributes: Record<string, MessageAttribute>): unknown {
  const packed = attributes[PACKED_ATTRIBUTES];
  if (packed === undefined) throw new Error('expected a packed attribute');
  expect(packed.dataType).toBe('String');
  return JSON.parse(packed.value);
}

describe('fitAttributes', () => {
  it('returns attributes that already fit unchanged', () => {
    const attributes = { ...userAttributes(9), cost: num(2) };
    expect(fitAttributes(attributes)).toEqual(attributes);
    expect(fitAttributes({})).toEqual({});
  });

  it('keeps service attributes and the first user attributes by name, and packs the rest into one attribute', () => {
    const attributes = {
      ...userAttributes(9),
      reason: str('HTTP 400 Bad Request'),
      attempt: num(3),
      sourceQueue: str('main'),
    };
    const fitted = fitAttributes(attributes);
    expect(Object.keys(fitted)).toHaveLength(MAX_MESSAGE_ATTRIBUTES);
    expect(Object.keys(fitted).sort()).toEqual(
      ['attempt', PACKED_ATTRIBUTES, 'reason', 'sourceQueue', 'u00', 'u01', 'u02', 'u03', 'u04', 'u05'].sort(),
    );
    expect(packOf(fitted)).toEqual({ u06: str('v6'), u07: str('v7'), u08: str('v8') });
  });

  it('orders user attributes by code unit, not by locale', () => {
    // 'Z' sorts before 'u' by code unit, after it in most locales.
    const fitted = fitAttributes({ ...userAttributes(10), Z: str('upper') });
    expect(fitted.Z).toEqual(str('upper'));
    expect(packOf(fitted)).toEqual({ u08: str('v8'), u09: str('v9') });
  });

  it('packs empty values, which SQS refuses, even when few attributes are sent', () => {
    const fitted = fitAttributes({ note: str(''), cost: num(1), reason: str('') });
    expect(fitted).toEqual({ cost: num(1), [PACKED_ATTRIBUTES]: fitted[PACKED_ATTRIBUTES] });
    expect(packOf(fitted)).toEqual({ note: str(''), reason: str('') });
  });

  it("always packs a caller's own attribute named like the pack, so it cannot be mistaken for one", () => {
    const own = str('{"not":"a pack"}');
    const fitted = fitAttributes({ [PACKED_ATTRIBUTES]: own });
    expect(packOf(fitted)).toEqual({ [PACKED_ATTRIBUTES]: own });
    expect(unpackAttributes(fitted)).toEqual({ [PACKED_ATTRIBUTES]: own });
  });

  it('keeps binary attributes as base64 text with their data type', () => {
    const binary: MessageAttribute = { dataType: 'Binary.gzip', value: Buffer.from([0, 1, 255]).toString('base64') };
    const attributes = { ...userAttributes(10), zz: binary };
    expect(packOf(fitAttributes(attributes))).toMatchObject({ zz: binary });
  });

  it('does not modify its input', () => {
    const attributes = userAttributes(12);
    const copy = structuredClone(attributes);
    fitAttributes(attributes);
    expect(attributes).toEqual(copy);
  });

  it('for any attributes, sends at most 10, none empty, keeps service attributes, and unpacks to the input', () => {
    const name = fc.oneof(
      fc.constantFrom('cost', 'idempotencyKey', 'attempt', 'reason', 'sourceQueue', PACKED_ATTRIBUTES),
      fc.string({ minLength: 1, maxLength: 6 }),
    );
    const attribute = fc.record({
      dataType: fc.constantFrom('String', 'Number', 'Binary', 'String.custom'),
      value: fc.oneof(fc.constant(''), fc.string({ maxLength: 8 })),
    });
    fc.assert(
      fc.property(fc.dictionary(name, attribute, { maxKeys: 20 }), (attributes) => {
        const fitted = fitAttributes(attributes);
        expect(Object.keys(fitted).length).toBeLessThanOrEqual(MAX_MESSAGE_ATTRIBUTES);
        for (const value of Object.values(fitted)) expect(value.value).not.toBe('');
        for (const service of ['cost', 'idempotencyKey', 'attempt', 'reason', 'sourceQueue']) {
          const original = attributes[service];
          if (original !== undefined && original.value !== '') expect(fitted[service]).toEqual(original);
        }
        expect(unpackAttributes(fitted)).toEqual(attributes);
      }),
    );
  });
});

describe('unpackAttributes', () => {
  it('leaves attributes without a pack as they are', () => {
    expect(unpackAttributes({ cost: num(1) })).toEqual({ cost: num(1) });
  });

  it('leaves an attribute of the reserved name that is not a pack as it is', () => {
    for (const foreign of [
      str('not json'),
      str('[1,2]'),
      str('{"a":{"dataType":"String"}}'),
      str('null'),
      { dataType: 'Number', value: '{}' },
    ]) {
      expect(unpackAttributes({ [PACKED_ATTRIBUTES]: foreign, cost: num(1) })).toEqual({
        [PACKED_ATTRIBUTES]: foreign,
        cost: num(1),
      });
    }
  });

  it('never lets a packed entry replace an attribute that arrived on its own', () => {
    const attributes = { cost: num(1), [PACKED_ATTRIBUTES]: str(JSON.stringify({ cost: num(9), extra: str('x') })) };
    expect(unpackAttributes(attributes)).toEqual({ cost: num(1), extra: str('x') });
  });
});
