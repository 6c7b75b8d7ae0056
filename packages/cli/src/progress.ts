// Progress for long writes on stderr: a live bar on a terminal, a few plain lines otherwise
// (logs and CI should not fill up with carriage-return redraws).
import cliProgress from 'cli-progress';

const MiB = 1024 * 1024;

export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

export function createProgress(label: string): Progress {
  return process.stderr.isTTY ? new BarProgress(label) : new LineProgress(label);
}

class BarProgress implements Progress {
  private readonly bar = new cliProgress.SingleBar(
    {
      format: `${'{label}'} [{bar}] {percentage}% | {doneMiB}/{totalMiB} MiB | {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  private started = false;

  constructor(private readonly label: string) {}

  update(done: number, total: number): void {
    const payload = { label: this.label, doneMiB: (done / MiB).toFixed(0), totalMiB: (total / MiB).toFixed(0) };
    if (!this.started) {
      this.bar.start(total, done, payload);
      this.started = true;
    } else {
      this.bar.update(done, payload);
    }
  }

  stop(): void {
    if (this.started) this.bar.stop();
  }
}

class LineProgress implements Progress {
  private nextPercent = 0;

  constructor(private readonly label: string) {}

  update(done: number, total: number): void {
    const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
    if (pct < this.nextPercent) return;
    process.stderr.write(`${this.label}: ${pct}% (${(done / MiB).toFixed(0)} of ${(total / MiB).toFixed(0)} MiB)\n`);
    this.nextPercent = Math.min(100, Math.floor(pct / 25) * 25 + 25);
    if (pct >= 100) this.nextPercent = Number.POSITIVE_INFINITY;
  }

  stop(): void {}
}
