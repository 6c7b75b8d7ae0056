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
