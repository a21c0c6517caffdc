/**
 * The benchmark's chart: API calls per second over time, one line per strategy, against the quota line,
 * with the outage shaded. Hand-written SVG text, no dependencies; pure.
 */

/** One strategy's line. */
export interface ChartSeries {
  readonly name: string;
  /** Job calls that reached the API in each second of the run: index i is the second [i, i+1). */
  readonly callsPerSecond: readonly number[];
  /** Set when the strategy could not run: the series is not drawn and the legend says "(unavailable)". */
  readonly unavailable?: string;
}

/** One scenario's plot. */
export interface ChartPanel {
  /** The scenario's name, shown above the plot. */
  readonly title: string;
  /** The tightest tier's long-run rate (limit / window seconds): drawn as a dashed horizontal line. */
  readonly quotaPerSecond: number;
  /** Text beside the quota line. @default `quota <rate>/s` */
  readonly quotaLabel?: string;
  /** Shaded, in seconds from the start. */
  readonly outage?: { readonly atSeconds: number; readonly forSeconds: number };
  readonly series: readonly ChartSeries[];
  /**
   * Top of the y axis in calls/s. By default the axis fits the data, but stops at 4× the quota so that a
   * strategy bursting far above it does not flatten the others: its line leaves the top of the plot and
   * the legend gives its peak.
   */
  readonly yMax?: number;
}

/** A standalone chart: one panel plus a caption line (machine and date). */
export interface ChartInput extends ChartPanel {
  readonly caption: string;
}

/** Width of the SVG in px. */
export const CHART_WIDTH = 900;
/** Height of one panel in px; a single chart is this plus {@link CAPTION_HEIGHT} (420 px in all). */
export const PANEL_HEIGHT = 392;
/** Height of the caption band at the bottom. */
export const CAPTION_HEIGHT = 28;

/** Okabe–Ito colours: distinct for colour-blind readers too. Assigned in order of first appearance. */
const PALETTE = ['#D55E00', '#E69F00', '#CC79A7', '#0072B2', '#009E73', '#56B4E9', '#000000', '#F0E442'];

const FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
const MARGIN_LEFT = 64;
const MARGIN_RIGHT = 24;
const TITLE_BAND = 34;
const LEGEND_ROW = 20;
const X_AXIS_BAND = 44;
const PANEL_GAP = 10;
/** The default y axis stops at this multiple of the quota. */
const CLIP_FACTOR = 4;
/** Rough width of one character of 12 px text, for wrapping the legend. */
const CHAR_WIDTH = 6.6;

/** Escapes text for XML content and attribute values. */
export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** A single chart of ~900×420 px. */
export function renderChart(input: ChartInput): string {
  return renderBenchChart([input], input.caption);
}

/** Several panels (e.g. steady and outage) stacked in one SVG, sharing the caption at the bottom. */
export function renderBenchChart(panels: readonly ChartPanel[], caption: string): string {
  const colours = colourMap(panels);
  const height = panels.length * PANEL_HEIGHT + CAPTION_HEIGHT;
  const label = panels.map((p) => p.title).join(', ');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${CHART_WIDTH}" height="${height}" ` +
      `viewBox="0 0 ${CHART_WIDTH} ${height}" font-family="${escapeXml(FONT)}" role="img" ` +
      `aria-label="${escapeXml(`API calls per second over time: ${label}`)}">`,
    `<title>${escapeXml(`API calls per second over time: ${label}`)}</title>`,
    `<rect x="0" y="0" width="${CHART_WIDTH}" height="${height}" fill="#ffffff"/>`,
  ];
  panels.forEach((panel, index) => parts.push(renderPanel(panel, index, index * PANEL_HEIGHT, colours)));
  parts.push(
    `<text x="${CHART_WIDTH - MARGIN_RIGHT}" y="${height - 10}" text-anchor="end" font-size="11" fill="#555555">` +
      `${escapeXml(caption)}</text>`,
  );
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

function colourMap(panels: readonly ChartPanel[]): Map<string, string> {
  const colours = new Map<string, string>();
  for (const panel of panels) {
    for (const series of panel.series) {
      if (!colours.has(series.name)) colours.set(series.name, PALETTE[colours.size % PALETTE.length] ?? '#000000');
    }
  }
  return colours;
}

interface LegendItem {
  readonly text: string;
  readonly colour: string;
  readonly drawn: boolean;
}

