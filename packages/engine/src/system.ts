// System readings the native side does not take. MemAvailable is system-wide (not per process),
// so JS reads it after each token: /proc/meminfo is a ~1.5 KB in-memory file, a few µs to read.
import { readFileSync } from 'node:fs';

const MEMINFO = '/proc/meminfo';

/** MemAvailable in bytes, or null where /proc/meminfo is unreadable (macOS, some sandboxes). */
export function readMemAvailableBytes(meminfoPath: string = MEMINFO): number | null {
  let text: string;
  try {
    text = readFileSync(meminfoPath, 'latin1');
  } catch {
    return null;
  }
  return parseMemAvailable(text);
}

/** Parses the `MemAvailable:  123456 kB` line (the kernel always writes kB). */
export function parseMemAvailable(meminfo: string): number | null {
  const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(meminfo);
  return m?.[1] ? Number(m[1]) * 1024 : null;
}

/**
 * Bytes this process caused to be fetched from storage (`read_bytes` of /proc/self/io: page-cache
 * misses, mmap faults and O_DIRECT reads alike), or null where unreadable.
 */
export function readProcessReadBytes(ioPath: string = '/proc/self/io'): number | null {
  try {
    const m = /^read_bytes:\s+(\d+)/m.exec(readFileSync(ioPath, 'latin1'));
    return m?.[1] ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
