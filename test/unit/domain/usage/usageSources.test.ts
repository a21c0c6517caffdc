import { ConfigError } from '../../../../lib/errors';
import { MAX_QUANTITY } from '../../../../lib/domain/quota/tiers';
import { jsonPointerProblem, resolveJsonPointer } from '../../../../lib/domain/usage/jsonPointer';
import { parseUsageSource, readUsage, USAGE_PRESETS } from '../../../../lib/domain/usage/usageSources';

const anthropicBody = JSON.stringify({
  id: 'msg_01',
  type: 'message',
  usage: { input_tokens: 812, cache_creation_input_tokens: 100, cache_read_input_tokens: 4000, output_tokens: 311 },
});
const openaiBody = JSON.stringify({
  id: 'chatcmpl-1',
  usage: { prompt_tokens: 812, completion_tokens: 311, total_tokens: 1123 },
});

describe('JSON Pointer (RFC 6901)', () => {
  const doc = { foo: ['bar', 'baz'], '': 0, 'a/b': 1, 'm~n': 8, ' ': 7, usage: { n: 3 } };

  it.each([
    ['', doc],
    ['/foo', ['bar', 'baz']],
    ['/foo/0', 'bar'],
    ['/', 0],
    ['/a~1b', 1],
    ['/m~0n', 8],
    ['/ ', 7],
    ['/usage/n', 3],
  ])('resolves %j as RFC 6901 section 5 does', (pointer, expected) => {
    expect(jsonPointerProblem(pointer)).toBeUndefined();
    expect(resolveJsonPointer(doc, pointer)).toEqual(expected);
  });

  it.each(['/foo/2', '/foo/01', '/foo/-', '/missing', '/usage/n/deeper', '/toString', '/__proto__', '/constructor'])(
    'finds nothing at %j',
    (pointer) => {
      expect(resolveJsonPointer(doc, pointer)).toBeUndefined();
    },
  );

  it.each([
    ['usage/n', "must be '' or start with '/'"],
    ['/a~2', "may hold '~' only as '~0'"],
    ['/a~', "may hold '~' only as '~0'"],
  ])('refuses %j', (pointer, problem) => {
    expect(jsonPointerProblem(pointer)).toContain(problem);
  });
});

describe('parseUsageSource', () => {
  it('takes a header (kept in lower case), a pointer and a sum', () => {
    expect(parseUsageSource({ header: 'X-Tokens-Used' }, 'f')).toEqual({ header: 'x-tokens-used' });
    expect(parseUsageSource({ pointer: '/usage/output_tokens' }, 'f')).toEqual({ pointer: '/usage/output_tokens' });
    expect(parseUsageSource({ sum: ['/a', '/b'] }, 'f')).toEqual({ sum: ['/a', '/b'] });
  });

  it.each([
    [{}, 'units.x.usage', 'must be one of'],
    [{ header: 'a', pointer: '/b' }, 'units.x.usage', 'must be one of'],
    [{ header: 'bad header' }, 'units.x.usage.header', 'must be an HTTP header name'],
    [{ pointer: 'usage' }, 'units.x.usage.pointer', "must be '' or start with '/'"],
    [{ pointer: 3 }, 'units.x.usage.pointer', 'must be a JSON Pointer string'],
    [{ sum: [] }, 'units.x.usage.sum', 'must be a list of 1 to 10 JSON Pointers'],
    [{ sum: ['/a', 'b'] }, 'units.x.usage.sum[1]', "must be '' or start with '/'"],
    [{ body: '/a' }, 'units.x.usage.body', 'unknown key'],
    ['/usage', 'units.x.usage', 'must be one of'],
  ])('refuses %j naming the field', (input, field, problem) => {
    let error: unknown;
    try {
      parseUsageSource(input, 'units.x.usage');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).field).toBe(field);
    expect((error as ConfigError).problem).toContain(problem);
  });
});

