// Names read from a file, quoted for an error message: escaped (so a message stays one line) and
// bounded (so a hostile 64 KiB key does not become a 64 KiB message).

/** Quote a name read from the file for an error message: escaped, bounded. */
export function quoteName(s: string): string {
  return JSON.stringify(s.length > 96 ? `${s.slice(0, 96)}…` : s);
}
