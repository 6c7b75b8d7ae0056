// The live status line under a streaming reply (terminals only): tok/s, flash MiB/token, cache
// hit, from the metrics schema's summary of the reply so far. It lives on the terminal's last row,
// kept out of the text's way by a scroll region (DECSTBM) over the rows above it, as apt's
// progress bar does: the reply scrolls inside the region, the status row stays put.
import type { TokenMetrics } from '@bmoe/engine';
import { formatNumber, summarize } from '@bmoe/engine/metrics';

const ESC = '\x1b';
const SAVE = `${ESC}7`;
const RESTORE = `${ESC}8`;
const CLEAR_LINE = `${ESC}[2K`;
const region = (bottom: number): string => `${ESC}[1;${bottom}r`;
const RESET_REGION = `${ESC}[r`;
const moveTo = (row: number): string => `${ESC}[${row};1H`;
const UP = `${ESC}[1A`;

/** The status text of a reply so far: tokens, tok/s and, when streaming, flash MiB/token and cache hit. */
export function statusText(metrics: readonly TokenMetrics[], streaming: boolean): string {
  const s = summarize(metrics);
  const parts = [`${s.tokens} token${s.tokens === 1 ? '' : 's'}`, `${formatNumber(s.decodes > 0 ? s.tokensPerSecond : null, 1)} tok/s`];
  if (streaming) {
    parts.push(`flash ${formatNumber(s.decodes > 0 ? s.mibPerToken : null, 2)} MiB/token`);
    parts.push(`cache hit ${formatNumber(s.hitPercent, 1)} %`);
  }
  return parts.join(' · ');
}

/** The terminal the status line draws on (process.stdout when it is a TTY). */
export interface StatusTerminal {
  rows: number;
  columns: number;
  write(text: string): unknown;
}

export class StatusLine {
  private rows = 0;
  private lastDraw = 0;

  /**
   * @param term where to draw
   * @param style how the status text looks (e.g. dimmed)
   * @param intervalMs the least time between two redraws
   */
  constructor(
    private readonly term: StatusTerminal,
    private readonly style: (s: string) => string = (s) => s,
    private readonly intervalMs = 100,
  ) {}

  /** Reserves the last row; call it at the start of a line (a new line first, then back up, so the cursor is never on that row). */
  start(): void {
    this.rows = this.term.rows;
    if (this.rows < 3) return;
    this.term.write(`\n${SAVE}${region(this.rows - 1)}${RESTORE}${UP}`);
    this.lastDraw = 0;
  }

  /** Shows what `render` says (called at most every intervalMs). */
  update(render: () => string): void {
    if (this.rows < 3) return;
    const now = performance.now();
    if (now - this.lastDraw < this.intervalMs) return;
    this.lastDraw = now;
    const width = Math.max(1, this.term.columns - 1);
    this.term.write(`${SAVE}${moveTo(this.rows)}${CLEAR_LINE}${this.style(render().slice(0, width))}${RESTORE}`);
  }

  /**
   * The terminal changed size: terminals reset the scroll region then, and a row number of the old
   * size means nothing in the new one, so the status stops for the rest of this reply (and the
   * region is reset for terminals that keep it).
   */
  resize(): void {
    if (this.rows < 3) return;
    this.term.write(`${SAVE}${RESET_REGION}${RESTORE}`);
    this.rows = 0;
  }

  /** Clears the status row and gives the whole screen back to the text. */
  stop(): void {
    if (this.rows < 3) return;
    this.term.write(`${SAVE}${moveTo(this.rows)}${CLEAR_LINE}${RESET_REGION}${RESTORE}`);
    this.rows = 0;
  }
}
