// Human formatting for the CLI's tables.
const KiB = 1024;
const MiB = KiB * 1024;
const GiB = MiB * 1024;

/** Bytes in the largest binary unit that keeps the number >= 1, two decimals. */
export function formatBytes(bytes: number): string {
  if (bytes >= GiB) return `${(bytes / GiB).toFixed(2)} GiB`;
  if (bytes >= MiB) return `${(bytes / MiB).toFixed(2)} MiB`;
  if (bytes >= KiB) return `${(bytes / KiB).toFixed(2)} KiB`;
  return `${bytes} B`;
}

export function formatMiB(bytes: number): string {
  return `${(bytes / MiB).toFixed(2)} MiB`;
}

export function percent(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : 'n/a';
}

/** Two aligned columns: labels padded to the longest. */
export function table(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = rows.reduce((w, [label]) => Math.max(w, label.length), 0);
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n') + '\n';
}

/**
 * The streamer's own warning (O_DIRECT refused and reads buffered, `--cache-mb auto` fell back to
 * no cache), as one `bmoe: warning: …` line on stderr; nothing when it has none.
 */
export function warnStream(info: { stream: { warning: string } | null }): void {
  if (info.stream?.warning) process.stderr.write(`bmoe: warning: ${info.stream.warning}\n`);
}
