import { ownValue } from '../../../lib/domain/ownValue';

describe('ownValue', () => {
  it("reads a record's own properties", () => {
    expect(ownValue({ output_tokens: 400, cost: 0 }, 'output_tokens')).toBe(400);
    expect(ownValue({ output_tokens: 400, cost: 0 }, 'cost')).toBe(0);
    expect(ownValue<number>({ cost: 1 }, 'input_tokens')).toBeUndefined();
  });

  it.each(['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__'])(
    'finds nothing for %s, which every object inherits but a record of estimates does not hold',
    (key) => {
      const estimates: Record<string, number> = { cost: 1 };
      expect(key in estimates).toBe(true);
      expect(ownValue(estimates, key)).toBeUndefined();
    },
  );

  it('reads __proto__ when a parsed JSON object holds it as its own key', () => {
    const parsed = JSON.parse('{"__proto__": 7}') as Record<string, number>;
    expect(ownValue(parsed, '__proto__')).toBe(7);
  });
});
