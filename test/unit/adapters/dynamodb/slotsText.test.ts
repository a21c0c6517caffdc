import { randomUUID } from 'node:crypto';
import { slotsOfText, slotsText } from '../../../../lib/adapters/dynamodb/slotsText';

const T0 = 1_700_000_000_000;

describe('slotsText', () => {
  it('reads back the calls and held slots it wrote, each held until the next tenth of a second at the latest', () => {
    const slots = {
      a: [
        ['6f1e2d3c-4b5a-4e0f-9d3a-0b7c5b2e8a43', T0 + 1_000],
        ['batch-1#2', T0 + 1_001],
        ['*:;|%', T0 + 30_000],
      ] as [string, number][],
      h: [[3, T0 + 45_099]] as [number, number][],
    };
    expect(slotsOfText(slotsText(slots))).toEqual({
      a: [
        ['6f1e2d3c-4b5a-4e0f-9d3a-0b7c5b2e8a43', T0 + 1_000],
        ['batch-1#2', T0 + 1_100],
        ['*:;|%', T0 + 30_000],
      ],
      h: [[3, T0 + 45_100]],
    });
    expect(slotsOfText(slotsText({ a: [] }))).toEqual({ a: [] });
  });

  it('keeps 1,000 calls in progress within 30 KB', () => {
    const a = Array.from({ length: 1_000 }, (_, i) => [randomUUID(), T0 + 30_000 + i * 37] as [string, number]);
    const text = slotsText({ a, h: [[10, T0 + 60_000]] });
    expect(text.length).toBeLessThan(30_000);
    expect(slotsOfText(text)?.a.map(([id]) => id)).toEqual(a.map(([id]) => id));
  });

  it('reads text of another form as nothing', () => {
    for (const text of ['', '1|0||', `2|${T0}|x:zz!|`, `2|${T0}||x:1`, `2|abc||`, `2|${T0}|%E0%A4%A:1|`])
      expect(slotsOfText(text)).toBeUndefined();
  });
});
