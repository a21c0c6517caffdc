/** The width of a {@link progressBar} unless told: characters between its brackets. */
const BAR_WIDTH = 30;

/**
 * A text progress bar such as `[#########.....................]`: `done` of `total` filled. A total of 0 draws an
 * empty bar; `done` beyond `total` a full one.
 */
export function progressBar(done: number, total: number, width = BAR_WIDTH): string {
  const filled = total <= 0 ? 0 : Math.max(0, Math.min(width, Math.round((done / total) * width)));
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

/**
 * Where a CLI draws a progress line: redrawn in place on a terminal (`\r`, then erase to the end of the line), else
 * one line at most every `everyMs`, so that a log of the output stays short.
 */
export class ProgressLine {
  private lastPrinted = Number.NEGATIVE_INFINITY;
  private drawn = false;

  constructor(
    private readonly stream: { write(text: string): unknown; readonly isTTY?: boolean },
    private readonly everyMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Shows `line`, now (`force`) or as the stream allows. */
  update(line: string, force = false): void {
    if (this.stream.isTTY === true) {
      this.stream.write(`\r${line}\x1b[K`);
      this.drawn = true;
      return;
    }
    const now = this.now();
    if (!force && now - this.lastPrinted < this.everyMs) return;
    this.lastPrinted = now;
    this.stream.write(`${line}\n`);
  }

  /** Ends the line on a terminal, so that what follows starts on a line of its own. */
  done(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}
