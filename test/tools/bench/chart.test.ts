import type { ChartInput, ChartPanel } from '../../../tools/bench/chart';
import {
  CAPTION_HEIGHT,
  CHART_WIDTH,
  PANEL_HEIGHT,
  escapeXml,
  renderBenchChart,
  renderChart,
} from '../../../tools/bench/chart';

/**
 * A small well-formedness check, since there is no XML parser among the dependencies: tags nest and close in order
 * under a single <svg> root, attribute quotes pair up, and every '&' starts an entity.
 */
function expectWellFormed(xml: string): void {
  const stack: string[] = [];
  let roots = 0;
  let i = 0;
  while ((i = xml.indexOf('<', i)) !== -1) {
    const end = xml.indexOf('>', i);
    if (end === -1) throw new Error(`tag at ${i} never closes`);
    const tag = xml.slice(i + 1, end);
    if (tag.startsWith('/')) {
      const open = stack.pop();
      if (open !== tag.slice(1).trim()) throw new Error(`</${tag.slice(1)}> closes <${open}> at ${i}`);
    } else {
      const name = tag.split(/[\s/]/)[0] ?? '';
      if (!/^[A-Za-z][\w:-]*$/.test(name)) throw new Error(`bad tag name '${name}' at ${i}`);
      if (stack.length === 0) roots++;
      if ((tag.match(/"/g) ?? []).length % 2 !== 0) throw new Error(`unpaired quote in <${tag}>`);
      if (!tag.endsWith('/')) stack.push(name);
    }
    const text = xml.slice(end + 1, xml.indexOf('<', end + 1) === -1 ? undefined : xml.indexOf('<', end + 1));
    if (text.includes('>')) throw new Error(`raw '>' in text after ${i}`);
    i = end + 1;
  }
  expect(stack).toEqual([]);
  expect(roots).toBe(1);
  let amp = 0;
  while ((amp = xml.indexOf('&', amp)) !== -1) {
    expect(xml.slice(amp, amp + 8)).toMatch(/^&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/);
    amp++;
  }
}

/** The attributes of one element; reading a missing one fails. */
class Attributes {
  constructor(private readonly values: ReadonlyMap<string, string>) {}

  get(key: string): string {
    const value = this.values.get(key);
    if (value === undefined) throw new Error(`no attribute ${key}`);
    return value;
  }

  num(key: string): number {
    return Number(this.get(key));
  }

  has(key: string): boolean {
    return this.values.has(key);
  }
}

/** The attributes of every element `<name ...>` whose opening tag contains `marker`. */
function elements(svg: string, name: string, marker = ''): Attributes[] {
  const found: Attributes[] = [];
  let i = 0;
  while ((i = svg.indexOf(`<${name} `, i)) !== -1) {
    const tag = svg.slice(i, svg.indexOf('>', i) + 1);
    if (tag.includes(marker)) {
      const values = new Map<string, string>();
      for (const [, key, value] of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) values.set(key ?? '', value ?? '');
      found.push(new Attributes(values));
    }
    i++;
  }
  return found;
}

/** The only element `<name ...>` whose opening tag contains `marker`. */
function one(svg: string, name: string, marker = ''): Attributes {
  const found = elements(svg, name, marker);
  if (found.length !== 1) throw new Error(`${found.length} <${name}> elements with '${marker}'`);
  return found[0] as Attributes;
}

/** The text elements of a class, keyed by their content. */
function texts(svg: string, cls: string): Map<string, Attributes> {
  const out = new Map<string, Attributes>();
  let i = 0;
  while ((i = svg.indexOf(`<text class="${cls}"`, i)) !== -1) {
    const close = svg.indexOf('>', i);
    const content = svg.slice(close + 1, svg.indexOf('</text>', close));
    out.set(content, one(svg.slice(i, close + 1), 'text'));
    i = close;
  }
  return out;
}

/** The position of the text element of a class with this content. */
function textAt(svg: string, cls: string, content: string): Attributes {
  const found = texts(svg, cls).get(content);
  if (found === undefined) throw new Error(`no ${cls} text '${content}'`);
  return found;
}

function points(polyline: Attributes): { x: number; y: number }[] {
  return polyline
    .get('points')
    .split(' ')
    .map((p) => {
      const [x = Number.NaN, y = Number.NaN] = p.split(',').map(Number);
      return { x, y };
    });
}

const repeat = (value: number, n: number): number[] => Array.from({ length: n }, () => value);

function input(overrides: Partial<ChartInput> = {}): ChartInput {
  return {
    title: 'outage',
    caption: 'test machine, 2026-11-23',
    quotaPerSecond: 50,
    outage: { atSeconds: 20, forSeconds: 15 },
    series: [
      { name: 'naive-fanout', callsPerSecond: [...repeat(80, 20), ...repeat(10, 15), ...repeat(70, 25)] },
      { name: 'per-worker-limiter', callsPerSecond: repeat(30, 60) },
      { name: 'shared-redis-limiter', callsPerSecond: [], unavailable: 'redis-server not found' },
      { name: 'orchestrator', callsPerSecond: [...repeat(50, 20), ...repeat(0, 15), ...repeat(50, 25)] },
    ],
    ...overrides,
  };
}

describe('the well-formedness check', () => {
  it.each([
    ['a tag closed out of order', '<svg><g></svg></g>'],
    ['an unclosed tag', '<svg><g></svg>'],
    ['two roots', '<svg></svg><svg></svg>'],
    ['a raw ampersand', '<svg><text>a & b</text></svg>'],
    ['an unpaired quote', '<svg x="1></svg>'],
  ])('rejects %s', (_, xml) => {
    expect(() => expectWellFormed(xml)).toThrow();
  });
});

describe('renderChart', () => {
  it('is a standalone, well-formed SVG of 900×420', () => {
    const svg = renderChart(input());
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expectWellFormed(svg);
    const root = one(svg, 'svg');
    expect(root.num('width')).toBe(CHART_WIDTH);
    expect(root.num('height')).toBe(420);
    expect(root.get('viewBox')).toBe('0 0 900 420');
  });

  it('draws one polyline per available series, each in its own colour, and lists every series in the legend', () => {
    const svg = renderChart(input());
    const lines = elements(svg, 'polyline');
    expect(lines.map((l) => l.get('data-series'))).toEqual(['naive-fanout', 'per-worker-limiter', 'orchestrator']);
    expect(new Set(lines.map((l) => l.get('stroke'))).size).toBe(3);
    expect(points(one(svg, 'polyline', 'data-series="per-worker-limiter"'))).toHaveLength(60);
    expect(svg).toContain('>naive-fanout</text>');
    expect(svg).toContain('>per-worker-limiter</text>');
    expect(svg).toContain('>shared-redis-limiter (unavailable)</text>');
    expect(svg).toContain('>orchestrator</text>');
  });

  it('draws the dashed quota line at the quota rate on the y axis', () => {
    const svg = renderChart(input());
    const quota = one(svg, 'line', 'class="quota"');
    expect(quota.has('stroke-dasharray')).toBe(true);
    expect(quota.get('y1')).toBe(quota.get('y2'));
    const y = quota.num('y1');
    // The orchestrator's seconds at 50 calls/s lie on it.
    const orchestrator = points(one(svg, 'polyline', 'data-series="orchestrator"'));
    expect(orchestrator.slice(0, 20).map((p) => p.y)).toEqual(Array(20).fill(y));
    // And it sits at 50 on the axis: ticks 0..100 by 20 here, so halfway between the 0 and 100 ticks.
    expect([...texts(svg, 'y-tick').keys()]).toEqual(['0', '20', '40', '60', '80', '100']);
    const grid = (value: string): number => one(svg, 'line', `class="grid" data-value="${value}"`).num('y1');
    expect(y).toBeCloseTo((grid('0') + grid('100')) / 2, 1);
    expect(y).toBeCloseTo((grid('40') + grid('60')) / 2, 1);
    expect(svg).toContain('>quota 50/s</text>');
  });

  it('uses the given quota label', () => {
    const svg = renderChart(input({ quotaPerSecond: 2000 / 60, quotaLabel: 'quota 33.3/s (2,000/min)' }));
    expect(svg).toContain('>quota 33.3/s (2,000/min)</text>');
  });

  it('shades the outage from its start to its end on the x axis', () => {
    const svg = renderChart(input());
    const outage = one(svg, 'rect', 'class="outage"');
    expect(outage.num('fill-opacity')).toBeLessThan(1);
    const ticks = texts(svg, 'x-tick');
    expect([...ticks.keys()]).toEqual(['0', '10', '20', '30', '40', '50', '60']);
    const x = (s: string): number => textAt(svg, 'x-tick', s).num('x');
    expect(outage.num('x')).toBeCloseTo(x('20'), 1);
    expect(outage.num('width')).toBeCloseTo(1.5 * (x('30') - x('20')), 1);
    // Second i is drawn at its middle: the orchestrator's first point is at 0.5 s.
    const [first] = points(one(svg, 'polyline', 'data-series="orchestrator"'));
    expect(first?.x).toBeCloseTo(x('0') + (x('10') - x('0')) / 20, 1);
    expect(svg).toContain('outage 15 s');
  });

  it('has no outage rect without an outage', () => {
    const svg = renderChart(input({ outage: undefined }));
    expect(elements(svg, 'rect', 'class="outage"')).toEqual([]);
    expectWellFormed(svg);
  });

  it('escapes text', () => {
    const svg = renderChart(
      input({
        title: 'steady <50/s> & "2,000/min"',
        caption: "Tom's laptop & <CI>",
        series: [{ name: 'a<b>&c', callsPerSecond: [1, 2] }],
      }),
    );
    expectWellFormed(svg);
    expect(svg).toContain('steady &lt;50/s&gt; &amp; &quot;2,000/min&quot;');
    expect(svg).toContain('Tom&apos;s laptop &amp; &lt;CI&gt;');
    expect(svg).toContain('data-series="a&lt;b&gt;&amp;c"');
    expect(svg).not.toContain('<b>');
    expect(escapeXml(`<&>"'`)).toBe('&lt;&amp;&gt;&quot;&apos;');
  });

  it('keeps the quota readable when a strategy bursts far above it, and gives that peak in the legend', () => {
    const svg = renderChart(
      input({
        quotaPerSecond: 10,
        outage: undefined,
        series: [
          { name: 'naive-fanout', callsPerSecond: [1000, 5, 5] },
          { name: 'orchestrator', callsPerSecond: [10, 10, 10] },
        ],
      }),
    );
    expectWellFormed(svg);
    const top = Math.max(...[...texts(svg, 'y-tick').keys()].map(Number));
    expect(top).toBeLessThanOrEqual(50);
    expect(top).toBeGreaterThanOrEqual(40);
    expect(svg).toContain('>naive-fanout (peak 1000/s)</text>');
    expect(svg).toContain('clip-path="url(#plot-area-0)"');
  });

  it('honours an explicit y axis top', () => {
    const svg = renderChart(input({ yMax: 200 }));
    expect(Math.max(...[...texts(svg, 'y-tick').keys()].map(Number))).toBe(200);
  });

  it('stays well-formed with no data at all', () => {
    const svg = renderChart(input({ series: [], outage: undefined, quotaPerSecond: 0 }));
    expectWellFormed(svg);
    expect(elements(svg, 'polyline')).toEqual([]);
    expect(elements(svg, 'line', 'class="quota"')).toEqual([]);
  });
});

describe('renderBenchChart', () => {
  const steady: ChartPanel = { ...input(), title: 'steady', outage: undefined };
  const outage: ChartPanel = { ...input(), title: 'outage' };

  it('stacks the panels in one SVG with one caption and the same colour per strategy in each', () => {
    const svg = renderBenchChart([steady, outage], 'machine, date');
    expectWellFormed(svg);
    expect(one(svg, 'svg').num('height')).toBe(2 * PANEL_HEIGHT + CAPTION_HEIGHT);
    expect(svg.split('<g class="panel">')).toHaveLength(3);
    expect(svg.split('>machine, date</text>')).toHaveLength(2);
    expect(elements(svg, 'clipPath').map((c) => c.get('id'))).toEqual(['plot-area-0', 'plot-area-1']);
    const lines = elements(svg, 'polyline');
    expect(lines).toHaveLength(6);
    for (const name of ['naive-fanout', 'per-worker-limiter', 'orchestrator']) {
      const strokes = lines.filter((l) => l.get('data-series') === name).map((l) => l.get('stroke'));
      expect(strokes).toHaveLength(2);
      expect(strokes[0]).toBe(strokes[1]);
    }
    expect(elements(svg, 'rect', 'class="outage"')).toHaveLength(1);
    expect(elements(svg, 'line', 'class="quota"')).toHaveLength(2);
    // The second panel lies below the first.
    const [y0 = 0, y1 = 0] = elements(svg, 'line', 'class="quota"').map((l) => l.num('y1'));
    expect(y1 - y0).toBeCloseTo(PANEL_HEIGHT, 1);
  });
});
