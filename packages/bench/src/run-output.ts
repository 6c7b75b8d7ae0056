// What the bench reads back from a row's process: the `done` event of `bmoe run --json` and, for a
// llama.cpp peer row, its `eval time` line. Pure; shared by matrix, targets and calibrate.
import { runSummarySchema, type RunSummary } from '@bmoe/engine';

export interface DoneEvent {
  summary: RunSummary;
  load: { readBytes: number | null };
}

/** The last valid `{"type":"done",…}` line of `bmoe run --json`'s stdout, or null. */
export function parseDoneEvent(stdout: string): DoneEvent | null {
  const lines = stdout.trim().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i];
    if (!line?.startsWith('{')) continue;
    try {
      const ev = JSON.parse(line) as { type?: string; summary?: unknown; load?: { readBytes: number | null } };
      if (ev.type !== 'done') continue;
      const s = runSummarySchema.safeParse(ev.summary);
      if (s.success) return { summary: s.data, load: { readBytes: ev.load?.readBytes ?? null } };
    } catch {
      // a text line that starts with "{": not ours
    }
  }
  return null;
}

/** llama.cpp's `eval time = X ms / N runs` line → tokens per second. */
export function parsePeerRate(stderr: string): number | null {
  const m = /eval time =\s+([\d.]+) ms \/\s+(\d+) runs/.exec(stderr);
  return m ? (Number(m[2]) * 1000) / Number(m[1]) : null;
}

/**
 * When each token event of `bmoe run --json` arrived, fed the process's stdout as it is read
 * (`push(chunk, now)`): what a program consuming the run sees, as a server's client sees its
 * stream's chunks. Each line is read as such a program reads it (parsed as JSON, its text kept),
 * as the server's client parses each chunk: the two consumers do alike. A line split across two
 * reads counts when its end arrives; a line that is not JSON is no event.
 */
export class TokenLineTimes {
  readonly times: number[] = [];
  /** The tokens' text, in order. */
  text = '';
  private partial = '';

  push(chunk: string, now: number): void {
    const text = this.partial + chunk;
    const end = text.lastIndexOf('\n');
    this.partial = text.slice(end + 1);
    if (end < 0) return;
    for (const line of text.slice(0, end).split('\n')) {
      let ev: { type?: unknown; text?: unknown };
      try {
        ev = JSON.parse(line) as { type?: unknown; text?: unknown };
      } catch {
        continue;
      }
      if (ev.type !== 'token') continue;
      this.times.push(now);
      if (typeof ev.text === 'string') this.text += ev.text;
    }
  }
}