function renderPanel(panel: ChartPanel, index: number, top: number, colours: Map<string, string>): string {
  const drawn = panel.series.filter((s) => s.unavailable === undefined);
  const quota = Number.isFinite(panel.quotaPerSecond) && panel.quotaPerSecond > 0 ? panel.quotaPerSecond : 0;
  const peak = drawn.reduce((m, s) => Math.max(m, peakOf(s.callsPerSecond)), 0);
  const yMax = panel.yMax !== undefined && panel.yMax > 0 ? panel.yMax : autoYMax(peak, quota);
  const yStep = niceStep(yMax / 5);
  const outageEnd = panel.outage ? panel.outage.atSeconds + panel.outage.forSeconds : 0;
  const xMax = drawn.reduce((m, s) => Math.max(m, s.callsPerSecond.length), Math.max(1, outageEnd));
  const xStep = niceStep(xMax / 10);

  const legend: LegendItem[] = panel.series.map((s) => {
    const sPeak = peakOf(s.callsPerSecond);
    let text = s.name;
    if (s.unavailable !== undefined) text += ' (unavailable)';
    else if (sPeak > yMax) text += ` (peak ${formatNumber(sPeak)}/s)`;
    return { text, colour: colours.get(s.name) ?? '#000000', drawn: s.unavailable === undefined };
  });
  const legendRows = layoutLegend(legend);

  const plotLeft = MARGIN_LEFT;
  const plotRight = CHART_WIDTH - MARGIN_RIGHT;
  const plotTop = top + TITLE_BAND + legendRows.length * LEGEND_ROW + 14;
  const plotBottom = top + PANEL_HEIGHT - X_AXIS_BAND - PANEL_GAP;
  const plotWidth = plotRight - plotLeft;
  const plotHeight = plotBottom - plotTop;
  const x = (seconds: number): number => round(plotLeft + (seconds / xMax) * plotWidth);
  const y = (rate: number): number => round(plotBottom - (rate / yMax) * plotHeight);
  const clipId = `plot-area-${index}`;

  const out: string[] = [`<g class="panel">`];
  out.push(
    `<text x="${plotLeft}" y="${top + 24}" font-size="17" font-weight="600" fill="#111111">` +
      `${escapeXml(panel.title)}</text>`,
  );
  out.push(
    `<text x="${plotRight}" y="${top + 24}" text-anchor="end" font-size="12" fill="#555555">` +
      `job calls reaching the API, per second</text>`,
  );

  // Legend rows under the title.
  legendRows.forEach((row, r) => {
    const rowY = top + TITLE_BAND + r * LEGEND_ROW + 12;
    for (const item of row) {
      const dash = item.item.drawn ? '' : ' stroke-dasharray="2 3"';
      const opacity = item.item.drawn ? '' : ' opacity="0.5"';
      out.push(
        `<line x1="${item.x}" y1="${rowY - 4}" x2="${item.x + 22}" y2="${rowY - 4}" stroke="${item.item.colour}" ` +
          `stroke-width="3"${dash}${opacity}/>`,
      );
      out.push(
        `<text x="${item.x + 28}" y="${rowY}" font-size="12" fill="${item.item.drawn ? '#222222' : '#777777'}">` +
          `${escapeXml(item.item.text)}</text>`,
      );
    }
  });

  out.push(
    `<clipPath id="${clipId}"><rect x="${plotLeft}" y="${plotTop}" width="${plotWidth}" height="${plotHeight}"/></clipPath>`,
  );

  // Outage, under everything else.
  if (panel.outage && panel.outage.forSeconds > 0) {
    const x1 = x(panel.outage.atSeconds);
    const x2 = x(outageEnd);
    out.push(
      `<rect class="outage" x="${x1}" y="${plotTop}" width="${round(x2 - x1)}" height="${plotHeight}" ` +
        `fill="#d62728" fill-opacity="0.12"/>`,
    );
    out.push(
      `<text x="${round((x1 + x2) / 2)}" y="${plotTop + 14}" text-anchor="middle" font-size="11" fill="#a01c1c">` +
        `outage ${formatNumber(panel.outage.forSeconds)} s</text>`,
    );
  }

  // Grid and y ticks.
  for (let k = 0; k * yStep <= yMax * (1 + 1e-9); k++) {
    const v = k * yStep;
    const tickY = y(v);
    out.push(
      `<line class="grid" data-value="${formatNumber(v)}" x1="${plotLeft}" y1="${tickY}" x2="${plotRight}" ` +
        `y2="${tickY}" stroke="#e3e3e3" stroke-width="1"/>`,
    );
    out.push(
      `<text class="y-tick" x="${plotLeft - 8}" y="${round(tickY + 4)}" text-anchor="end" font-size="11" ` +
        `fill="#444444">${formatNumber(v)}</text>`,
    );
  }
  // x ticks.
  for (let k = 0; k * xStep <= xMax * (1 + 1e-9); k++) {
    const s = k * xStep;
    const tickX = x(s);
    out.push(`<line x1="${tickX}" y1="${plotBottom}" x2="${tickX}" y2="${plotBottom + 5}" stroke="#444444"/>`);
    out.push(
      `<text class="x-tick" x="${tickX}" y="${plotBottom + 18}" text-anchor="middle" font-size="11" fill="#444444">` +
        `${formatNumber(s)}</text>`,
    );
  }
  // Axes and their labels.
  out.push(
    `<path d="M${plotLeft},${plotTop} V${plotBottom} H${plotRight}" fill="none" stroke="#444444" stroke-width="1"/>`,
  );
  out.push(
    `<text x="${round((plotLeft + plotRight) / 2)}" y="${plotBottom + 36}" text-anchor="middle" font-size="12" ` +
      `fill="#333333">seconds since start</text>`,
  );
  const yLabelY = round((plotTop + plotBottom) / 2);
  out.push(
    `<text x="18" y="${yLabelY}" text-anchor="middle" font-size="12" fill="#333333" ` +
      `transform="rotate(-90 18 ${yLabelY})">calls/s</text>`,
  );

  // One line per available strategy, in the given order (the last drawn is on top).
  out.push(`<g clip-path="url(#${clipId})" fill="none" stroke-width="1.8" stroke-linejoin="round">`);
  for (const series of drawn) {
    const points = series.callsPerSecond
      .map((v, i) => (Number.isFinite(v) ? `${x(i + 0.5)},${y(v)}` : undefined))
      .filter((p): p is string => p !== undefined)
      .join(' ');
    out.push(
      `<polyline data-series="${escapeXml(series.name)}" points="${points}" stroke="${colours.get(series.name)}"/>`,
    );
  }
  out.push('</g>');

  // The quota line, over the data so that a strategy filling the quota does not hide it.
  if (quota > 0 && quota <= yMax) {
    const quotaY = y(quota);
    const text = panel.quotaLabel ?? `quota ${formatNumber(quota)}/s`;
    out.push(
      `<line class="quota" x1="${plotLeft}" y1="${quotaY}" x2="${plotRight}" y2="${quotaY}" stroke="#111111" ` +
        `stroke-width="1.5" stroke-dasharray="7 5"/>`,
    );
    out.push(
      `<text x="${plotRight - 4}" y="${round(quotaY - 5)}" text-anchor="end" font-size="11" font-weight="600" ` +
        `fill="#111111" stroke="#ffffff" stroke-width="3" paint-order="stroke">${escapeXml(text)}</text>`,
    );
  }
  out.push('</g>');
  return out.join('\n');
}