describe('readUsage', () => {
  it('reads the Anthropic preset: uncached plus cache-writing input tokens, output tokens, and their total', () => {
    expect(readUsage(USAGE_PRESETS.anthropic, { headers: {}, body: anthropicBody })).toEqual({
      input_tokens: 912,
      output_tokens: 311,
      tokens: 1223,
    });
  });

  it('reads the OpenAI preset from prompt, completion and total tokens', () => {
    expect(readUsage(USAGE_PRESETS.openai, { headers: {}, body: openaiBody })).toEqual({
      input_tokens: 812,
      output_tokens: 311,
      tokens: 1123,
    });
  });

  it('reads only the units it has sources for', () => {
    expect(
      readUsage({ output_tokens: USAGE_PRESETS.openai.output_tokens! }, { headers: {}, body: openaiBody }),
    ).toEqual({ output_tokens: 311 });
  });

  it('reads a header as a plain decimal, rounding a fraction up', () => {
    const sources = { cost: { header: 'x-actual-cost' } };
    expect(readUsage(sources, { headers: { 'x-actual-cost': ' 7 ' } })).toEqual({ cost: 7 });
    expect(readUsage(sources, { headers: { 'x-actual-cost': '2.1' } })).toEqual({ cost: 3 });
    for (const text of ['', '-1', '1e3', '0x10', 'abc', 'NaN', 'Infinity', '+4'])
      expect(readUsage(sources, { headers: { 'x-actual-cost': text } })).toEqual({});
    expect(readUsage(sources, { headers: {} })).toEqual({});
  });

  it('keeps the estimate (leaves the unit out) when the body is not JSON, was cut short, or lacks the field', () => {
    for (const body of [
      undefined,
      '',
      'Internal error',
      anthropicBody.slice(0, 40),
      '{"usage": {}}',
      '{"usage": null}',
      '[1, 2]',
      'null',
    ]) {
      expect(readUsage(USAGE_PRESETS.openai, { headers: {}, body })).toEqual({});
    }
  });

  it('keeps the estimate when a field holds no count: text, a negative number, null, an object, a boolean', () => {
    for (const value of ['812', -1, null, { n: 1 }, true]) {
      expect(
        readUsage(
          { output_tokens: { pointer: '/usage/output_tokens' } },
          { headers: {}, body: JSON.stringify({ usage: { output_tokens: value } }) },
        ),
      ).toEqual({});
    }
  });

  it('rounds a fraction up, and counts a huge number as the largest quantity: never an under-count', () => {
    const sources = { output_tokens: { pointer: '/u' } };
    expect(readUsage(sources, { headers: {}, body: '{"u": 10.2}' })).toEqual({ output_tokens: 11 });
    expect(readUsage(sources, { headers: {}, body: '{"u": 1e300}' })).toEqual({ output_tokens: MAX_QUANTITY });
    expect(readUsage(sources, { headers: {}, body: '{"u": 123456789012345678901234567890}' })).toEqual({
      output_tokens: MAX_QUANTITY,
    });
    expect(readUsage(sources, { headers: { 'x-n': '99999999999999999999' } })).toEqual({});
    expect(readUsage({ n: { header: 'x-n' } }, { headers: { 'x-n': '99999999999999999999' } })).toEqual({
      n: MAX_QUANTITY,
    });
  });

  it('in a sum, counts a null member 0 but leaves the unit out when a member is missing, and caps the total', () => {
    const sources = { input_tokens: { sum: ['/usage/input_tokens', '/usage/cache_creation_input_tokens'] } };
    expect(
      readUsage(sources, { headers: {}, body: '{"usage": {"input_tokens": 5, "cache_creation_input_tokens": null}}' }),
    ).toEqual({ input_tokens: 5 });
    expect(readUsage(sources, { headers: {}, body: '{"usage": {"input_tokens": 5}}' })).toEqual({});
    expect(
      readUsage(sources, {
        headers: {},
        body: `{"usage": {"input_tokens": ${MAX_QUANTITY}, "cache_creation_input_tokens": 5}}`,
      }),
    ).toEqual({ input_tokens: MAX_QUANTITY });
  });
});