interface PlacedLegendItem {
  readonly x: number;
  readonly item: LegendItem;
}

function layoutLegend(items: readonly LegendItem[]): PlacedLegendItem[][] {
  const rows: PlacedLegendItem[][] = [];
  let row: PlacedLegendItem[] = [];
  let cursor = MARGIN_LEFT;
  for (const item of items) {
    const width = 28 + item.text.length * CHAR_WIDTH + 18;
    if (row.length > 0 && cursor + width > CHART_WIDTH - MARGIN_RIGHT) {
      rows.push(row);
      row = [];
      cursor = MARGIN_LEFT;
    }
    row.push({ x: round(cursor), item });
    cursor += width;
  }
  if (row.length > 0) rows.push(row);
  return rows;
}

/** The largest finite value, or 0 (a loop: spreading a long run into Math.max could overflow the stack). */
function peakOf(values: readonly number[]): number {
  let peak = 0;
  for (const v of values) if (Number.isFinite(v) && v > peak) peak = v;
  return peak;
}

function autoYMax(peak: number, quota: number): number {
  let top = Math.max(peak, quota) * 1.12;
  if (quota > 0 && peak > CLIP_FACTOR * quota) top = CLIP_FACTOR * quota;
  if (!(top > 0)) top = 1;
  const step = niceStep(top / 5);
  return Math.ceil(top / step - 1e-9) * step;
}

/** The smallest of 1, 2, 2.5, 5 × 10^k that is at least `raw`. */
function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

function round(v: number): number {
  return Math.round(v * 100) / 100;
}

function formatNumber(v: number): string {
  return String(Number(v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)));
}
